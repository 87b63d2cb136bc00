package io.jrdma.verbs;

/**
 * Marker of a provider's own typed options, carried by {@link DeviceOptions} next to the neutral ones,
 * as rdma-core keeps device-specific knobs in provider headers ({@code mlx5dv.h}) instead of {@code verbs.h}.
 * A provider defines a record implementing this interface; an application that wants to tune that
 * provider adds one with {@link DeviceOptions#with(ProviderOptions)}, and the provider reads it back with
 * {@link DeviceOptions#provider(Class)}. Other providers ignore options that are not theirs.
 *
 * <pre>{@code
 * // in a provider (say, a shared-memory one):
 * public record ShmOptions(long ringBytes) implements ProviderOptions { }
 *
 * // in an application:
 * DeviceOptions opts = DeviceOptions.defaults().with(new ShmOptions(1 << 20));
 *
 * // in the provider's open(DeviceOptions):
 * long ring = opts.provider(ShmOptions.class).map(ShmOptions::ringBytes).orElse(64L << 10);
 * }</pre>
 *
 * Implementations should be immutable (records are): options are shared by every context opened with them.
 */
public interface ProviderOptions {
}

package io.jrdma.verbs;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How a device context runs: threading mode, idle strategy, and typed options for particular providers
 * ({@link ProviderOptions}). Only what every provider understands is here; a provider's own settings
 * (jrdma's soft-RoCE UDP port, the addresses it listens on, its IPv4 ICRC check) are in its options record,
 * added with {@link #with(ProviderOptions)} (for jrdma's software providers: {@code io.jrdma.soft}).
 * Immutable; make variants with the {@code with*} methods.
 *
 * @param threadingMode   who drives the engine
 * @param idleStrategy    what a dedicated engine thread does when idle
 * @param providerOptions typed options of particular providers, at most one of each class; a provider reads its
 *                        own with {@link #provider(Class)} and ignores the others
 */
public record DeviceOptions(ThreadingMode threadingMode, IdleStrategy idleStrategy, List<ProviderOptions> providerOptions) {
    /** The RoCEv2 UDP destination port (IANA), the default port of an address vector or handle. */
    public static final int ROCE_V2_PORT = 4791;

    /**
     * Validates and makes the options; the list is copied.
     *
     * @throws RdmaException EINVAL if a mode is null or two provider options are of one class
     */
    public DeviceOptions {
        if (threadingMode == null || idleStrategy == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "a threading mode and an idle strategy are needed");
        }
        providerOptions = List.copyOf(providerOptions);
        for (int i = 0; i < providerOptions.size(); i++) {
            for (int j = 0; j < i; j++) {
                if (providerOptions.get(i).getClass() == providerOptions.get(j).getClass()) {
                    throw new RdmaException(RdmaException.Errno.EINVAL, "two provider options of "
                            + providerOptions.get(i).getClass().getName() + ": use with(...), which replaces the old one");
                }
            }
        }
    }

    /**
     * {@return these options with {@code options} added, replacing provider options of the same class}
     *
     * @param options a provider's typed options
     */
    public DeviceOptions with(ProviderOptions options) {
        java.util.Objects.requireNonNull(options, "options");
        List<ProviderOptions> list = new ArrayList<>(providerOptions.size() + 1);
        for (ProviderOptions p : providerOptions) {
            if (p.getClass() != options.getClass()) {
                list.add(p);
            }
        }
        list.add(options);
        return new DeviceOptions(threadingMode, idleStrategy, list);
    }

    /**
     * {@return the provider options of class {@code type}, if these options carry one}
     *
     * @param <T>  the options' type
     * @param type the provider's options class
     */
    public <T extends ProviderOptions> Optional<T> provider(Class<T> type) {
        for (ProviderOptions p : providerOptions) {
            if (type.isInstance(p)) {
                return Optional.of(type.cast(p));
            }
        }
        return Optional.empty();
    }

    /** {@return the defaults: a dedicated engine thread with backoff idling, no provider options} */
    public static DeviceOptions defaults() {
        return new DeviceOptions(ThreadingMode.DEDICATED, IdleStrategy.BACKOFF, List.of());
    }

    /**
     * {@return these options with another threading mode}
     *
     * @param mode DEDICATED (an engine thread) or INVOKER (the caller's poll and progress calls)
     */
    public DeviceOptions withThreadingMode(ThreadingMode mode) {
        return new DeviceOptions(mode, idleStrategy, providerOptions);
    }

    /**
     * {@return these options with another idle strategy for the dedicated engine thread}
     *
     * @param idle SPIN, YIELD, BACKOFF or PARK
     */
    public DeviceOptions withIdleStrategy(IdleStrategy idle) {
        return new DeviceOptions(threadingMode, idle, providerOptions);
    }
}

package io.jrdma.soft;

import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.ProviderOptions;

import java.net.InetAddress;
import java.util.List;

/**
 * Options of jrdma's soft-iWARP provider ({@code siw}, RDMAP/DDP/MPA over TCP), carried by
 * {@link DeviceOptions#with(ProviderOptions)}. Without them a soft-iWARP context uses {@link #defaults()}.
 * (The MPA CRC and receive-buffer choices are system properties, docs/guide/properties.md.)
 *
 * @param addresses when not empty, the context's GID table is exactly these local addresses (in this order)
 *                  instead of all of the interface's
 */
public record SoftIwarpOptions(List<InetAddress> addresses) implements ProviderOptions {
    /** Makes the options; the address list is copied. */
    public SoftIwarpOptions {
        addresses = List.copyOf(addresses);
    }

    /** {@return the defaults: every address of the interface} */
    public static SoftIwarpOptions defaults() {
        return new SoftIwarpOptions(List.of());
    }

    /**
     * {@return the soft-iWARP options {@code options} carry, or the defaults}
     *
     * @param options a context's options
     */
    public static SoftIwarpOptions of(DeviceOptions options) {
        return options.provider(SoftIwarpOptions.class).orElseGet(SoftIwarpOptions::defaults);
    }

    /**
     * {@return these options with exactly these local addresses}
     *
     * @param list the addresses, in GID table order; empty for all of the interface's
     */
    public SoftIwarpOptions withAddresses(List<InetAddress> list) {
        return new SoftIwarpOptions(list);
    }
}

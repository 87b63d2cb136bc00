package io.jrdma.verbs;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How a device context runs: threading mode, idle strategy, UDP port and the addresses it listens on,
 * and typed options for particular providers ({@link ProviderOptions}).
 * Immutable; make variants with the {@code with*} methods.
 *
 * <p>{@code udpPort}, {@code portFallback}, {@code addresses} and {@code anyIpv4Id} are settings of the
 * soft-RoCE provider that predate {@link ProviderOptions}; they stay here for now and will move into that
 * provider's own options record (read with {@link #provider(Class)}), leaving the neutral part: threading
 * mode, idle strategy and the provider options.
 *
 * @param threadingMode   who drives the engine
 * @param idleStrategy    what a dedicated engine thread does when idle
 * @param udpPort         soft-RoCE (to move into that provider's {@link ProviderOptions}): the UDP port to listen on (4791, the RoCEv2 port, by default; 0 = any)
 * @param portFallback    soft-RoCE (to move likewise): when {@code udpPort} is taken on this host, take a free one instead of failing
 * @param addresses       soft-RoCE (to move likewise): when not empty, the context listens on exactly these local addresses (its GID table, in
 *                        this order) instead of all of the interface's; they need not be configured on the
 *                        interface when the kernel accepts them, e.g. any 127.0.0.x on the loopback device, so
 *                        several contexts can each use port 4791 on one host
 * @param anyIpv4Id       soft-RoCE (to move likewise): accept IPv4 packets whose ICRC was computed over a non-zero IP Identification (Linux
 *                        kernels and RoCE NICs send such IDs, which user space cannot see: jrdma solves for the
 *                        ID). This weakens the IPv4 ICRC check from 32 to 16 bits; jrdma peers send ID 0 and need
 *                        it off (the default). IPv6 is unaffected. See docs/wire.md
 * @param providerOptions typed options of particular providers, at most one of each class; a provider reads its
 *                        own with {@link #provider(Class)} and ignores the others
 */
public record DeviceOptions(ThreadingMode threadingMode, IdleStrategy idleStrategy, int udpPort, boolean portFallback,
                            List<InetAddress> addresses, boolean anyIpv4Id, List<ProviderOptions> providerOptions) {
    /** The RoCEv2 UDP destination port. */
    public static final int ROCE_V2_PORT = 4791;

    /**
     * Validates and makes the options; the address list is copied.
     *
     * @throws RdmaException EINVAL if {@code udpPort} is outside 0..65535, or two provider options are of one class
     */
    public DeviceOptions {
        addresses = List.copyOf(addresses);
        providerOptions = List.copyOf(providerOptions);
        for (int i = 0; i < providerOptions.size(); i++) {
            for (int j = 0; j < i; j++) {
                if (providerOptions.get(i).getClass() == providerOptions.get(j).getClass()) {
                    throw new RdmaException(RdmaException.Errno.EINVAL, "two provider options of "
                            + providerOptions.get(i).getClass().getName() + ": use with(...), which replaces the old one");
                }
            }
        }
        if (udpPort < 0 || udpPort > 65535) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "UDP port must be 0..65535, not " + udpPort);
        }
    }

    /**
     * Options without provider options (the form before {@link ProviderOptions} existed).
     *
     * @param threadingMode who drives the engine
     * @param idleStrategy  what a dedicated engine thread does when idle
     * @param udpPort       soft-RoCE: the UDP port to listen on
     * @param portFallback  soft-RoCE: take a free port when {@code udpPort} is taken
     * @param addresses     soft-RoCE: the local addresses to listen on, empty for all of the interface's
     * @param anyIpv4Id     soft-RoCE: accept ICRCs over a non-zero IPv4 Identification
     * @throws RdmaException EINVAL if {@code udpPort} is outside 0..65535
     */
    public DeviceOptions(ThreadingMode threadingMode, IdleStrategy idleStrategy, int udpPort, boolean portFallback,
                         List<InetAddress> addresses, boolean anyIpv4Id) {
        this(threadingMode, idleStrategy, udpPort, portFallback, addresses, anyIpv4Id, List.of());
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
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, addresses, anyIpv4Id, list);
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

    /**
     * {@return the defaults: a dedicated engine thread with backoff idling, UDP port 4791 or a free
     * one when it is taken, every address of the interface, strict IPv4 ICRC}
     */
    public static DeviceOptions defaults() {
        return new DeviceOptions(ThreadingMode.DEDICATED, IdleStrategy.BACKOFF, ROCE_V2_PORT, true, List.of(), false,
                List.of());
    }

    /**
     * {@return these options with another threading mode}
     *
     * @param mode DEDICATED (an engine thread) or INVOKER (the caller's poll and progress calls)
     */
    public DeviceOptions withThreadingMode(ThreadingMode mode) {
        return new DeviceOptions(mode, idleStrategy, udpPort, portFallback, addresses, anyIpv4Id, providerOptions);
    }

    /**
     * {@return these options with another idle strategy for the dedicated engine thread}
     *
     * @param idle SPIN, YIELD, BACKOFF or PARK
     */
    public DeviceOptions withIdleStrategy(IdleStrategy idle) {
        return new DeviceOptions(threadingMode, idle, udpPort, portFallback, addresses, anyIpv4Id, providerOptions);
    }

    /**
     * {@return these options with another UDP port (a soft-RoCE setting, to move into that provider's
     * {@link ProviderOptions})}
     *
     * @param port     0..65535 (0: any free port)
     * @param fallback take a free port when {@code port} is in use, instead of failing the open
     * @throws RdmaException EINVAL if {@code port} is outside 0..65535
     */
    public DeviceOptions withUdpPort(int port, boolean fallback) {
        return new DeviceOptions(threadingMode, idleStrategy, port, fallback, addresses, anyIpv4Id, providerOptions);
    }

    /**
     * {@return these options listening on exactly these local addresses (a soft-RoCE setting, to move into
     * that provider's {@link ProviderOptions})}
     *
     * @param list the addresses, in GID table order; empty for all of the interface's
     */
    public DeviceOptions withAddresses(List<InetAddress> list) {
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, list, anyIpv4Id, providerOptions);
    }

    /**
     * {@return these options with the IPv4 Identification check relaxed or strict (a soft-RoCE setting, to
     * move into that provider's {@link ProviderOptions})}
     *
     * @param any true to accept ICRCs over a non-zero IPv4 Identification (Linux and NIC peers over IPv4)
     */
    public DeviceOptions withAnyIpv4Id(boolean any) {
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, addresses, any, providerOptions);
    }
}

package io.jrdma.verbs;

import java.net.InetAddress;
import java.util.List;

/**
 * How a device context runs: threading mode, idle strategy, UDP port and the addresses it listens on.
 * Immutable; make variants with the {@code with*} methods.
 *
 * @param threadingMode   who drives the engine
 * @param idleStrategy    what a dedicated engine thread does when idle
 * @param udpPort         the UDP port to listen on (4791, the RoCEv2 port, by default; 0 = any)
 * @param portFallback    when {@code udpPort} is taken on this host, take a free one instead of failing
 * @param addresses       when not empty, the context listens on exactly these local addresses (its GID table, in
 *                        this order) instead of all of the interface's; they need not be configured on the
 *                        interface when the kernel accepts them, e.g. any 127.0.0.x on the loopback device, so
 *                        several contexts can each use port 4791 on one host
 * @param anyIpv4Id       accept IPv4 packets whose ICRC was computed over a non-zero IP Identification (Linux
 *                        kernels and RoCE NICs send such IDs, which user space cannot see: jrdma solves for the
 *                        ID). This weakens the IPv4 ICRC check from 32 to 16 bits; jrdma peers send ID 0 and need
 *                        it off (the default). IPv6 is unaffected. See docs/wire.md
 */
public record DeviceOptions(ThreadingMode threadingMode, IdleStrategy idleStrategy, int udpPort, boolean portFallback,
                            List<InetAddress> addresses, boolean anyIpv4Id) {
    /** The RoCEv2 UDP destination port. */
    public static final int ROCE_V2_PORT = 4791;

    /**
     * Validates and makes the options; the address list is copied.
     *
     * @throws RdmaException EINVAL if {@code udpPort} is outside 0..65535
     */
    public DeviceOptions {
        addresses = List.copyOf(addresses);
        if (udpPort < 0 || udpPort > 65535) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "UDP port must be 0..65535, not " + udpPort);
        }
    }

    /**
     * {@return the defaults: a dedicated engine thread with backoff idling, UDP port 4791 or a free
     * one when it is taken, every address of the interface, strict IPv4 ICRC}
     */
    public static DeviceOptions defaults() {
        return new DeviceOptions(ThreadingMode.DEDICATED, IdleStrategy.BACKOFF, ROCE_V2_PORT, true, List.of(), false);
    }

    /**
     * {@return these options with another threading mode}
     *
     * @param mode DEDICATED (an engine thread) or INVOKER (the caller's poll and progress calls)
     */
    public DeviceOptions withThreadingMode(ThreadingMode mode) {
        return new DeviceOptions(mode, idleStrategy, udpPort, portFallback, addresses, anyIpv4Id);
    }

    /**
     * {@return these options with another idle strategy for the dedicated engine thread}
     *
     * @param idle SPIN, YIELD, BACKOFF or PARK
     */
    public DeviceOptions withIdleStrategy(IdleStrategy idle) {
        return new DeviceOptions(threadingMode, idle, udpPort, portFallback, addresses, anyIpv4Id);
    }

    /**
     * {@return these options with another UDP port}
     *
     * @param port     0..65535 (0: any free port)
     * @param fallback take a free port when {@code port} is in use, instead of failing the open
     * @throws RdmaException EINVAL if {@code port} is outside 0..65535
     */
    public DeviceOptions withUdpPort(int port, boolean fallback) {
        return new DeviceOptions(threadingMode, idleStrategy, port, fallback, addresses, anyIpv4Id);
    }

    /**
     * {@return these options listening on exactly these local addresses}
     *
     * @param list the addresses, in GID table order; empty for all of the interface's
     */
    public DeviceOptions withAddresses(List<InetAddress> list) {
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, list, anyIpv4Id);
    }

    /**
     * {@return these options with the IPv4 Identification check relaxed or strict}
     *
     * @param any true to accept ICRCs over a non-zero IPv4 Identification (Linux and NIC peers over IPv4)
     */
    public DeviceOptions withAnyIpv4Id(boolean any) {
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, addresses, any);
    }
}

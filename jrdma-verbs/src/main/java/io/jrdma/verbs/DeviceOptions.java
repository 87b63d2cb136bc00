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

    public DeviceOptions {
        addresses = List.copyOf(addresses);
        if (udpPort < 0 || udpPort > 65535) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "UDP port must be 0..65535, not " + udpPort);
        }
    }

    /** Dedicated engine thread with backoff idling, port 4791 with fallback. */
    public static DeviceOptions defaults() {
        return new DeviceOptions(ThreadingMode.DEDICATED, IdleStrategy.BACKOFF, ROCE_V2_PORT, true, List.of(), false);
    }

    public DeviceOptions withThreadingMode(ThreadingMode mode) {
        return new DeviceOptions(mode, idleStrategy, udpPort, portFallback, addresses, anyIpv4Id);
    }

    public DeviceOptions withIdleStrategy(IdleStrategy idle) {
        return new DeviceOptions(threadingMode, idle, udpPort, portFallback, addresses, anyIpv4Id);
    }

    public DeviceOptions withUdpPort(int port, boolean fallback) {
        return new DeviceOptions(threadingMode, idleStrategy, port, fallback, addresses, anyIpv4Id);
    }

    public DeviceOptions withAddresses(List<InetAddress> list) {
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, list, anyIpv4Id);
    }

    public DeviceOptions withAnyIpv4Id(boolean any) {
        return new DeviceOptions(threadingMode, idleStrategy, udpPort, portFallback, addresses, any);
    }
}

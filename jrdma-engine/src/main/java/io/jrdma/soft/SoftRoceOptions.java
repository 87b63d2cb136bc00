package io.jrdma.soft;

import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.ProviderOptions;
import io.jrdma.verbs.RdmaException;

import java.net.InetAddress;
import java.util.List;

/**
 * Options of jrdma's soft-RoCE provider ({@code rxe}, RoCEv2 over UDP), carried by
 * {@link DeviceOptions#with(ProviderOptions)}:
 * <pre>{@code
 * DeviceContext ctx = device.open(DeviceOptions.defaults()
 *         .with(SoftRoceOptions.defaults().withUdpPort(0, true).withAnyIpv4Id(true)));
 * }</pre>
 * Without them a soft-RoCE context uses {@link #defaults()}.
 *
 * @param udpPort      the UDP port to listen on (4791, the RoCEv2 port, by default; 0 = any free one)
 * @param portFallback when {@code udpPort} is taken on this host, take a free one instead of failing the open
 * @param addresses    when not empty, the context listens on exactly these local addresses (its GID table, in
 *                     this order) instead of all of the interface's; they need not be configured on the
 *                     interface when the kernel accepts them, e.g. any 127.0.0.x on the loopback device, so
 *                     several contexts can each use port 4791 on one host
 * @param anyIpv4Id    accept IPv4 packets whose ICRC was computed over a non-zero IP Identification (Linux
 *                     kernels and RoCE NICs send such IDs, which user space cannot see: jrdma solves for the
 *                     ID). This weakens the IPv4 ICRC check from 32 to 16 bits; jrdma peers send ID 0 and need
 *                     it off (the default). IPv6 is unaffected. See docs/wire.md
 */
public record SoftRoceOptions(int udpPort, boolean portFallback, List<InetAddress> addresses, boolean anyIpv4Id)
        implements ProviderOptions {
    /**
     * Validates and makes the options; the address list is copied.
     *
     * @throws RdmaException EINVAL if {@code udpPort} is outside 0..65535
     */
    public SoftRoceOptions {
        addresses = List.copyOf(addresses);
        if (udpPort < 0 || udpPort > 65535) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "UDP port must be 0..65535, not " + udpPort);
        }
    }

    /** {@return the defaults: UDP port 4791 or a free one when it is taken, every address of the interface, strict IPv4 ICRC} */
    public static SoftRoceOptions defaults() {
        return new SoftRoceOptions(DeviceOptions.ROCE_V2_PORT, true, List.of(), false);
    }

    /**
     * {@return the soft-RoCE options {@code options} carry, or the defaults}
     *
     * @param options a context's options
     */
    public static SoftRoceOptions of(DeviceOptions options) {
        return options.provider(SoftRoceOptions.class).orElseGet(SoftRoceOptions::defaults);
    }

    /**
     * {@return these options with another UDP port}
     *
     * @param port     0..65535 (0: any free port)
     * @param fallback take a free port when {@code port} is in use, instead of failing the open
     * @throws RdmaException EINVAL if {@code port} is outside 0..65535
     */
    public SoftRoceOptions withUdpPort(int port, boolean fallback) {
        return new SoftRoceOptions(port, fallback, addresses, anyIpv4Id);
    }

    /**
     * {@return these options listening on exactly these local addresses}
     *
     * @param list the addresses, in GID table order; empty for all of the interface's
     */
    public SoftRoceOptions withAddresses(List<InetAddress> list) {
        return new SoftRoceOptions(udpPort, portFallback, list, anyIpv4Id);
    }

    /**
     * {@return these options with the IPv4 Identification check relaxed or strict}
     *
     * @param any true to accept ICRCs over a non-zero IPv4 Identification (Linux and NIC peers over IPv4)
     */
    public SoftRoceOptions withAnyIpv4Id(boolean any) {
        return new SoftRoceOptions(udpPort, portFallback, addresses, any);
    }
}

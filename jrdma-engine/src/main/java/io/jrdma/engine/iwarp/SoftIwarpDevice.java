package io.jrdma.engine.iwarp;

import io.jrdma.soft.SoftIwarpOptions;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.InterfaceDevice;
import io.jrdma.engine.link.AddressLink;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.Transport;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A soft-iWARP device bound to one network interface, as Linux siw binds one to a netdev
 * ({@code siw_<if>} there, {@code iwarp_<if>} here). Its GID table is the interface's addresses
 * (the same order as soft-RoCE's); each {@link #open} starts an engine that moves RDMAP/DDP/MPA
 * over the TCP connections its connection manager sets up (docs/iwarp-design.md).
 */
public final class SoftIwarpDevice extends InterfaceDevice {
    SoftIwarpDevice(String netdev) {
        this(netdev, () -> Context.interfaceAddresses(netdev));
    }

    SoftIwarpDevice(String netdev, Supplier<List<InetAddress>> addressSource) {
        super(netdev, addressSource);
    }

    @Override
    public String name() {
        return "iwarp_" + netdev;
    }

    @Override
    public String provider() {
        return SoftIwarpProvider.NAME;
    }

    @Override
    public Transport transport() {
        return Transport.IWARP;
    }

    @Override
    public List<String> limitations() {
        return IwarpEngine.limitationsNow();
    }

    @Override
    public DeviceContext open(DeviceOptions options) {
        List<InetAddress> fixed = SoftIwarpOptions.of(options).addresses();
        List<InetAddress> addrs = fixed.isEmpty() ? addresses() : fixed;
        if (addrs.isEmpty()) {
            throw new RdmaException(Errno.ENODEV, "interface " + netdev + " has no IP address; an iWARP device needs one");
        }
        return open(options, addrs, NanoClock.SYSTEM);
    }

    /** Opens a context on {@code addresses} (its GID table) with {@code clock}. */
    public Context open(DeviceOptions options, List<InetAddress> addresses, NanoClock clock) {
        Context c = new Context(this, open::remove, options, addresses(addresses), clock, activeMtu(),
                IwarpEngine::new);
        open.add(c);
        return c;
    }

    /** A device for tests whose "interface addresses" come from {@code addresses}. */
    public static SoftIwarpDevice forTest(String name, Supplier<List<InetAddress>> addresses) {
        return new SoftIwarpDevice(name, addresses);
    }

    /**
     * The "link" of an iWARP context: only its local addresses (the GID table, port 0). iWARP has
     * no datagram link; the engine reads and writes the TCP streams of its QPs itself.
     */
    private static AddressLink addresses(List<InetAddress> addresses) {
        List<Endpoint> eps = new ArrayList<>();
        for (int i = 0; i < addresses.size(); i++) {
            eps.add(new Endpoint(new java.net.InetSocketAddress(addresses.get(i), 0), i));
        }
        return new AddressLink(eps);
    }

    /**
     * @return the port's active MTU as Linux siw reports it: the largest IB MTU not above the
     * interface's (1024 on 1500-byte Ethernet). Informational on iWARP: FPDUs are sized to the
     * TCP MSS, not to this.
     */
    public Mtu activeMtu() {
        int mtu = interfaceMtu();
        Mtu best = Mtu.MTU_256;
        for (Mtu m : Mtu.values()) {
            if (m.bytes() <= mtu) {
                best = m;
            }
        }
        return best;
    }
}

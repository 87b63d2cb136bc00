package io.jrdma.engine.roce;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.InterfaceDevice;
import io.jrdma.engine.link.Link;
import io.jrdma.engine.link.UdpLink;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.Transport;

import java.net.InetAddress;
import java.util.List;
import java.util.function.Supplier;

/**
 * A soft-RoCE device bound to one network interface, as Linux rxe binds one to a netdev. Its
 * GID table is the interface's addresses, read afresh on every query (so it follows address
 * changes): IPv6 link-local first, then IPv4 (as {@code ::ffff:a.b.c.d}), then other IPv6, as
 * rxe orders them. Each {@link #open} starts an engine with its own UDP sockets.
 */
public final class SoftRoceDevice extends InterfaceDevice {
    /** System property: {@code true} sends every packet from the shared port-4791 socket instead of a connected one per peer. */
    public static final String SHARED_SEND_SOCKET = "jrdma.udp.sharedSendSocket";

    SoftRoceDevice(String netdev) {
        this(netdev, () -> Context.interfaceAddresses(netdev));
    }

    SoftRoceDevice(String netdev, Supplier<List<InetAddress>> addressSource) {
        super(netdev, addressSource);
    }

    @Override
    public String name() {
        return "roce_" + netdev;
    }

    @Override
    public String provider() {
        return SoftRoceProvider.NAME;
    }

    @Override
    public Transport transport() {
        return Transport.ROCE_V2;
    }

    /** @return the largest IB MTU that fits the interface's MTU with RoCEv2 headers (IPv6 40 + UDP 8 + 64 B of IB headers) */
    public Mtu activeMtu() {
        int mtu = interfaceMtu();
        Mtu best = Mtu.MTU_256;
        for (Mtu m : Mtu.values()) {
            if (m.bytes() + 112 <= mtu) {
                best = m;
            }
        }
        return best;
    }

    @Override
    public List<String> limitations() {
        return RoceTransport.limitationsNow();
    }

    @Override
    public DeviceContext open(DeviceOptions options) {
        SoftRoceOptions so = SoftRoceOptions.of(options);
        List<InetAddress> addrs = so.addresses().isEmpty() ? addresses() : so.addresses();
        if (addrs.isEmpty()) {
            throw new RdmaException(Errno.ENODEV, "interface " + netdev + " has no IP address; a RoCE device needs one");
        }
        UdpLink link = UdpLink.open(addrs, so.udpPort(), so.portFallback());
        link.connectedPaths(!Boolean.getBoolean(SHARED_SEND_SOCKET)); // A/B switch, docs/design.md
        return open(options, link, NanoClock.SYSTEM, activeMtu());
    }

    /** Opens a context over any link (tests use an in-memory network and a manual clock). */
    public Context open(DeviceOptions options, Link link, NanoClock clock, Mtu activeMtu) {
        Context c = new Context(this, this::closed, options, link, clock, activeMtu, RoceTransport::new);
        open.add(c);
        return c;
    }

    /** A device for tests, not tied to a real interface. */
    public static SoftRoceDevice forTest(String name) {
        return new SoftRoceDevice(name, List::of);
    }

    /** A device for tests whose "interface addresses" come from {@code addresses}. */
    public static SoftRoceDevice forTest(String name, Supplier<List<InetAddress>> addresses) {
        return new SoftRoceDevice(name, addresses);
    }
}

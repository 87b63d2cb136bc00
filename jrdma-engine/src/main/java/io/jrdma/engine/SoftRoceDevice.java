package io.jrdma.engine;

import io.jrdma.engine.link.Link;
import io.jrdma.engine.link.UdpLink;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.Transport;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A soft-RoCE device bound to one network interface, as Linux rxe binds one to a netdev. Its
 * GID table is the interface's addresses, read afresh on every query (so it follows address
 * changes): IPv6 link-local first, then IPv4 (as {@code ::ffff:a.b.c.d}), then other IPv6, as
 * rxe orders them. Each {@link #open} starts an engine with its own UDP sockets.
 */
public final class SoftRoceDevice implements Device {
    /** System property: {@code true} sends every packet from the shared port-4791 socket instead of a connected one per peer. */
    public static final String SHARED_SEND_SOCKET = "jrdma.udp.sharedSendSocket";

    private final String netdev;
    private final Supplier<List<InetAddress>> addressSource;
    private final Set<Context> open = ConcurrentHashMap.newKeySet();

    SoftRoceDevice(String netdev) {
        this(netdev, () -> Context.interfaceAddresses(netdev));
    }

    SoftRoceDevice(String netdev, Supplier<List<InetAddress>> addressSource) {
        this.netdev = netdev;
        this.addressSource = addressSource;
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

    @Override
    public String netdev() {
        return netdev;
    }

    /** @return the interface's addresses in GID-table order */
    List<InetAddress> addresses() {
        List<InetAddress> list = new ArrayList<>(addressSource.get());
        list.sort(Comparator.comparingInt(SoftRoceDevice::rank));
        return list;
    }

    private static int rank(InetAddress a) {
        if (a instanceof Inet6Address v6 && v6.isLinkLocalAddress()) {
            return 0;
        }
        return a instanceof Inet4Address ? 1 : 2;
    }

    @Override
    public List<Gid> gids() {
        return addresses().stream().map(Gid::of).toList();
    }

    @Override
    public boolean isUp() {
        try {
            NetworkInterface ni = NetworkInterface.getByName(netdev);
            return ni != null && ni.isUp();
        } catch (SocketException e) {
            return false;
        }
    }

    /** @return the largest IB MTU that fits the interface's MTU with RoCEv2 headers (IPv6 40 + UDP 8 + 64 B of IB headers) */
    public Mtu activeMtu() {
        int mtu = 1500;
        try {
            NetworkInterface ni = NetworkInterface.getByName(netdev);
            if (ni != null) {
                mtu = ni.getMTU();
            }
        } catch (SocketException ignored) {
            // keep the Ethernet default
        }
        Mtu best = Mtu.MTU_256;
        for (Mtu m : Mtu.values()) {
            if (m.bytes() + 112 <= mtu) {
                best = m;
            }
        }
        return best;
    }

    @Override
    public DeviceContext open(DeviceOptions options) {
        List<InetAddress> addrs = options.addresses().isEmpty() ? addresses() : options.addresses();
        if (addrs.isEmpty()) {
            throw new RdmaException(Errno.ENODEV, "interface " + netdev + " has no IP address; a RoCE device needs one");
        }
        UdpLink link = UdpLink.open(addrs, options.udpPort(), options.portFallback());
        link.connectedPaths(!Boolean.getBoolean(SHARED_SEND_SOCKET)); // A/B switch, docs/design.md
        return open(options, link, NanoClock.SYSTEM, activeMtu());
    }

    /** Opens a context over any link (tests use an in-memory network and a manual clock). */
    public Context open(DeviceOptions options, Link link, NanoClock clock, Mtu activeMtu) {
        Context c = new Context(this, options, link, clock, activeMtu);
        open.add(c);
        return c;
    }

    void closed(Context c) {
        open.remove(c);
    }

    /** A device for tests, not tied to a real interface. */
    public static SoftRoceDevice forTest(String name) {
        return new SoftRoceDevice(name, List::of);
    }

    /** A device for tests whose "interface addresses" come from {@code addresses}. */
    public static SoftRoceDevice forTest(String name, Supplier<List<InetAddress>> addresses) {
        return new SoftRoceDevice(name, addresses);
    }

    @Override
    public String toString() {
        return name();
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;

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
 * What the soft-RoCE and soft-iWARP devices share: one network interface, whose addresses are
 * the GID table, read afresh on every query (so it follows address changes) in rxe's order —
 * IPv6 link-local first, then IPv4 (as {@code ::ffff:a.b.c.d}), then other IPv6 — and the
 * contexts open on it.
 */
public abstract class InterfaceDevice implements Device {
    public final String netdev;
    private final Supplier<List<InetAddress>> addressSource;
    public final Set<Context> open = ConcurrentHashMap.newKeySet();

    public InterfaceDevice(String netdev, Supplier<List<InetAddress>> addressSource) {
        this.netdev = netdev;
        this.addressSource = addressSource;
    }

    @Override
    public final String netdev() {
        return netdev;
    }

    /** @return the interface's addresses in GID-table order */
    public final List<InetAddress> addresses() {
        List<InetAddress> list = new ArrayList<>(addressSource.get());
        list.sort(Comparator.comparingInt(InterfaceDevice::rank));
        return list;
    }

    private static int rank(InetAddress a) {
        if (a instanceof Inet6Address v6 && v6.isLinkLocalAddress()) {
            return 0;
        }
        return a instanceof Inet4Address ? 1 : 2;
    }

    @Override
    public final List<Gid> gids() {
        return addresses().stream().map(Gid::of).toList();
    }

    @Override
    public final boolean isUp() {
        try {
            NetworkInterface ni = NetworkInterface.getByName(netdev);
            return ni != null && ni.isUp();
        } catch (SocketException e) {
            return false;
        }
    }

    /** @return the interface's MTU, 1500 (Ethernet's) when it cannot be read */
    public final int interfaceMtu() {
        try {
            NetworkInterface ni = NetworkInterface.getByName(netdev);
            if (ni != null && ni.getMTU() > 0) {
                return ni.getMTU();
            }
        } catch (SocketException ignored) {
            // keep the Ethernet default
        }
        return 1500;
    }

    public void closed(Context c) {
        open.remove(c);
    }

    @Override
    public String toString() {
        return name();
    }
}

package io.jrdma.rdmacore;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.spi.RdmaProvider;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The rdma-core provider ({@code rdmacore}): every device {@code libibverbs.so.1} sees, listed with its
 * attributes, ports and GID table, and the verbs over them; {@link #resolve(InetAddress, Transport)} picks a
 * device by address. Optional at run time: without the library, native access or a
 * device, {@link #devices()} is empty and {@link #unavailableReason()} says which.
 *
 * <p>The system property {@value #LIBRARY_PROPERTY} names another library to load instead of
 * {@code libibverbs.so.1} (a path or soname, as {@code dlopen} takes it).
 */
public final class RdmaCoreProvider implements RdmaProvider {
    /** The system property naming the library to load instead of {@code libibverbs.so.1}. */
    public static final String LIBRARY_PROPERTY = "jrdma.rdmacore.library";

    private static volatile LibIbverbs defaultLib;

    private final LibIbverbs lib;

    /** The provider over {@code libibverbs.so.1} (or the library {@value #LIBRARY_PROPERTY} names), loaded once per JVM. */
    public RdmaCoreProvider() {
        this(defaultLibrary());
    }

    /**
     * A provider over the library {@code library}, loaded now (for tests and tools that point at another build).
     *
     * @param library a soname or path, as {@code dlopen} takes it
     */
    public RdmaCoreProvider(String library) {
        this(LibIbverbs.load(library));
    }

    private RdmaCoreProvider(LibIbverbs lib) {
        this.lib = lib;
    }

    private static LibIbverbs defaultLibrary() {
        LibIbverbs l = defaultLib;
        if (l == null) {
            synchronized (RdmaCoreProvider.class) {
                l = defaultLib;
                if (l == null) {
                    l = LibIbverbs.load(System.getProperty(LIBRARY_PROPERTY, LibIbverbs.DEFAULT_LIBRARY));
                    defaultLib = l;
                }
            }
        }
        return l;
    }

    @Override
    public String name() {
        return "rdmacore";
    }

    /** {@return ROCE_V2: the provider's devices may also be iWARP ones, each {@link Device#transport()} says} */
    @Override
    public Transport transport() {
        return Transport.ROCE_V2;
    }

    /**
     * {@return the library that was loaded and its version, such as {@code libibverbs.so.1 (1.14.44.0)}, or
     * the reason it could not be}
     */
    public String libraryDescription() {
        if (lib.reason() != null) {
            return lib.library() + ": " + lib.reason();
        }
        return lib.library() + " (" + (lib.version() != null ? lib.version() : "version unknown") + ")";
    }

    /**
     * {@return null when rdma-core lists at least one device; else why not: the library is absent or lacks a
     * symbol, native access is off, the layouts do not match, or {@code ibv_get_device_list} found no device}
     */
    @Override
    public String unavailableReason() {
        if (lib.reason() != null) {
            return lib.reason();
        }
        try {
            if (lib.deviceList().isEmpty()) {
                return "rdma-core (" + libraryDescription() + ") lists no RDMA device: no RDMA NIC, and no software"
                        + " device (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0, or modprobe siw;"
                        + " rdma link add siw0 type siw netdev eth0)";
            }
            return null;
        } catch (LibIbverbs.LayoutMismatchException e) {
            return "layout mismatch with " + libraryDescription() + ": " + e.getMessage();
        } catch (LibIbverbs.NativeCallException e) {
            if (e.errno() == 38) { // ENOSYS: what ibv_get_device_list(3) answers without the kernel's uverbs
                return "rdma-core (" + libraryDescription() + ") lists no RDMA device: ibv_get_device_list found no"
                        + " kernel RDMA support (ENOSYS: no /sys/class/infiniband_verbs; an RDMA NIC's driver, or"
                        + " modprobe ib_uverbs with rdma_rxe or siw and rdma link add, provides it)";
            }
            return e.getMessage() + " (" + errnoName(e.errno()) + ")";
        }
    }

    /**
     * {@return the devices rdma-core lists now ({@code ibv_get_device_list}); empty when it cannot run}
     *
     * @throws RdmaException EPROTO if the library's structs do not match this provider's layouts
     */
    @Override
    public List<Device> devices() {
        if (lib.reason() != null) {
            return List.of();
        }
        List<LibIbverbs.DeviceInfo> infos;
        try {
            infos = lib.deviceList();
        } catch (LibIbverbs.LayoutMismatchException e) {
            throw new RdmaException(RdmaException.Errno.EPROTO, "rdmacore: " + e.getMessage());
        } catch (LibIbverbs.NativeCallException e) {
            return List.of();
        }
        List<Device> out = new ArrayList<>(infos.size());
        for (LibIbverbs.DeviceInfo i : infos) {
            out.add(new RdmaCoreDevice(this, lib, i));
        }
        return List.copyOf(out);
    }

    /** {@return ROCE_V2 and IWARP: rdma-core lists RoCE (and InfiniBand) devices and iWARP ones} */
    @Override
    public Set<Transport> transports() {
        return Set.of(Transport.ROCE_V2, Transport.IWARP);
    }

    /** {@return true: these are the kernel's devices, which {@link Rdma#resolve} asks before jrdma's software ones} */
    @Override
    public boolean kernelDevices() {
        return true;
    }

    /**
     * {@return the device rdma_cm puts {@code destination} on, of either transport; see
     * {@link #resolve(InetAddress, Transport)}}
     *
     * @param destination an address of this host or a peer's
     */
    @Override
    public ResolvedAddress resolve(InetAddress destination) {
        return resolve(destination, null);
    }

    /**
     * The rdma-core device that has {@code destination} (an address of this host) or a route to it, as rdma_cm
     * picks it: {@code rdma_bind_addr} on a temporary id, else {@code rdma_resolve_addr} (at most
     * {@value AddressResolver#RESOLVE_TIMEOUT_MS} ms), then the id's device and port ({@link AddressResolver}); the
     * GID is the entry of the port's table that holds the source address (RoCE, a RoCE v2 entry first) or the
     * source GID rdma_cm found (iWARP: siw's GIDs hold the MAC, not an address). Without librdmacm, only an address of
     * this host in a RoCE device port's GID table is found. The result names the port ({@code cm_id->port_num}); its
     * GID index is one of that port's table.
     *
     * @param destination an address of this host or a peer's
     * @param transport   the kind of device wanted, or null for either
     * @return the device, port, GID and GID index; null when no rdma-core device of {@code transport} has the address or a
     *         route to it, or when the provider cannot run here
     * @throws RdmaException EPROTO if librdmacm's {@code struct rdma_cm_id} does not match this provider's layout
     */
    @Override
    public ResolvedAddress resolve(InetAddress destination, Transport transport) {
        if (lib.reason() != null) {
            return null;
        }
        LibRdmacm cm = LibRdmacm.get();
        if (cm.reason() != null) {
            return byGidTable(destination, transport);
        }
        AddressResolver.Route route;
        try {
            route = AddressResolver.route(lib, cm, destination, AddressResolver.RESOLVE_TIMEOUT_MS);
        } catch (LibIbverbs.LayoutMismatchException e) {
            throw new RdmaException(RdmaException.Errno.EPROTO, "rdmacore: layout mismatch with "
                    + cm.library() + ": " + e.getMessage(), e);
        }
        if (route == null) {
            return null;
        }
        for (Device d : devices()) {
            if (d.name().equals(route.device()) && (transport == null || d.transport() == transport)) {
                try (RdmaCoreContext c = ((RdmaCoreDevice) d).open()) {
                    int port = route.port();
                    if (port < 1 || port > c.physPortCnt()) {
                        throw new RdmaException(RdmaException.Errno.EPROTO, "rdmacore: layout mismatch with "
                                + cm.library() + ": struct rdma_cm_id: port_num at offset " + LibRdmacm.ID_PORT_NUM
                                + " reads " + port + ", not a port of " + d.name() + " (1.." + c.physPortCnt() + ")");
                    }
                    GidEntry e = pickGid(c.gidTable(port), d.transport(), route.source(), route.sgid());
                    return e == null ? null : new ResolvedAddress(d, e.gid(), e.index(), port);
                }
            }
        }
        return null;
    }

    /** Without librdmacm: the RoCE device and port whose GID table holds {@code address}, an address of this host. */
    private ResolvedAddress byGidTable(InetAddress address, Transport transport) {
        if (transport == Transport.IWARP) {
            return null; // iWARP GIDs hold no address
        }
        for (Device d : devices()) {
            if (d.transport() != Transport.ROCE_V2) {
                continue;
            }
            try (RdmaCoreContext c = ((RdmaCoreDevice) d).open()) {
                for (int port = 1; port <= c.physPortCnt(); port++) {
                    GidEntry e = pickGid(c.gidTable(port), Transport.ROCE_V2, address, null);
                    if (e != null) {
                        return new ResolvedAddress(d, e.gid(), e.index(), port);
                    }
                }
            }
        }
        return null;
    }

    /**
     * {@return the GID table entry for a source address: on RoCE the one that holds the address (IPv4-mapped for
     * IPv4), a {@code RoCE v2} entry before another type, else the entry of rdma_cm's source GID; on iWARP the entry
     * of rdma_cm's source GID, else the table's first; null when there is none}
     *
     * @param table     the port's valid entries
     * @param transport the device's
     * @param source    the local address
     * @param sgid      the source GID rdma_cm found, or null
     */
    static GidEntry pickGid(List<GidEntry> table, Transport transport, InetAddress source, Gid sgid) {
        if (transport == Transport.ROCE_V2) {
            Gid mine = Gid.of(source);
            GidEntry any = null;
            for (GidEntry e : table) {
                if (e.gid().equals(mine)) {
                    if ("RoCE v2".equals(e.type())) {
                        return e;
                    }
                    if (any == null) {
                        any = e;
                    }
                }
            }
            if (any != null) {
                return any;
            }
        }
        if (sgid != null) {
            for (GidEntry e : table) {
                if (e.gid().equals(sgid)) {
                    return e;
                }
            }
        }
        return transport == Transport.IWARP && !table.isEmpty() ? table.get(0) : null;
    }

    static String errnoName(int errno) {
        RdmaException.Errno e = RdmaException.Errno.of(errno);
        return e.value() == errno ? e.name() : "errno " + errno;
    }

    static RdmaException toRdma(RuntimeException e) {
        if (e instanceof LibIbverbs.NativeCallException n) {
            RdmaException.Errno errno = RdmaException.Errno.of(n.errno());
            return new RdmaException(errno, "rdmacore: " + n.getMessage(), n);
        }
        if (e instanceof LibIbverbs.LayoutMismatchException m) {
            return new RdmaException(RdmaException.Errno.EPROTO, "rdmacore: layout mismatch: " + m.getMessage(), m);
        }
        return new RdmaException(RdmaException.Errno.EIO, "rdmacore: " + e.getMessage(), e);
    }

    /**
     * {@return the inline data a post flagged INLINE may carry on {@code qp}: the {@code cap.max_inline_data} the
     * device gave it, which may be less than its {@code QpInitAttr} asked (Linux siw takes at most 80 bytes: the
     * provider then creates the QP with the most the device takes); a post with more is EINVAL}
     *
     * @param qp a QP of this provider
     * @throws IllegalArgumentException for a QP of another provider
     */
    public static int maxInlineData(io.jrdma.verbs.QueuePair qp) {
        if (!(qp instanceof RdmaCoreQp q)) {
            throw new IllegalArgumentException("not a QP of the rdma-core provider: " + qp);
        }
        return q.maxInlineData();
    }
}

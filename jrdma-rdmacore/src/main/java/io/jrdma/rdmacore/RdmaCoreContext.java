package io.jrdma.rdmacore;

import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.RdmaException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import static io.jrdma.rdmacore.LibIbverbs.IBV_DEVICE_ATTR;
import static io.jrdma.rdmacore.LibIbverbs.IBV_PORT_ATTR_COMPAT;
import static io.jrdma.rdmacore.LibIbverbs.off;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A context of an rdma-core device ({@code struct ibv_context}), for queries only so far:
 * {@code ibv_query_device}, {@code ibv_query_port}, {@code ibv_query_gid} and the GID types and counters
 * the kernel shows in sysfs. PDs, completion channels, CQs and the connection manager answer
 * EOPNOTSUPP saying they are not built yet. Not thread-safe: one thread at a time.
 */
public final class RdmaCoreContext implements io.jrdma.verbs.DeviceContext {
    static final String NOT_BUILT = "the rdmacore provider queries devices only so far: PDs, MRs, CQs, QPs,"
            + " SRQs, AHs, memory windows and rdma_cm are not built yet; use a jrdma software device for those";

    private final RdmaCoreDevice device;
    private final LibIbverbs lib;
    private final DeviceOptions options;
    private MemorySegment ctx;

    RdmaCoreContext(RdmaCoreDevice device, LibIbverbs lib, MemorySegment ctx, DeviceOptions options) {
        this.device = device;
        this.lib = lib;
        this.ctx = ctx;
        this.options = options;
    }

    private MemorySegment ctx() {
        if (ctx == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the context of " + device.name()
                    + " is closed: open a new one with Device.open()");
        }
        return ctx;
    }

    private static RdmaException notBuilt(String verb) {
        return new RdmaException(RdmaException.Errno.EOPNOTSUPP, verb + " is not built yet: " + NOT_BUILT);
    }

    @Override
    public RdmaCoreDevice device() {
        return device;
    }

    @Override
    public DeviceOptions options() {
        return options;
    }

    /**
     * {@return the device's attributes ({@code ibv_query_device}); the QP types are the ones the transport
     * requires (InfiniBand/RoCE: RC, UC, UD as rxe offers them; iWARP: RC), as rdma-core reports no list}
     *
     * @throws RdmaException EPROTO if the library wrote a bigger struct than verbs.h's, else the returned errno
     */
    @Override
    public DeviceAttr queryDevice() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(IBV_DEVICE_ATTR.byteSize() + LibIbverbs.CANARY_BYTES, 8);
            lib.queryDevice(ctx(), a);
            int atomic = i(a, "atomic_cap");
            DeviceAttr.AtomicCap cap = atomic == 2 ? DeviceAttr.AtomicCap.GLOB
                    : atomic == 1 ? DeviceAttr.AtomicCap.HCA : DeviceAttr.AtomicCap.NONE;
            Set<QpType> types = device.transportType() == RdmaCoreDevice.TRANSPORT_IWARP
                    ? Set.of(QpType.RC) : Set.of(QpType.RC, QpType.UC, QpType.UD);
            return new DeviceAttr(LibIbverbs.cString(a, off(IBV_DEVICE_ATTR, "fw_ver"), 64),
                    Long.reverseBytes(a.get(JAVA_LONG, off(IBV_DEVICE_ATTR, "node_guid"))),
                    Long.reverseBytes(a.get(JAVA_LONG, off(IBV_DEVICE_ATTR, "sys_image_guid"))),
                    a.get(JAVA_LONG, off(IBV_DEVICE_ATTR, "max_mr_size")),
                    a.get(JAVA_LONG, off(IBV_DEVICE_ATTR, "page_size_cap")),
                    i(a, "vendor_id"), i(a, "vendor_part_id"), i(a, "hw_ver"), i(a, "max_qp"), i(a, "max_qp_wr"),
                    i(a, "device_cap_flags"), i(a, "max_sge"), i(a, "max_sge_rd"), i(a, "max_cq"), i(a, "max_cqe"),
                    i(a, "max_mr"), i(a, "max_pd"), i(a, "max_qp_rd_atom"), i(a, "max_res_rd_atom"),
                    i(a, "max_qp_init_rd_atom"), cap, i(a, "max_mw"), i(a, "max_ah"), i(a, "max_srq"),
                    i(a, "max_srq_wr"), i(a, "max_srq_sge"),
                    Short.toUnsignedInt(a.get(JAVA_SHORT, off(IBV_DEVICE_ATTR, "max_pkeys"))),
                    Byte.toUnsignedInt(a.get(JAVA_BYTE, off(IBV_DEVICE_ATTR, "phys_port_cnt"))), types);
        } catch (LibIbverbs.NativeCallException | LibIbverbs.LayoutMismatchException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    private static int i(MemorySegment a, String field) {
        return a.get(JAVA_INT, off(IBV_DEVICE_ATTR, field));
    }

    /**
     * The raw port attributes of {@code ibv_query_port}, as {@code ibv_devinfo -v} prints them.
     *
     * @param state        {@code enum ibv_port_state}
     * @param maxMtu       {@code enum ibv_mtu}
     * @param activeMtu    {@code enum ibv_mtu}
     * @param gidTblLen    the GID table's length
     * @param portCapFlags {@code port_cap_flags}
     * @param maxMsgSz     the largest message
     * @param lid          the LID (0 on RoCE and iWARP)
     * @param activeWidth  {@code active_width}
     * @param activeSpeed  {@code active_speed}
     * @param physState    {@code phys_state}
     * @param linkLayer    {@code IBV_LINK_LAYER_*}: 1 InfiniBand, 2 Ethernet, 0 unspecified
     */
    public record PortInfo(int state, int maxMtu, int activeMtu, int gidTblLen, int portCapFlags, long maxMsgSz,
                           int lid, int activeWidth, int activeSpeed, int physState, int linkLayer) {
        /** {@return the link layer's name as ibv_devinfo prints it} */
        public String linkLayerName() {
            return switch (linkLayer) {
                case 1 -> "InfiniBand";
                case 2 -> "Ethernet";
                default -> "Unknown";
            };
        }
    }

    /**
     * {@return port {@code port}'s attributes ({@code ibv_query_port@@IBVERBS_1.1})}
     *
     * @param port the port number, from 1
     * @throws RdmaException EINVAL for a port the device does not have; EPROTO on a layout mismatch
     */
    public PortInfo portInfo(int port) {
        if (port < 1 || port > 255) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "port " + port + " of " + device.name()
                    + ": ports are numbered from 1 to phys_port_cnt");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(IBV_PORT_ATTR_COMPAT.byteSize() + LibIbverbs.CANARY_BYTES, 8);
            lib.queryPort(ctx(), port, a);
            return new PortInfo(p(a, "state"), p(a, "max_mtu"), p(a, "active_mtu"), p(a, "gid_tbl_len"),
                    p(a, "port_cap_flags"), Integer.toUnsignedLong(p(a, "max_msg_sz")),
                    Short.toUnsignedInt(a.get(JAVA_SHORT, off(IBV_PORT_ATTR_COMPAT, "lid"))), b(a, "active_width"),
                    b(a, "active_speed"), b(a, "phys_state"), b(a, "link_layer"));
        } catch (LibIbverbs.NativeCallException | LibIbverbs.LayoutMismatchException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    private static int p(MemorySegment a, String field) {
        return a.get(JAVA_INT, off(IBV_PORT_ATTR_COMPAT, field));
    }

    private static int b(MemorySegment a, String field) {
        return Byte.toUnsignedInt(a.get(JAVA_BYTE, off(IBV_PORT_ATTR_COMPAT, field)));
    }

    /**
     * {@return port {@code port}'s valid GIDs ({@code ibv_query_gid} over {@code gid_tbl_len} entries; empty
     * or all-zero entries left out), each with the GID type the kernel shows in sysfs}
     *
     * @param port the port number, from 1
     */
    public List<GidEntry> gidTable(int port) {
        int len = portInfo(port).gidTblLen();
        List<GidEntry> out = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment g = arena.allocate(LibIbverbs.IBV_GID);
            for (int i = 0; i < len; i++) {
                g.fill((byte) 0);
                if (lib.queryGid(ctx(), port, i, g) != 0) {
                    continue;
                }
                byte[] raw = g.toArray(JAVA_BYTE);
                if (Arrays.equals(raw, new byte[16])) {
                    continue;
                }
                out.add(new GidEntry(i, Gid.of(raw), gidType(port, i)));
            }
        }
        return List.copyOf(out);
    }

    private String gidType(int port, int index) {
        if (device.transportType() == RdmaCoreDevice.TRANSPORT_IWARP) {
            return null; // sysfs shows "IB/RoCE v1" for siw's GID too, but iWARP has no GID types
        }
        try {
            return Files.readString(Path.of(device.ibdevPath(), "ports", Integer.toString(port), "gid_attrs", "types",
                    Integer.toString(index))).trim();
        } catch (IOException | RuntimeException e) {
            return null; // iWARP devices have no GID types
        }
    }

    /**
     * {@return port 1's attributes; the GID list holds the table up to its last valid entry, empty entries
     * as the zero GID so that list indexes are table indexes}
     */
    @Override
    public PortAttr queryPort() {
        PortInfo p = portInfo(1);
        List<GidEntry> table = gidTable(1);
        List<Gid> gids = new ArrayList<>();
        Gid zero = Gid.of(new byte[16]);
        for (GidEntry e : table) {
            while (gids.size() < e.index()) {
                gids.add(zero);
            }
            gids.add(e.gid());
        }
        PortAttr.PortState[] states = PortAttr.PortState.values();
        PortAttr.PortState state = p.state() >= 0 && p.state() < states.length ? states[p.state()] : PortAttr.PortState.NOP;
        boolean iwarp = device.transportType() == RdmaCoreDevice.TRANSPORT_IWARP;
        return new PortAttr(state, mtu(p.maxMtu()), mtu(p.activeMtu()), gids,
                iwarp ? 0 : DeviceOptions.ROCE_V2_PORT, p.linkLayerName(), List.of(NOT_BUILT));
    }

    private static Mtu mtu(int code) {
        return code >= 1 && code <= 5 ? Mtu.ofCode(code) : Mtu.MTU_256;
    }

    /**
     * {@return GID {@code index} of port 1 ({@code ibv_query_gid})}
     *
     * @param index the table index
     * @throws RdmaException EINVAL if the entry is out of the table or empty
     */
    @Override
    public Gid gid(int index) {
        for (GidEntry e : gidTable(1)) {
            if (e.index() == index) {
                return e.gid();
            }
        }
        throw new RdmaException(RdmaException.Errno.EINVAL, "GID index " + index + " of " + device.name()
                + " port 1 is empty or beyond the table: see jrdma devices -v -d " + device.name());
    }

    @Override
    public int gidIndexOf(Gid gid) {
        for (GidEntry e : gidTable(1)) {
            if (e.gid().equals(gid)) {
                return e.index();
            }
        }
        return -1;
    }

    /** @throws RdmaException EOPNOTSUPP: not built yet */
    @Override
    public ProtectionDomain allocPd() {
        throw notBuilt("allocPd (ibv_alloc_pd)");
    }

    /** @throws RdmaException EOPNOTSUPP: not built yet */
    @Override
    public CompletionChannel createCompletionChannel() {
        throw notBuilt("createCompletionChannel (ibv_create_comp_channel)");
    }

    /** @throws RdmaException EOPNOTSUPP: not built yet */
    @Override
    public CompletionQueue createCq(int cqe, CompletionChannel channel) {
        throw notBuilt("createCq (ibv_create_cq)");
    }

    /** {@return 0: rdma-core devices progress in the kernel or the NIC, and this context has no queues yet} */
    @Override
    public int progress() {
        return 0;
    }

    /**
     * {@return port 1's counters as the kernel shows them ({@code hw_counters} in sysfs), empty where it shows none}
     */
    @Override
    public Map<String, Long> counters() {
        Map<String, Long> out = new LinkedHashMap<>();
        Path dir = Path.of(device.ibdevPath(), "ports", "1", "hw_counters");
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.sorted().toList()) {
                try {
                    out.put(f.getFileName().toString(), Long.parseLong(Files.readString(f).trim()));
                } catch (IOException | NumberFormatException e) {
                    // not a counter (lifespan is writable, some are unreadable): skip it
                }
            }
        } catch (IOException | RuntimeException e) {
            return Map.of();
        }
        return out;
    }

    /** @throws RdmaException EOPNOTSUPP: not built yet (librdmacm) */
    @Override
    public ConnectionManager connectionManager() {
        throw notBuilt("connectionManager (librdmacm)");
    }

    /**
     * Closes the context ({@code ibv_close_device}); a second close does nothing.
     *
     * @throws RdmaException EIO if the library fails to close it
     */
    @Override
    public void close() {
        if (ctx == null) {
            return;
        }
        MemorySegment c = ctx;
        ctx = null;
        int rc = lib.close(c);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.EIO, "ibv_close_device(" + device.name() + ") returned " + rc);
        }
    }
}

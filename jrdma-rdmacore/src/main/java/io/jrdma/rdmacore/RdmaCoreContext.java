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

import io.jrdma.verbs.AsyncEvent;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
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
 * A context of an rdma-core device ({@code struct ibv_context}): queries ({@code ibv_query_device},
 * {@code ibv_query_port}, {@code ibv_query_gid}, the GID types and counters the kernel shows in sysfs), PDs,
 * MRs, completion channels, CQs, QPs (RC, UC, UD), AHs and SRQs through libibverbs' exported functions, the
 * data path through the context's ops table ({@link ContextOps}), async events from the context's
 * {@code async_fd}, memory windows through the ops table, jrdma's TCP connection manager (RoCE) and librdmacm's
 * rdma_cm ({@link #rdmaCm()}). Fast registration (not in libibverbs' standard API) is not built.
 * Queries and object creation are control-path calls (they allocate); posting and polling do not.
 */
public final class RdmaCoreContext implements io.jrdma.verbs.DeviceContext {
    static final String NOT_BUILT = "the rdmacore provider has no fast registration (libibverbs' standard API has"
            + " no ibv_alloc_mr or IBV_WR_REG_MR: the memory management extensions are the kernel's);"
            + " connectionManager() is jrdma's TCP exchange on RoCE, rdma_cm (librdmacm) on iWARP; rdmaCm() is"
            + " rdma_cm on both";

    /**
     * Device capabilities this provider does not offer, cleared from what {@link #queryDevice} reports: the
     * memory management extensions (fast registration: libibverbs' standard API has no {@code ibv_alloc_mr}
     * and no {@code IBV_WR_REG_MR}).
     */
    static final int NOT_BUILT_CAPS = io.jrdma.verbs.DeviceCap.MEM_MGT_EXTENSIONS;
    /** The memory window capabilities, cleared (with {@code max_mw} 0) when the device's provider has no window ops. */
    static final int MW_CAPS = io.jrdma.verbs.DeviceCap.MEM_WINDOW | io.jrdma.verbs.DeviceCap.MEM_WINDOW_TYPE_2A
            | io.jrdma.verbs.DeviceCap.MEM_WINDOW_TYPE_2B;

    /** The type 2 binds posted and not yet completed, for the keys of binds that fail. */
    final PendingBinds binds = new PendingBinds();

    private final RdmaCoreDevice device;
    private final LibIbverbs lib;
    private final DeviceOptions options;
    private final IbvVerbs verbs;
    private final ContextOps ops;
    private final Map<Long, RdmaCoreCq> cqs = new ConcurrentHashMap<>();
    private final Map<Long, RdmaCoreQp> qps = new ConcurrentHashMap<>();
    private final Map<Long, RdmaCoreSrq> srqs = new ConcurrentHashMap<>();
    private final Set<RdmaCoreChannel> channels = ConcurrentHashMap.newKeySet();
    private final Set<RdmaCorePd> pds = ConcurrentHashMap.newKeySet();
    private final Arena eventArena = Arena.ofShared();
    private final MemorySegment eventState = IbvVerbs.callState(eventArena);
    private final MemorySegment event = eventArena.allocate(Structs.IBV_ASYNC_EVENT);
    /** The async event wait, which {@link #close} ends ({@link FdWait}: its eventfd is made by the first wait). */
    private final FdWait eventWait;
    /**
     * Held by the one thread reading async events, and by {@link #close} once it has woken that thread: not the
     * context's monitor, so that a waiting thread does not hold up close() or the rest.
     */
    private final java.util.concurrent.locks.ReentrantLock eventLock = new java.util.concurrent.locks.ReentrantLock();
    private final int asyncFd;
    private io.jrdma.engine.cm.TcpConnectionManager cm;
    private volatile MemorySegment ctx;

    RdmaCoreContext(RdmaCoreDevice device, LibIbverbs lib, MemorySegment ctx, DeviceOptions options) {
        this.device = device;
        this.lib = lib;
        this.ctx = ctx.reinterpret(Structs.IBV_CONTEXT.byteSize());
        this.options = options;
        this.verbs = lib.verbs();
        this.ops = ContextOps.of(this.ctx, device.name());
        this.asyncFd = this.ctx.get(JAVA_INT, Structs.CTX_ASYNC_FD);
        this.eventWait = new FdWait("the async events of " + device.name());
    }

    IbvVerbs verbs() {
        return verbs;
    }

    /** {@code vendor_id} of Linux rxe ({@code RXE_VENDOR_ID} in the kernel's rxe_param.h). */
    static final int RXE_VENDOR_ID = 0xFFFFFF;
    private volatile Boolean rxe;

    /** {@return true when the device is Linux rxe (its vendor id; asked once, on the control path)} */
    boolean rxe() {
        Boolean r = rxe;
        if (r == null) {
            try {
                r = queryDevice(true).vendorId() == RXE_VENDOR_ID;
            } catch (RdmaException e) {
                r = false;
            }
            rxe = r;
        }
        return r;
    }

    ContextOps ops() {
        return ops;
    }

    /** Why this context has no memory windows, "" when it has them; null before {@link #windows()} asked. */
    private volatile String noWindows;

    /**
     * {@return true when memory windows work on this context} The device must declare them ({@code max_mw} above
     * 0 and {@code IBV_DEVICE_MEM_WINDOW}) and its rdma-core provider make one: the first call allocates a window of
     * type 1 (type 2 when the device declares only those) on a scratch PD and deallocates it, once per context. An
     * {@code alloc_mw} answering EOPNOTSUPP or ENOSYS is libibverbs' stub for an op the provider lacks: then
     * {@link #queryDevice()} declares no windows and {@code allocMw} refuses with EOPNOTSUPP before any native call
     * (found in review: every op slot holds a stub, so the NULL check decided nothing). Another errno leaves the
     * windows declared: the device has them, and an allocMw then reports its own failure.
     */
    boolean windows() {
        return noWindows().isEmpty();
    }

    /** {@return why this context has no memory windows (for messages), or "" when it has them} */
    String noWindows() {
        String why = noWindows;
        if (why == null) {
            DeviceAttr a = queryDevice(true);
            boolean t1 = a.supportsMw(io.jrdma.verbs.MwType.TYPE_1);
            boolean t2 = a.supportsMw(io.jrdma.verbs.MwType.TYPE_2);
            if (!ops.hasMw()) {
                why = "its rdma-core provider has no memory window ops";
            } else if (!t1 && !t2) {
                why = "the device declares none (max_mw " + a.maxMw() + (a.has(io.jrdma.verbs.DeviceCap.MEM_WINDOW)
                        ? "" : ", no MEM_WINDOW capability") + ")";
            } else {
                MemorySegment pd;
                try {
                    pd = verbs.allocPd(ctx());
                } catch (RdmaException x) {
                    return ""; // no PD to probe with now (max_pd reached): as the device declares, asked again later
                }
                int e;
                try {
                    e = ops.mwAnswers(pd, (t1 ? io.jrdma.verbs.MwType.TYPE_1 : io.jrdma.verbs.MwType.TYPE_2).value());
                } finally {
                    verbs.deallocPd(pd);
                }
                why = e == ContextOps.EOPNOTSUPP || e == ContextOps.ENOSYS ? "the device declares them (max_mw "
                        + a.maxMw() + ") but its rdma-core provider's alloc_mw answers " + (e == ContextOps.ENOSYS
                        ? "ENOSYS" : "EOPNOTSUPP (libibverbs' stub for an op the provider lacks)") : "";
            }
            noWindows = why;
        }
        return why;
    }

    void remember(RdmaCoreCq cq) {
        cqs.put(cq.cq.address(), cq);
    }

    void remember(RdmaCoreQp qp) {
        qps.put(qp.qp.address(), qp);
    }

    /**
     * {@return this context's QP {@code qpn}, or null}: a scan of its QPs, for an error path (an iWARP QP whose
     * receive completed in error)
     */
    RdmaCoreQp qpOf(int qpn) {
        for (RdmaCoreQp qp : qps.values()) {
            if (qp.qpn() == qpn) {
                return qp;
            }
        }
        return null;
    }

    /** {@return true when an open QP of this context sends or receives into {@code cq}} (a close's check) */
    boolean qpUsing(RdmaCoreCq cq) {
        for (RdmaCoreQp qp : qps.values()) {
            if (qp.sendCq() == cq || qp.recvCq() == cq) {
                return true;
            }
        }
        return false;
    }

    /** {@return true when an open CQ of this context notifies {@code channel}} (a close's check) */
    boolean cqUsing(RdmaCoreChannel channel) {
        for (RdmaCoreCq cq : cqs.values()) {
            if (cq.channel() == channel) {
                return true;
            }
        }
        return false;
    }

    /** {@return true when an open QP of this context receives from {@code srq}} (a close's check) */
    boolean qpUsing(RdmaCoreSrq srq) {
        for (RdmaCoreQp qp : qps.values()) {
            if (qp.srq() == srq) {
                return true;
            }
        }
        return false;
    }

    void remember(RdmaCoreSrq srq) {
        srqs.put(srq.srq.address(), srq);
    }

    void forget(RdmaCoreCq cq) {
        cqs.remove(cq.cq.address());
    }

    void forget(RdmaCoreQp qp) {
        qps.remove(qp.qp.address());
    }

    void forget(RdmaCoreSrq srq) {
        srqs.remove(srq.srq.address());
    }

    void forget(RdmaCorePd pd) {
        pds.remove(pd);
    }

    void forget(RdmaCoreChannel channel) {
        channels.remove(channel);
    }

    /** Each connected RC/UC QP's destination QPN, for the {@code src_qp} of its receive completions. */
    private final PeerTable peers = new PeerTable();

    /** Per device name: the largest inline size it took after refusing a larger one, so that the probe runs once. */
    private static final Map<String, Integer> INLINE_CEILING = new ConcurrentHashMap<>();

    /** {@return the largest inline size this device took after refusing more, or Integer.MAX_VALUE: none refused} */
    int inlineCeiling() {
        return INLINE_CEILING.getOrDefault(device.name(), Integer.MAX_VALUE);
    }

    /** Remembers that the device took {@code inline} bytes of inline data after refusing more (siw: 80). */
    void inlineCeiling(int inline) {
        INLINE_CEILING.merge(device.name(), inline, Math::max);
    }

    void setPeer(int qpn, int destQpn) {
        peers.set(qpn, destQpn);
    }

    /** {@return the destination QPN of this context's connected QP {@code qpn}, or -1} */
    int peerOf(int qpn) {
        return peers.get(qpn);
    }

    /** {@return the CQ of this context at that native address, or null} */
    RdmaCoreCq cqOf(long address) {
        return cqs.get(address);
    }

    private MemorySegment ctx() {
        if (ctx == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the context of " + device.name()
                    + " is closed: open a new one with Device.open()");
        }
        return ctx;
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
     * requires (InfiniBand/RoCE: RC, UC, UD as rxe offers them; iWARP: RC), as rdma-core reports no list; the
     * capabilities this provider does not offer ({@link #NOT_BUILT_CAPS}: fast registration) are cleared, and so are
     * the memory window ones ({@code max_mw} 0) when the device's provider has no window ops, so that code which
     * checks them before use does not try them ({@link #queryDeviceAsReported()}: the device's)}
     *
     * @throws RdmaException EPROTO if the library wrote a bigger struct than verbs.h's, else the returned errno
     */
    @Override
    public DeviceAttr queryDevice() {
        return queryDevice(false);
    }

    /**
     * {@return the device's attributes exactly as {@code ibv_query_device} reports them (what {@code ibv_devinfo -v}
     * prints), the memory management capabilities this provider does not offer included}
     */
    public DeviceAttr queryDeviceAsReported() {
        return queryDevice(true);
    }

    private DeviceAttr queryDevice(boolean asReported) {
        boolean mw = asReported || windows();
        int hide = asReported ? 0 : NOT_BUILT_CAPS | (mw ? 0 : MW_CAPS);
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
                    i(a, "device_cap_flags") & ~hide, i(a, "max_sge"), i(a, "max_sge_rd"), i(a, "max_cq"), i(a, "max_cqe"),
                    i(a, "max_mr"), i(a, "max_pd"), i(a, "max_qp_rd_atom"), i(a, "max_res_rd_atom"),
                    i(a, "max_qp_init_rd_atom"), cap, asReported || mw ? i(a, "max_mw") : 0, i(a, "max_ah"), i(a, "max_srq"),
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
     * @param port the port number, 1 to {@link #physPortCnt()}
     * @throws RdmaException EINVAL for a port the device does not have (before any native call; the message names the
     *                       range); EPROTO on a layout mismatch
     */
    public PortInfo portInfo(int port) {
        checkPort(port);
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
     * @param port the port number, 1 to {@link #physPortCnt()}
     * @throws RdmaException EINVAL for a port the device does not have (the message names the range)
     */
    public List<GidEntry> gidTable(int port) {
        return gidTable(port, portInfo(port));
    }

    /** {@link #gidTable(int)} with the port's attributes already read ({@code info}: its table's length) */
    private List<GidEntry> gidTable(int port, PortInfo info) {
        int len = info.gidTblLen();
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

    private volatile int portCount;

    /**
     * {@return the device's ports ({@code phys_port_cnt} of {@code ibv_query_device}), read once}: ports are
     * numbered 1 to this
     */
    public int physPortCnt() {
        int n = portCount;
        if (n == 0) {
            n = Math.max(1, queryDevice(true).physPortCnt());
            portCount = n;
        }
        return n;
    }

    /** {@return {@link #physPortCnt()}: the device's ports, read once} */
    @Override
    public int portCount() {
        return physPortCnt();
    }

    /**
     * Checks a port number before any native call is made with it.
     *
     * @param port the port number
     * @throws RdmaException EINVAL naming the range 1..phys_port_cnt when the device has no such port
     */
    void checkPort(int port) {
        int n = physPortCnt();
        if (port < 1 || port > n) {
            throw RdmaException.noSuchPort(device.name(), port, n);
        }
    }

    /**
     * {@return port 1's attributes: {@link #queryPort(int) queryPort(1)}}
     */
    @Override
    public PortAttr queryPort() {
        return queryPort(1);
    }

    /**
     * {@return port {@code port}'s attributes ({@code ibv_query_port}); the GID list holds the port's table
     * ({@code ibv_query_gid}) up to its last valid entry, empty entries as the zero GID so that list indexes are
     * table indexes}
     *
     * @param port the port number, 1 to {@link #physPortCnt()}
     * @throws RdmaException EINVAL for a port the device does not have (the message names the range)
     */
    @Override
    public PortAttr queryPort(int port) {
        PortInfo p = portInfo(port);
        List<GidEntry> table = gidTable(port, p); // one ibv_query_port for both
        gidCache.put(port, table);
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
     * {@return GID {@code index} of port 1: {@link #gid(int, int) gid(1, index)}}
     *
     * @param index the table index
     * @throws RdmaException EINVAL if the entry is out of the table or empty
     */
    @Override
    public Gid gid(int index) {
        return gid(1, index);
    }

    /**
     * {@return GID {@code index} of port {@code port} ({@code ibv_query_gid}), from the port's cached table (read
     * again once when the index is missing: addresses come and go)}
     *
     * @param port  the port number, 1 to {@link #physPortCnt()}
     * @param index the index in the port's table
     * @throws RdmaException EINVAL for a port the device does not have (the message names the range), or an entry out
     *                       of the port's table or empty
     */
    @Override
    public Gid gid(int port, int index) {
        checkPort(port);
        for (int pass = 0; pass < 2; pass++) {
            for (GidEntry e : gids(port, pass == 1)) {
                if (e.index() == index) {
                    return e.gid();
                }
            }
        }
        throw new RdmaException(RdmaException.Errno.EINVAL, "GID index " + index + " of " + device.name()
                + " port " + port + " is empty or beyond the table: see jrdma devices -v -d " + device.name());
    }

    /** {@return {@link #gidIndexOf(int, Gid) gidIndexOf(1, gid)}} */
    @Override
    public int gidIndexOf(Gid gid) {
        return gidIndexOf(1, gid);
    }

    /**
     * {@return the lowest index of {@code gid} in port {@code port}'s table, or -1}, from the port's cached table (read
     * again once when the GID is missing)
     *
     * @param port the port number, 1 to {@link #physPortCnt()}
     * @param gid  the GID to look for
     * @throws RdmaException EINVAL for a port the device does not have (the message names the range)
     */
    @Override
    public int gidIndexOf(int port, Gid gid) {
        checkPort(port);
        for (int pass = 0; pass < 2; pass++) {
            for (GidEntry e : gids(port, pass == 1)) {
                if (e.gid().equals(gid)) {
                    return e.index();
                }
            }
        }
        return -1;
    }

    /** Each port's GID table, by port number. */
    private final Map<Integer, List<GidEntry>> gidCache = new ConcurrentHashMap<>();

    /**
     * {@return port {@code port}'s GID table, read once and again when {@code refresh} (a lookup missed: the table may
     * have changed since, as addresses come and go), so that connection setup does not query it per call}
     */
    private List<GidEntry> gids(int port, boolean refresh) {
        List<GidEntry> g = gidCache.get(port);
        if (g == null || refresh) {
            g = gidTable(port);
            gidCache.put(port, g);
        }
        return g;
    }

    /**
     * {@return a protection domain ({@code ibv_alloc_pd})}
     *
     * @throws RdmaException the errno of ibv_alloc_pd; EINVAL when the context is closed
     */
    @Override
    public ProtectionDomain allocPd() {
        try {
            RdmaCorePd pd = new RdmaCorePd(this, verbs.allocPd(ctx()).reinterpret(Structs.IBV_PD.byteSize()));
            pds.add(pd);
            return pd;
        } catch (LibIbverbs.NativeCallException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    /**
     * {@return a completion channel ({@code ibv_create_comp_channel}), whose fd {@code await} blocks on}
     *
     * @throws RdmaException the errno of ibv_create_comp_channel
     */
    @Override
    public CompletionChannel createCompletionChannel() {
        try {
            RdmaCoreChannel ch = new RdmaCoreChannel(this, verbs.createCompChannel(ctx()));
            channels.add(ch);
            return ch;
        } catch (LibIbverbs.NativeCallException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    /**
     * {@return a CQ of at least {@code cqe} entries ({@code ibv_create_cq}), notifying {@code channel} if not null}
     *
     * @throws RdmaException EINVAL for cqe below 1 or a channel of another context; the errno of ibv_create_cq
     */
    @Override
    public CompletionQueue createCq(int cqe, CompletionChannel channel) {
        if (cqe < 1) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "a CQ needs at least 1 entry, not " + cqe);
        }
        if (channel != null && (!(channel instanceof RdmaCoreChannel ch) || !channels.contains(ch))) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the completion channel is no open channel of this"
                    + " context (" + device.name() + "): create it with this context's createCompletionChannel()");
        }
        RdmaCoreChannel ch = (RdmaCoreChannel) channel;
        try {
            RdmaCoreCq cq = new RdmaCoreCq(this, verbs.createCq(ctx(), cqe, ch == null ? MemorySegment.NULL : ch.channel), ch);
            remember(cq);
            return cq;
        } catch (LibIbverbs.NativeCallException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    /**
     * Reads the next async event if one is waiting ({@code poll(2)} on the context's {@code async_fd} without
     * waiting, {@code ibv_get_async_event}, {@code ibv_ack_async_event}).
     */
    @Override
    public boolean pollAsyncEvent(AsyncEvent out) {
        return awaitAsyncEvent(out, Duration.ZERO);
    }

    /**
     * Waits at most {@code timeout} for the next async event: {@code poll(2)} on the context's
     * {@code async_fd}, then {@code ibv_get_async_event} and {@code ibv_ack_async_event}. An event about a QP,
     * CQ or SRQ that is already destroyed, or of a type the verbs API does not have, is acknowledged and skipped.
     */
    @Override
    public boolean awaitAsyncEvent(AsyncEvent out, Duration timeout) {
        try {
            eventLock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException(RdmaException.Errno.EINTR, "interrupted while waiting to read the async events of "
                    + device.name() + " (another thread reads them)");
        }
        try {
            return awaitAsyncEventLocked(out, timeout);
        } finally {
            eventLock.unlock();
        }
    }

    /**
     * The wait (the caller holds {@link #eventLock}): {@link FdWait} on the async fd, which {@link #close} wakes; then it
     * frees the context only once this thread has left.
     *
     * @throws RdmaException EINVAL when the context is closed, or closed while this thread waited; EINTR when it is
     *                       interrupted (its interrupt status set again)
     */
    private boolean awaitAsyncEventLocked(AsyncEvent out, Duration timeout) {
        long deadline = System.nanoTime() + Math.min(Math.max(0, timeout.toNanos()), Long.MAX_VALUE / 4);
        MemorySegment c = ctx();
        while (true) {
            int r = eventWait.await(asyncFd, deadline);
            if (r == FdWait.WOKEN || ctx == null) {
                throw new RdmaException(RdmaException.Errno.EINVAL, "the context of " + device.name()
                        + " was closed while this thread waited for an async event");
            }
            if (r != FdWait.READY) {
                return false;
            }
            int rc = verbs.getAsyncEvent(eventState, c, event);
            if (rc != 0) {
                throw new RdmaException(RdmaException.Errno.of(rc), "ibv_get_async_event failed (errno " + rc + ")");
            }
            boolean known = decodeEvent(out);
            verbs.ackAsyncEvent(eventState, event);
            if (known) {
                return true;
            }
        }
    }

    private boolean decodeEvent(AsyncEvent out) {
        int t = event.get(JAVA_INT, Structs.off(Structs.IBV_ASYNC_EVENT, "event_type"));
        AsyncEvent.Type[] types = AsyncEvent.Type.values();
        if (t < 0 || t >= types.length) {
            return false;
        }
        AsyncEvent.Type type = types[t];
        long element = event.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0);
        switch (type.element()) {
            case QP -> {
                RdmaCoreQp qp = qps.get(element);
                if (qp == null) {
                    return false;
                }
                out.setQp(type, qp);
            }
            case CQ -> {
                RdmaCoreCq cq = cqs.get(element);
                if (cq == null) {
                    return false;
                }
                out.setCq(type, cq);
            }
            case SRQ -> {
                RdmaCoreSrq srq = srqs.get(element);
                if (srq == null) {
                    return false;
                }
                if (type == AsyncEvent.Type.SRQ_LIMIT_REACHED) {
                    srq.limitReached();
                }
                out.setSrq(type, srq);
            }
            case PORT, DEVICE -> out.setPort(type, event.get(JAVA_INT, 0));
        }
        return true;
    }

    /** {@return 0: rdma-core devices progress in the kernel or the NIC, and this context has no queues yet} */
    @Override
    public int progress() {
        return 0;
    }

    /**
     * {@return port 1's counters as the kernel shows them ({@code hw_counters} in sysfs), empty where it shows none:
     * {@link #counters(int) counters(1)}}
     */
    @Override
    public Map<String, Long> counters() {
        return counters(1);
    }

    /**
     * {@return port 1's counter {@code name} ({@code hw_counters/<name>} in sysfs, one file read instead of the
     * whole directory that {@link #counters()} lists and reads), or -1 when the kernel shows no such counter}
     */
    @Override
    public long counter(String name) {
        if (name.isEmpty() || name.indexOf('/') >= 0 || name.startsWith(".")) {
            return -1; // a counter is a file of hw_counters, nothing beside or below it
        }
        try {
            return Long.parseLong(Files.readString(Path.of(device.ibdevPath(), "ports", "1", "hw_counters", name))
                    .trim());
        } catch (IOException | NumberFormatException | java.nio.file.InvalidPathException e) {
            return -1;
        }
    }

    /**
     * {@return port {@code port}'s counters as the kernel shows them ({@code hw_counters} in sysfs), empty where it
     * shows none}
     *
     * @param port the port number, 1 to {@link #physPortCnt()}
     * @throws RdmaException EINVAL for a port the device does not have (the message names the range)
     */
    public Map<String, Long> counters(int port) {
        checkPort(port);
        Map<String, Long> out = new LinkedHashMap<>();
        Path dir = Path.of(device.ibdevPath(), "ports", Integer.toString(port), "hw_counters");
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

    /**
     * {@return on RoCE, jrdma's connection manager: a TCP exchange of QPN, PSN, GID and MTU that then moves the QP
     * through INIT, RTR and RTS ({@code ibv_modify_qp}); a jrdma soft-RoCE peer speaks the same. On iWARP,
     * {@link #rdmaCm()}: iWARP QPs connect only through the kernel's iWARP CM}
     *
     * @throws RdmaException ENOSYS on an iWARP device when librdmacm cannot be used
     */
    @Override
    public synchronized ConnectionManager connectionManager() {
        if (device.transportType() == RdmaCoreDevice.TRANSPORT_IWARP) {
            return rdmaCm(); // iWARP QPs connect only through the kernel's iWARP CM
        }
        if (cm == null) {
            cm = new io.jrdma.engine.cm.TcpConnectionManager(this);
        }
        return cm;
    }

    private RdmaCoreCm rdmaCm;

    /**
     * {@return the rdma_cm connection manager: librdmacm ({@code rdma_cm}, TCP port space) with this context's QPs
     * as external QPs of its ids (RdmaCoreCm); on iWARP devices also what {@link #connectionManager()} returns}
     *
     * @throws RdmaException ENOSYS when librdmacm.so.1 cannot be used here (the message says why and what to install)
     */
    @Override
    public synchronized ConnectionManager rdmaCm() {
        if (ctx == null) {
            ctx(); // throws: closed
        }
        if (rdmaCm == null) {
            LibRdmacm l = LibRdmacm.get();
            if (l.reason() != null) {
                throw new RdmaException(RdmaException.Errno.ENOSYS, device.name() + " has no rdma_cm here: " + l.reason());
            }
            rdmaCm = new RdmaCoreCm(this, l);
        }
        return rdmaCm;
    }

    /**
     * Closes the context ({@code ibv_close_device}); a second close does nothing.
     *
     * @throws RdmaException EBUSY while PDs, CQs or completion channels of it are open (libibverbs would close the
     *                       device under them); EIO if the library fails to close it
     */
    @Override
    public synchronized void close() {
        if (ctx == null) {
            return;
        }
        if (!pds.isEmpty() || !cqs.isEmpty() || !channels.isEmpty()) {
            throw new RdmaException(RdmaException.Errno.EBUSY, "the context of " + device.name() + " still has "
                    + pds.size() + " PD(s), " + cqs.size() + " CQ(s) and " + channels.size()
                    + " completion channel(s) open: close them (QPs, MRs, AHs and SRQs first) before the context");
        }
        if (rdmaCm != null) {
            rdmaCm.shutdown(); // librdmacm's ids (on librdmacm's own contexts of the device)
        }
        if (cm != null) {
            cm.close(); // its listeners' ports and side channels, as the soft providers close theirs (found in review)
        }
        MemorySegment c = ctx;
        ctx = null; // a wait that begins from now on throws
        eventWait.wake(); // a wait in progress returns at once, and one that begins now
        int rc;
        eventLock.lock(); // the woken waiter leaves at once: then nothing reads the ibv_context or the event's memory
        try {
            rc = lib.close(c);
            eventWait.close();
            eventArena.close();
        } finally {
            eventLock.unlock();
        }
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.EIO, "ibv_close_device(" + device.name() + ") returned " + rc);
        }
    }
}

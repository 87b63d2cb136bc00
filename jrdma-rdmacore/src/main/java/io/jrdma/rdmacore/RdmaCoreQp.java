package io.jrdma.rdmacore;

import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.jrdma.rdmacore.Structs.IBV_QP_ATTR;
import static io.jrdma.rdmacore.Structs.IBV_QP_INIT_ATTR;
import static io.jrdma.rdmacore.Structs.off;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A queue pair of an rdma-core device ({@code ibv_create_qp}): RC, UC or UD. Its native
 * {@code struct ibv_send_wr}, {@code struct ibv_recv_wr} and their {@code struct ibv_sge} arrays are laid
 * out once, off-heap; {@link #postSend} and {@link #postRecv} write the request's fields into them and call
 * the context's {@code ops.post_send}/{@code ops.post_recv}: no allocation. One thread posts to each
 * queue at a time (send and receive may be posted from two threads).
 */
final class RdmaCoreQp implements QueuePair {
    private static final int IBV_QPT_RC = 2, IBV_QPT_UC = 3, IBV_QPT_UD = 4;
    /**
     * {@code enum ibv_wr_opcode} per {@link WrOpcode} ordinal; -1: no work request of libibverbs' standard API
     * (REG_MR: fast registration is the kernel's).
     */
    private static final int[] WR_OPCODE = new int[WrOpcode.values().length];

    static {
        WR_OPCODE[WrOpcode.RDMA_WRITE.ordinal()] = 0;
        WR_OPCODE[WrOpcode.RDMA_WRITE_WITH_IMM.ordinal()] = 1;
        WR_OPCODE[WrOpcode.SEND.ordinal()] = 2;
        WR_OPCODE[WrOpcode.SEND_WITH_IMM.ordinal()] = 3;
        WR_OPCODE[WrOpcode.RDMA_READ.ordinal()] = 4;
        WR_OPCODE[WrOpcode.ATOMIC_CMP_AND_SWP.ordinal()] = 5;
        WR_OPCODE[WrOpcode.ATOMIC_FETCH_AND_ADD.ordinal()] = 6;
        WR_OPCODE[WrOpcode.LOCAL_INV.ordinal()] = 7;
        WR_OPCODE[WrOpcode.BIND_MW.ordinal()] = 8; // a type 2 window's bind
        WR_OPCODE[WrOpcode.SEND_WITH_INV.ordinal()] = 9;
        WR_OPCODE[WrOpcode.REG_MR.ordinal()] = -1;
    }

    private static final int EPERM = 1, EINVAL = 22, EMSGSIZE = 90, EOPNOTSUPP = 95;
    /** Every {@code IBV_QP_*} attribute bit {@link #query} asks for. */
    private static final int QUERY_ALL = QpAttr.STATE | QpAttr.ACCESS_FLAGS | QpAttr.PKEY_INDEX | QpAttr.PORT
            | QpAttr.QKEY | QpAttr.AV | QpAttr.PATH_MTU | QpAttr.TIMEOUT | QpAttr.RETRY_CNT | QpAttr.RNR_RETRY
            | QpAttr.RQ_PSN | QpAttr.MAX_QP_RD_ATOMIC | QpAttr.MIN_RNR_TIMER | QpAttr.SQ_PSN
            | QpAttr.MAX_DEST_RD_ATOMIC | QpAttr.DEST_QPN;

    private final RdmaCorePd pd;
    private final RdmaCoreContext context;
    final MemorySegment qp;
    private final QpType type;
    private final RdmaCoreCq sendCq, recvCq;
    private final RdmaCoreSrq srq;
    private final int qpn;
    private final Arena arena;
    private final MemorySegment sendWr, sendSges, recvWr, recvSges, badWr, queryAttr, queryInit, queryState, mwBind;
    private final int maxSendSge, maxRecvSge;
    /** Whether the device declares type 1 windows and its provider makes them ({@link RdmaCoreContext#windows()}). */
    private final boolean windows;
    /** A UD QP's largest message: its port's active MTU (port 1's until INIT gives the port). */
    private volatile long udMtu;
    /**
     * The port INIT gave (the last {@code IBV_QP_PORT} that {@code ibv_modify_qp} took; 1 before): an address vector
     * given without {@link QpAttr#PORT} is on this port, whose GID table its source GID index refers to.
     */
    private volatile int port = 1;
    private final MethodHandle postSendOp, postRecvOp;
    /** An iWARP QP (siw): the kernel's iWARP CM moves it; its state is what this provider knows ({@link #known}). */
    private final boolean iwarp;
    /** The inline data the device gave this QP ({@code cap.max_inline_data} it took): an INLINE post above is EINVAL. */
    private final int maxInline;
    /** The device's {@code max_sge_rd}: a READ with more SGEs is EINVAL at post (siw: 1). */
    private final int maxSgeRd;
    private volatile boolean closed;
    /** The posts and binds inside the provider, which {@link #close} waits out before it destroys the QP. */
    private final InUse inUse = new InUse();
    /**
     * The state this provider last moved the QP to (or the CM reported): Linux siw before 6.2 does not report the
     * state in {@code ibv_query_qp} (always 0, RESET), so on iWARP a RESET read after a transition out of it is
     * taken to be this.
     */
    private volatile QpState known = QpState.RESET;

    /**
     * What a QP needs besides its native {@code ibv_qp}, made before {@code ibv_create_qp} so that nothing which can
     * fail (a query, an allocation) runs after it: a QP whose Java object could not be made stayed created, its CQs,
     * SRQ and PD busy for good (found in review).
     *
     * @param dev       the device's attributes (one {@code ibv_query_device})
     * @param udMtu     a UD QP's largest message on port 1, else Long.MAX_VALUE
     * @param maxRecvSge the receive SGEs laid out: 1 for a QP on an SRQ, which has no receive queue of its own
     */
    private record Prepared(Arena arena, io.jrdma.verbs.DeviceAttr dev, long udMtu, int maxSendSge, int maxRecvSge,
                            MemorySegment sendWr, MemorySegment sendSges, MemorySegment recvWr,
                            MemorySegment recvSges, MemorySegment badWr, MemorySegment mwBind, MemorySegment queryAttr,
                            MemorySegment queryInit, MemorySegment queryState) {
        static Prepared of(RdmaCoreContext context, QpInitAttr attr, Arena arena) {
            io.jrdma.verbs.DeviceAttr dev = context.queryDevice();
            long udMtu = attr.type() == QpType.UD ? RdmaCoreQp.udMtu(context, 1) : Long.MAX_VALUE;
            int maxSendSge = attr.maxSendSge();
            int maxRecvSge = attr.srq() == null ? Math.max(1, attr.maxRecvSge()) : 1; // QpInitAttr: ignored with an SRQ
            MemorySegment sendWr = arena.allocate(Structs.IBV_SEND_WR);
            MemorySegment sendSges = arena.allocate(Structs.IBV_SGE.byteSize() * maxSendSge, 8);
            MemorySegment recvWr = arena.allocate(Structs.IBV_RECV_WR);
            MemorySegment recvSges = arena.allocate(Structs.IBV_SGE.byteSize() * maxRecvSge, 8);
            sendWr.set(ADDRESS, Structs.SWR_NEXT, MemorySegment.NULL);
            sendWr.set(ADDRESS, Structs.SWR_SG_LIST, sendSges);
            recvWr.set(ADDRESS, off(Structs.IBV_RECV_WR, "next"), MemorySegment.NULL);
            recvWr.set(ADDRESS, Structs.RWR_SG_LIST, recvSges);
            return new Prepared(arena, dev, udMtu, maxSendSge, maxRecvSge, sendWr, sendSges, recvWr, recvSges,
                    arena.allocate(ADDRESS), arena.allocate(Structs.IBV_MW_BIND), arena.allocate(IBV_QP_ATTR),
                    arena.allocate(IBV_QP_INIT_ATTR), IbvVerbs.callState(arena));
        }
    }

    /** Field stores only (and the QPN read from the native QP): nothing here can fail after ibv_create_qp. */
    private RdmaCoreQp(RdmaCorePd pd, MemorySegment qp, QpInitAttr attr, Prepared p, int maxInline) {
        this.pd = pd;
        this.context = pd.context();
        this.iwarp = context.device().transportType() == RdmaCoreDevice.TRANSPORT_IWARP;
        this.maxInline = maxInline;
        this.maxSgeRd = Math.max(1, p.dev().maxSgeRd());
        this.qp = qp.reinterpret(Structs.IBV_QP.byteSize());
        this.type = attr.type();
        this.windows = context.windows() && p.dev().supportsMw(io.jrdma.verbs.MwType.TYPE_1);
        this.sendCq = (RdmaCoreCq) attr.sendCq();
        this.recvCq = (RdmaCoreCq) attr.recvCq();
        this.srq = (RdmaCoreSrq) attr.srq();
        this.qpn = this.qp.get(JAVA_INT, Structs.QP_NUM);
        this.arena = p.arena();
        this.maxSendSge = p.maxSendSge();
        this.maxRecvSge = p.maxRecvSge();
        this.sendWr = p.sendWr();
        this.sendSges = p.sendSges();
        this.recvWr = p.recvWr();
        this.recvSges = p.recvSges();
        this.badWr = p.badWr();
        this.mwBind = p.mwBind();
        this.queryAttr = p.queryAttr();
        this.queryInit = p.queryInit();
        this.queryState = p.queryState();
        this.udMtu = p.udMtu();
        if (type == QpType.UD) {
            recvCq.hasUd();
        }
        this.postSendOp = context.ops().postSend;
        this.postRecvOp = context.ops().postRecv;
    }

    static RdmaCoreQp create(RdmaCorePd pd, QpInitAttr attr) {
        RdmaCoreContext ctx = pd.context();
        for (CompletionQueue cq : new CompletionQueue[]{attr.sendCq(), attr.recvCq()}) {
            if (!(cq instanceof RdmaCoreCq c) || c.context() != ctx) {
                throw new RdmaException(RdmaException.Errno.EINVAL, "the QP's CQs must be CQs of the same rdma-core"
                        + " context as its PD (" + ctx.device().name() + ")");
            }
            if (c.closed()) {
                // its native handle may name a newer CQ by now (the kernel reuses them): found in review
                throw new RdmaException(RdmaException.Errno.EINVAL, "the QP's CQ is closed: create the QP with open CQs");
            }
        }
        if (attr.srq() != null && (!(attr.srq() instanceof RdmaCoreSrq s) || s.pd().context() != ctx)) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the QP's SRQ must be an SRQ of the same rdma-core context");
        }
        if (attr.srq() != null && ((RdmaCoreSrq) attr.srq()).closed()) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the QP's SRQ is closed: create the QP with an open SRQ");
        }
        int qpType = switch (attr.type()) {
            case RC -> IBV_QPT_RC;
            case UC -> IBV_QPT_UC;
            case UD -> IBV_QPT_UD;
        };
        Arena arena = Arena.ofShared();
        MemorySegment qp = null;
        try {
            Prepared prepared = Prepared.of(ctx, attr, arena); // what can fail, before the QP exists
            MemorySegment init;
            int inline;
            try (Arena a = Arena.ofConfined()) {
                init = a.allocate(IBV_QP_INIT_ATTR);
                init.set(ADDRESS, off(IBV_QP_INIT_ATTR, "send_cq"), ((RdmaCoreCq) attr.sendCq()).cq);
                init.set(ADDRESS, off(IBV_QP_INIT_ATTR, "recv_cq"), ((RdmaCoreCq) attr.recvCq()).cq);
                init.set(ADDRESS, off(IBV_QP_INIT_ATTR, "srq"),
                        attr.srq() == null ? MemorySegment.NULL : ((RdmaCoreSrq) attr.srq()).srq);
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "cap.max_send_wr"), attr.maxSendWr());
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "cap.max_recv_wr"), attr.srq() == null ? attr.maxRecvWr() : 0);
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "cap.max_send_sge"), attr.maxSendSge());
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "cap.max_recv_sge"), attr.srq() == null ? attr.maxRecvSge() : 0);
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "cap.max_inline_data"), attr.maxInlineData());
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "qp_type"), qpType);
                init.set(JAVA_INT, off(IBV_QP_INIT_ATTR, "sq_sig_all"), attr.sqSigAll() ? 1 : 0);
                qp = createQp(ctx, pd, init, attr.maxInlineData());
                inline = init.get(JAVA_INT, off(IBV_QP_INIT_ATTR, "cap.max_inline_data"));
            }
            RdmaCoreQp q = new RdmaCoreQp(pd, qp, attr, prepared, inline);
            ctx.remember(q);
            return q;
        } catch (LibIbverbs.NativeCallException e) {
            arena.close();
            if (e.errno() == EOPNOTSUPP) {
                throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "ProtectionDomain.createQp of a " + attr.type()
                        + " QP: ibv_create_qp on " + ctx.device().name() + " failed (EOPNOTSUPP): the device has no "
                        + attr.type() + " QPs (queryDevice() lists the QP types it has)", e);
            }
            throw RdmaCoreProvider.toRdma(e);
        } catch (RuntimeException | Error e) {
            if (qp != null) { // nothing should fail after the create; if something did, the QP goes with it
                try {
                    ctx.verbs().destroyQp(qp);
                } catch (RuntimeException d) {
                    e.addSuppressed(d);
                }
            }
            arena.close();
            throw e;
        }
    }

    /**
     * {@code ibv_create_qp}; when the device refuses the inline size (EINVAL: siw takes at most 80 bytes, and
     * {@code QpInitAttr.rc} asks for 256), again with 16 bytes less, down to none (a refusal costs one system call
     * and creates nothing): the QP gets the largest multiple of 16 the device takes (siw: 80), which the context
     * remembers so that its next QPs start there. ibv_create_qp writes back the {@code cap} it gave: {@code init}'s
     * {@code cap.max_inline_data} is what the QP has.
     */
    private static MemorySegment createQp(RdmaCoreContext ctx, RdmaCorePd pd, MemorySegment init, int asked) {
        long at = off(IBV_QP_INIT_ATTR, "cap.max_inline_data");
        int inline = Math.min(asked, ctx.inlineCeiling());
        while (true) {
            init.set(JAVA_INT, at, inline);
            try {
                MemorySegment qp = ctx.verbs().createQp(pd.pd, init);
                if (inline < asked) {
                    ctx.inlineCeiling(inline);
                }
                if (init.get(JAVA_INT, at) < inline) {
                    init.set(JAVA_INT, at, inline); // a library that does not write the cap back: what was taken
                }
                return qp;
            } catch (LibIbverbs.NativeCallException e) {
                if (e.errno() != EINVAL || inline == 0) {
                    throw e;
                }
                inline = inline <= 16 ? 0 : (inline - 1) / 16 * 16;
            }
        }
    }

    /** {@return the inline data a post may carry on this QP: what the device took at creation} */
    int maxInlineData() {
        return maxInline;
    }

    @Override
    public int qpn() {
        return qpn;
    }

    @Override
    public QpType type() {
        return type;
    }

    /** {@return the state the device reports ({@code ibv_query_qp} with {@code IBV_QP_STATE})} */
    @Override
    public synchronized QpState state() {
        if (closed) {
            return QpState.ERROR;
        }
        int rc = context.verbs().queryQp(queryState, qp, queryAttr, QpAttr.STATE, queryInit);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_query_qp failed (errno " + rc + ")");
        }
        QpState s = qpState(queryAttr.get(JAVA_INT, off(IBV_QP_ATTR, "qp_state")));
        return s == QpState.RESET && context.device().transportType() == RdmaCoreDevice.TRANSPORT_IWARP ? known : s;
    }

    /** Records a state the kernel moved the QP to on its own (iWARP: RTS when rdma_cm reports ESTABLISHED). */
    void assumeState(QpState s) {
        known = s;
    }

    private static QpState qpState(int s) {
        QpState[] v = QpState.values();
        return s >= 0 && s < v.length ? v[s] : QpState.ERROR;
    }

    @Override
    public RdmaCorePd pd() {
        return pd;
    }

    @Override
    public CompletionQueue sendCq() {
        return sendCq;
    }

    @Override
    public CompletionQueue recvCq() {
        return recvCq;
    }

    @Override
    public SharedReceiveQueue srq() {
        return srq;
    }

    /**
     * {@code ibv_modify_qp} with the attributes set in {@code attr}: the mask bits of {@link QpAttr} are the
     * {@code IBV_QP_*} bits; an address vector becomes a global {@code ibv_ah_attr} (RoCE and iWARP have no
     * LIDs) on the QP's port: {@code attr.portNum()} when the request sets it, else the port INIT gave (as
     * perftest and ibv_rc_pingpong set {@code ah_attr.port_num} to the QP's port). On RoCE its source GID index is
     * checked against that port's GID table.
     *
     * @throws RdmaException EINVAL for a port outside 1..phys_port_cnt or a source GID index that the QP's port's table
     *                       does not have (both before any native call, naming what is wrong), else the errno of
     *                       ibv_modify_qp (EINVAL for a transition or attribute the device refuses)
     */
    @Override
    public synchronized void modify(QpAttr attr) {
        requireOpen();
        int mask = attr.mask();
        if ((mask & QpAttr.PORT) != 0) {
            context.checkPort(attr.portNum()); // EINVAL naming 1..phys_port_cnt, before any native call
        }
        int portNum = (mask & QpAttr.PORT) != 0 ? attr.portNum() : port;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(IBV_QP_ATTR);
            s.set(JAVA_INT, off(IBV_QP_ATTR, "qp_state"), attr.state().ordinal());
            s.set(JAVA_INT, off(IBV_QP_ATTR, "path_mtu"), attr.pathMtu().code());
            s.set(JAVA_INT, off(IBV_QP_ATTR, "qkey"), attr.qkey());
            s.set(JAVA_INT, off(IBV_QP_ATTR, "rq_psn"), attr.rqPsn());
            s.set(JAVA_INT, off(IBV_QP_ATTR, "sq_psn"), attr.sqPsn());
            s.set(JAVA_INT, off(IBV_QP_ATTR, "dest_qp_num"), attr.destQpn());
            s.set(JAVA_INT, off(IBV_QP_ATTR, "qp_access_flags"), attr.accessFlags() & RdmaCorePd.IBV_ACCESS_BITS);
            s.set(JAVA_SHORT, off(IBV_QP_ATTR, "pkey_index"), (short) attr.pkeyIndex());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "max_rd_atomic"), (byte) attr.maxRdAtomic());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "max_dest_rd_atomic"), (byte) attr.maxDestRdAtomic());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "min_rnr_timer"), (byte) attr.minRnrTimer());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "port_num"), (byte) attr.portNum());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "timeout"), (byte) attr.timeout());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "retry_cnt"), (byte) attr.retryCnt());
            s.set(JAVA_BYTE, off(IBV_QP_ATTR, "rnr_retry"), (byte) attr.rnrRetry());
            if ((mask & QpAttr.AV) != 0) {
                AddressVector av = attr.av();
                if (av == null) {
                    throw new RdmaException(RdmaException.Errno.EINVAL, "the AV attribute is set without an address vector");
                }
                if (av.udpPort() != DeviceOptions.ROCE_V2_PORT && context.device().transportType() != RdmaCoreDevice.TRANSPORT_IWARP) {
                    throw new RdmaException(RdmaException.Errno.EINVAL, "rdma-core devices send RoCEv2 to UDP port "
                            + DeviceOptions.ROCE_V2_PORT + " only, not " + av.udpPort());
                }
                if (!iwarp) { // the source GID: that index of this QP's port's table (iWARP QPs take no address here)
                    context.gid(portNum, av.sgidIndex());
                }
                RdmaCorePd.writeAhAttr(s, off(IBV_QP_ATTR, "ah_attr"), av.dgid().raw(), 0, av.sgidIndex(),
                        av.hopLimit(), av.trafficClass(), 0, portNum);
            }
            QpState from = (mask & QpAttr.STATE) != 0 ? state() : null;
            if (iwarp && from != null) {
                checkIwarpTransition(from, attr.state(), mask);
            }
            int rc = context.verbs().modifyQp(qp, s, mask);
            if (rc != 0) {
                String missing = from == null ? "" : missing(type, from, attr.state(), mask);
                throw new RdmaException(RdmaException.Errno.of(rc), "ibv_modify_qp of QP 0x" + Integer.toHexString(qpn)
                        + " (" + type + ") " + (from == null ? "" : "from " + from + " ") + "to " + attr.state()
                        + " with mask 0x" + Integer.toHexString(mask) + " failed (errno " + rc + ")"
                        + (missing.isEmpty() ? ": the device refuses the transition or one of the attributes"
                        : ": the transition requires " + missing + ", which the request does not set"));
            }
            if ((mask & QpAttr.DEST_QPN) != 0 && type != QpType.UD) {
                context.setPeer(qpn, attr.destQpn());
            }
            if ((mask & QpAttr.STATE) != 0) {
                known = attr.state();
            }
            if ((mask & QpAttr.PORT) != 0) {
                port = attr.portNum();
                if (type == QpType.UD) {
                    udMtu = udMtu(context, port);
                }
            }
        }
    }

    /** {@return a UD message's limit on port {@code port}: its active MTU} */
    private static long udMtu(RdmaCoreContext context, int port) {
        return Mtu.ofCode(Math.max(1, Math.min(5, context.portInfo(port).activeMtu()))).bytes();
    }

    /**
     * On iWARP the provider applies the verbs' QP state table itself (the kernel's {@code ib_modify_qp_is_ok}, which
     * Linux siw does not call: siw takes RESET to RTR, or RTS to RESET, and stays where it was): a transition the
     * table lacks, or one without its required attributes, is EINVAL naming what is wrong. A connected QP (RTS, SQD,
     * SQE) or one in ERROR cannot go back to RESET on siw, whose only way out of RTS is ERROR, which it never
     * leaves: that is EINVAL saying so.
     */
    private void checkIwarpTransition(QpState from, QpState to, int mask) {
        if (to == QpState.ERROR || (to == QpState.RESET && (from == QpState.RESET || from == QpState.INIT
                || from == QpState.RTR))) {
            return;
        }
        if (to == QpState.RESET) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "ibv_modify_qp of QP 0x" + Integer.toHexString(qpn)
                    + " from " + from + " to RESET: an iWARP QP of " + context.device().name() + " cannot go back to"
                    + " RESET once connected or failed (Linux siw leaves RTS only to ERROR, and never leaves ERROR):"
                    + " move it to ERROR, destroy it and create another");
        }
        boolean valid = switch (from) {
            case RESET -> to == QpState.INIT;
            case INIT -> to == QpState.INIT || to == QpState.RTR;
            case RTR -> to == QpState.RTS;
            case RTS -> to == QpState.RTS || to == QpState.SQD;
            case SQD -> to == QpState.RTS || to == QpState.SQD;
            case SQE -> to == QpState.RTS;
            case ERROR -> false;
        };
        if (!valid) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "ibv_modify_qp of QP 0x" + Integer.toHexString(qpn)
                    + " (" + type + ") from " + from + " to " + to + ": the verbs have no such transition (RESET ->"
                    + " INIT -> RTR -> RTS; on iWARP rdma_cm moves the QP to RTS when it connects)");
        }
        String missing = missing(type, from, to, mask);
        if (!missing.isEmpty()) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "ibv_modify_qp of QP 0x" + Integer.toHexString(qpn)
                    + " (" + type + ") from " + from + " to " + to + " with mask 0x" + Integer.toHexString(mask)
                    + ": the transition requires " + missing + ", which the request does not set");
        }
    }

    /**
     * {@code ibv_modify_qp} with a native {@code struct ibv_qp_attr} as {@code rdma_init_qp_attr} fills it (the
     * connection manager's attributes, applied as librdmacm applies them to a QP of its own); remembers the
     * destination QPN and the port (for an address vector given later without one) when the mask has them.
     *
     * @param attr a {@code struct ibv_qp_attr}
     * @param mask its {@code IBV_QP_*} bits
     * @return 0, or the errno of ibv_modify_qp
     */
    synchronized int modifyNative(MemorySegment attr, int mask) {
        requireOpen();
        int rc = context.verbs().modifyQp(qp, attr, mask);
        if (rc == 0 && (mask & QpAttr.DEST_QPN) != 0 && type != QpType.UD) {
            context.setPeer(qpn, attr.get(JAVA_INT, off(IBV_QP_ATTR, "dest_qp_num")));
        }
        if (rc == 0 && (mask & QpAttr.STATE) != 0) {
            known = qpState(attr.get(JAVA_INT, off(IBV_QP_ATTR, "qp_state")));
        }
        if (rc == 0 && (mask & QpAttr.PORT) != 0) { // rdma_cm's port for the QP (cm_id->port_num)
            port = Byte.toUnsignedInt(attr.get(JAVA_BYTE, off(IBV_QP_ATTR, "port_num")));
        }
        return rc;
    }

    /**
     * {@return the attributes a transition requires (the InfiniBand specification's table, as the kernel's
     * {@code ib_modify_qp_is_ok} checks it) that {@code mask} lacks, by their {@code IBV_QP_*} names; empty when none
     * is missing or the transition is not one with required attributes}
     */
    static String missing(QpType type, QpState from, QpState to, int mask) {
        int required = 0;
        if (from == QpState.RESET && to == QpState.INIT) {
            required = QpAttr.PKEY_INDEX | QpAttr.PORT | (type == QpType.UD ? QpAttr.QKEY : QpAttr.ACCESS_FLAGS);
        } else if (from == QpState.INIT && to == QpState.RTR) {
            required = switch (type) {
                case RC -> QpAttr.AV | QpAttr.PATH_MTU | QpAttr.DEST_QPN | QpAttr.RQ_PSN | QpAttr.MAX_DEST_RD_ATOMIC
                        | QpAttr.MIN_RNR_TIMER;
                case UC -> QpAttr.AV | QpAttr.PATH_MTU | QpAttr.DEST_QPN | QpAttr.RQ_PSN;
                case UD -> 0;
            };
        } else if (from == QpState.RTR && to == QpState.RTS) {
            required = type == QpType.RC ? QpAttr.SQ_PSN | QpAttr.TIMEOUT | QpAttr.RETRY_CNT | QpAttr.RNR_RETRY
                    | QpAttr.MAX_QP_RD_ATOMIC : QpAttr.SQ_PSN;
        }
        int lacking = required & ~mask;
        StringBuilder b = new StringBuilder();
        String[] names = {"IBV_QP_STATE", "IBV_QP_CUR_STATE", "IBV_QP_EN_SQD_ASYNC_NOTIFY", "IBV_QP_ACCESS_FLAGS",
                "IBV_QP_PKEY_INDEX", "IBV_QP_PORT", "IBV_QP_QKEY", "IBV_QP_AV", "IBV_QP_PATH_MTU", "IBV_QP_TIMEOUT",
                "IBV_QP_RETRY_CNT", "IBV_QP_RNR_RETRY", "IBV_QP_RQ_PSN", "IBV_QP_MAX_QP_RD_ATOMIC", "IBV_QP_ALT_PATH",
                "IBV_QP_MIN_RNR_TIMER", "IBV_QP_SQ_PSN", "IBV_QP_MAX_DEST_RD_ATOMIC", "IBV_QP_PATH_MIG_STATE",
                "IBV_QP_CAP", "IBV_QP_DEST_QPN"};
        for (int i = 0; i < names.length; i++) {
            if ((lacking & (1 << i)) != 0) {
                b.append(b.isEmpty() ? "" : ", ").append(names[i]);
            }
        }
        return b.toString();
    }

    /** {@return every attribute the device reports ({@code ibv_query_qp})} */
    @Override
    public synchronized QpAttr query() {
        requireOpen();
        MemorySegment s = queryAttr;
        s.fill((byte) 0);
        int rc = context.verbs().queryQp(queryState, qp, s, QUERY_ALL, queryInit);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_query_qp failed (errno " + rc + ")");
        }
        int mtu = s.get(JAVA_INT, off(IBV_QP_ATTR, "path_mtu"));
        boolean iwarp = context.device().transportType() == RdmaCoreDevice.TRANSPORT_IWARP;
        QpState st = qpState(s.get(JAVA_INT, off(IBV_QP_ATTR, "qp_state")));
        int dest = s.get(JAVA_INT, off(IBV_QP_ATTR, "dest_qp_num"));
        if (iwarp) { // Linux siw 6.1 reports neither the state nor the peer's QPN: what the provider knows, as state()
            st = st == QpState.RESET ? known : st;
            dest = dest == 0 ? Math.max(0, context.peerOf(qpn)) : dest;
        }
        QpAttr a = new QpAttr().state(st)
                .accessFlags(s.get(JAVA_INT, off(IBV_QP_ATTR, "qp_access_flags")))
                .pkeyIndex(Short.toUnsignedInt(s.get(JAVA_SHORT, off(IBV_QP_ATTR, "pkey_index"))))
                .portNum(u8(s, "port_num"))
                .pathMtu(mtu >= 1 && mtu <= 5 ? Mtu.ofCode(mtu) : Mtu.MTU_1024)
                .timeout(Math.min(31, u8(s, "timeout"))).retryCnt(Math.min(7, u8(s, "retry_cnt")))
                .rnrRetry(Math.min(7, u8(s, "rnr_retry"))).rqPsn(s.get(JAVA_INT, off(IBV_QP_ATTR, "rq_psn")))
                .sqPsn(s.get(JAVA_INT, off(IBV_QP_ATTR, "sq_psn"))).maxRdAtomic(u8(s, "max_rd_atomic"))
                .maxDestRdAtomic(u8(s, "max_dest_rd_atomic")).minRnrTimer(Math.min(31, u8(s, "min_rnr_timer")))
                .destQpn(dest)
                .qkey(s.get(JAVA_INT, off(IBV_QP_ATTR, "qkey")));
        long ah = off(IBV_QP_ATTR, "ah_attr");
        byte[] dgid = s.asSlice(ah, 16).toArray(JAVA_BYTE);
        if (type != QpType.UD && !java.util.Arrays.equals(dgid, new byte[16])) {
            a.av(new AddressVector(Gid.of(dgid),
                    Byte.toUnsignedInt(s.get(JAVA_BYTE, ah + off(Structs.IBV_AH_ATTR, "grh.sgid_index"))),
                    Byte.toUnsignedInt(s.get(JAVA_BYTE, ah + off(Structs.IBV_AH_ATTR, "grh.hop_limit"))),
                    Byte.toUnsignedInt(s.get(JAVA_BYTE, ah + off(Structs.IBV_AH_ATTR, "grh.traffic_class"))),
                    DeviceOptions.ROCE_V2_PORT));
        }
        return a;
    }

    private static int u8(MemorySegment s, String field) {
        return Byte.toUnsignedInt(s.get(JAVA_BYTE, off(IBV_QP_ATTR, field)));
    }

    private void requireOpen() {
        if (closed) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "QP 0x" + Integer.toHexString(qpn) + " is destroyed");
        }
    }

    /**
     * Writes {@code wr} into the QP's native {@code ibv_send_wr} and calls {@code ops.post_send}.
     *
     * @return 0, or the provider's errno (ENOMEM full, EINVAL malformed or wrong state), EINVAL for more SGEs
     *         than the QP was created with, a UD request without an address handle of this provider or a
     *         destroyed QP, a BIND_MW of anything but a type 2 window of this context with a region; EPERM for a
     *         BIND_MW of a region of another PD; EOPNOTSUPP for REG_MR (no fast registration in libibverbs)
     */
    @Override
    public int postSend(SendWorkRequest wr) {
        if (!inUse.enter()) {
            return EINVAL; // closing or closed
        }
        try {
            return send(wr);
        } finally {
            inUse.exit();
        }
    }

    private int send(SendWorkRequest wr) {
        WrOpcode op = wr.opcode();
        int code = WR_OPCODE[op.ordinal()];
        if (code < 0) {
            return EOPNOTSUPP;
        }
        if (op == WrOpcode.BIND_MW) {
            return postBind(wr, code);
        }
        if (iwarp) {
            QpState st = known;
            if (st == QpState.ERROR) {
                // Linux siw flushes its user-mapped send queue only at the move to ERROR: a request posted later would
                // sit there for good; the IBA flushes it, so this provider completes it WR_FLUSH_ERR itself
                return sendCq.owe(wr.wrId(), io.jrdma.verbs.WcOpcode.of(op), qpn);
            }
            if (st != QpState.RTS && st != QpState.SQD) {
                return EINVAL; // RESET, INIT, RTR: siw would keep the request in its ring and run it once connected
            }
        }
        int n = wr.numSge();
        if (n > maxSendSge) {
            return EINVAL;
        }
        if (op == WrOpcode.RDMA_READ && n > maxSgeRd) {
            return EINVAL; // the device's max_sge_rd (siw: 1): siw would fill the first SGE only and complete SUCCESS
        }
        if ((wr.flags() & io.jrdma.verbs.SendFlags.INLINE) != 0 && wr.totalLength() > maxInline) {
            return EINVAL; // more inline data than the QP took at creation (maxInlineData)
        }
        if (type == QpType.UC && op.isReadOrAtomic()) {
            return EINVAL; // UC has no READ and no atomics (rxe would take them and fail the QP later)
        }
        if (type == QpType.UD) {
            if (op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM) {
                return EINVAL; // a UD QP sends, nothing else
            }
            if (wr.totalLength() > udMtu) {
                return EMSGSIZE; // one datagram: at most the path MTU (rxe would send it anyway)
            }
        }
        MemorySegment w = sendWr;
        for (int i = 0; i < n; i++) {
            long at = (long) i * 16;
            sendSges.set(JAVA_LONG, at, wr.sgeAddr(i));
            sendSges.set(JAVA_INT, at + 8, wr.sgeLength(i));
            sendSges.set(JAVA_INT, at + 12, wr.sgeLkey(i));
        }
        w.set(JAVA_LONG, Structs.SWR_WR_ID, wr.wrId());
        w.set(JAVA_INT, Structs.SWR_NUM_SGE, n);
        w.set(JAVA_INT, Structs.SWR_OPCODE, code);
        w.set(JAVA_INT, Structs.SWR_SEND_FLAGS, wr.flags());
        if (op.hasImm()) {
            w.set(RdmaCoreCq.JAVA_INT_BE, Structs.SWR_IMM, wr.imm());
        } else {
            w.set(JAVA_INT, Structs.SWR_IMM, wr.imm()); // invalidate_rkey (SEND_WITH_INV, LOCAL_INV): host order
        }
        if (type == QpType.UD) {
            if (!(wr.ah() instanceof RdmaCoreAh ah) || ah.closed()) {
                return EINVAL;
            }
            w.set(ADDRESS, Structs.SWR_UD_AH, ah.ah);
            w.set(JAVA_INT, Structs.SWR_UD_REMOTE_QPN, wr.remoteQpn());
            w.set(JAVA_INT, Structs.SWR_UD_REMOTE_QKEY, wr.remoteQkey());
        } else if (op.isAtomic()) {
            w.set(JAVA_LONG, Structs.SWR_ATOMIC_REMOTE_ADDR, wr.remoteAddr());
            w.set(JAVA_LONG, Structs.SWR_ATOMIC_COMPARE_ADD, wr.compareAdd());
            w.set(JAVA_LONG, Structs.SWR_ATOMIC_SWAP, wr.swap());
            w.set(JAVA_INT, Structs.SWR_ATOMIC_RKEY, wr.rkey());
        } else {
            w.set(JAVA_LONG, Structs.SWR_RDMA_REMOTE_ADDR, wr.remoteAddr());
            w.set(JAVA_INT, Structs.SWR_RDMA_RKEY, wr.rkey());
        }
        int rc;
        try {
            rc = (int) postSendOp.invokeExact(qp, w, badWr);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        return rc < 0 ? -rc : rc;
    }

    /**
     * A type 2 window's bind ({@code IBV_WR_BIND_MW} with {@code bind_mw}): posted, then the window's native
     * rkey becomes the request's, as rxe's provider reads {@code mw->rkey} as the window's current key when it
     * builds a bind; a bind that completes in error gives the old key back ({@link PendingBinds}).
     */
    private int postBind(SendWorkRequest wr, int code) {
        if (type == QpType.UD || !(wr.mw() instanceof RdmaCoreMw mw) || mw.closed()
                || mw.type() != io.jrdma.verbs.MwType.TYPE_2 || mw.pd().context() != context
                || !(wr.bindMr() instanceof RdmaCoreMr mr) || mr.closed()) {
            // UD has no binds; a type 1 window binds with bindMw; rxe's provider reads the region (a deregistered
            // one's native ibv_mr is freed memory: found in review)
            return EINVAL;
        }
        if (mr.pd() != mw.pd()) {
            return EPERM;
        }
        MemorySegment w = sendWr;
        w.set(JAVA_LONG, Structs.SWR_WR_ID, wr.wrId());
        w.set(JAVA_INT, Structs.SWR_NUM_SGE, 0);
        w.set(JAVA_INT, Structs.SWR_OPCODE, code);
        w.set(JAVA_INT, Structs.SWR_SEND_FLAGS, wr.flags());
        w.set(JAVA_INT, Structs.SWR_IMM, 0); // rxe's provider refuses a bind with imm_data (EINVAL): clear the last post's
        w.set(ADDRESS, Structs.SWR_BIND_MW_MW, mw.mw);
        w.set(JAVA_INT, Structs.SWR_BIND_MW_RKEY, wr.mwRkey());
        w.set(ADDRESS, Structs.SWR_BIND_MW_MR, mr.mr);
        w.set(JAVA_LONG, Structs.SWR_BIND_MW_ADDR, wr.bindAddr());
        w.set(JAVA_LONG, Structs.SWR_BIND_MW_LENGTH, wr.bindLength());
        w.set(JAVA_INT, Structs.SWR_BIND_MW_ACCESS, wr.bindAccess() & RdmaCorePd.IBV_ACCESS_BITS);
        int old = mw.rkey();
        int rc;
        try {
            rc = (int) postSendOp.invokeExact(qp, w, badWr);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (rc != 0) {
            return rc < 0 ? -rc : rc;
        }
        mw.setKey(wr.mwRkey());
        context.binds.add(qpn, wr.wrId(), mw, old, wr.mwRkey());
        return 0;
    }

    /**
     * Binds a type 1 window ({@code ops.bind_mw} with this QP's native {@code struct ibv_mw_bind}, after the checks
     * of verbs.h's static inline {@code ibv_bind_mw}); the provider gives the window its next key at once.
     *
     * @return 0, or EINVAL (a type 2 or closed window, a window or region of another context, no region, a UD QP,
     *         a destroyed QP), EPERM (a region of another PD than the window's), or the provider's errno
     */
    @Override
    public int bindMw(io.jrdma.verbs.MemoryWindow window, io.jrdma.verbs.MwBind bind) {
        if (!inUse.enter()) {
            return EINVAL; // closing or closed
        }
        try {
            return bind(window, bind);
        } finally {
            inUse.exit();
        }
    }

    private int bind(io.jrdma.verbs.MemoryWindow window, io.jrdma.verbs.MwBind bind) {
        if (!windows) {
            return EOPNOTSUPP; // as the TCK's UnsupportedVerbsTck asks (siw0 answered EINVAL before, 035a91e)
        }
        if (type == QpType.UD || !(window instanceof RdmaCoreMw mw) || mw.closed()
                || mw.type() != io.jrdma.verbs.MwType.TYPE_1 || mw.pd().context() != context) {
            return EINVAL;
        }
        if (!(bind.mr() instanceof RdmaCoreMr mr) || mr.closed()) {
            // rxe's provider reads the region's lkey: a bind needs one (bind a zero length to unbind), and not a
            // deregistered one, whose native ibv_mr is freed memory (found in review)
            return EINVAL;
        }
        if (mr.pd() != mw.pd()) {
            return EPERM;
        }
        MemorySegment b = mwBind;
        b.set(JAVA_LONG, Structs.MWB_WR_ID, bind.wrId());
        b.set(JAVA_INT, Structs.MWB_SEND_FLAGS, bind.flags());
        b.set(ADDRESS, Structs.MWB_MR, mr.mr);
        b.set(JAVA_LONG, Structs.MWB_ADDR, bind.addr());
        b.set(JAVA_LONG, Structs.MWB_LENGTH, bind.length());
        b.set(JAVA_INT, Structs.MWB_ACCESS, bind.access() & RdmaCorePd.IBV_ACCESS_BITS);
        int rc;
        try {
            rc = (int) context.ops().bindMw.invokeExact(qp, mw.mw, b);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        return rc < 0 ? -rc : rc;
    }

    /**
     * Writes {@code wr} into the QP's native {@code ibv_recv_wr} and calls {@code ops.post_recv}.
     *
     * @return 0, or the provider's errno; EINVAL for more SGEs than the QP was created with, a QP with an SRQ,
     *         or a destroyed QP
     */
    @Override
    public int postRecv(RecvWorkRequest wr) {
        if (srq != null || !inUse.enter()) {
            return EINVAL; // a QP on an SRQ has no receive queue; closing or closed
        }
        try {
            return receive(wr);
        } finally {
            inUse.exit();
        }
    }

    private int receive(RecvWorkRequest wr) {
        if (iwarp) {
            QpState st = known;
            if (st == QpState.ERROR) {
                return recvCq.owe(wr.wrId(), io.jrdma.verbs.WcOpcode.RECV, qpn); // as postSend: siw would never flush it
            }
            if (st == QpState.RESET) {
                return EINVAL;
            }
        }
        int n = wr.numSge();
        if (n > maxRecvSge) {
            return EINVAL;
        }
        writeRecv(wr, recvWr, recvSges, n);
        int rc;
        try {
            rc = (int) postRecvOp.invokeExact(qp, recvWr, badWr);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        return rc < 0 ? -rc : rc;
    }

    /** Writes a receive request into a native {@code ibv_recv_wr} whose {@code sg_list} is {@code sges}. */
    static void writeRecv(RecvWorkRequest wr, MemorySegment native_, MemorySegment sges, int n) {
        for (int i = 0; i < n; i++) {
            long at = (long) i * 16;
            sges.set(JAVA_LONG, at, wr.sgeAddr(i));
            sges.set(JAVA_INT, at + 8, wr.sgeLength(i));
            sges.set(JAVA_INT, at + 12, wr.sgeLkey(i));
        }
        native_.set(JAVA_LONG, Structs.RWR_WR_ID, wr.wrId());
        native_.set(JAVA_INT, Structs.RWR_NUM_SGE, n);
    }

    /**
     * Destroys the QP ({@code ibv_destroy_qp}); a second close does nothing. A post or bind on another thread that
     * is inside the provider is waited out first (the destroy frees the {@code ibv_qp} and unmaps its queues); one
     * that comes later returns EINVAL ({@link InUse}).
     *
     * @throws RdmaException with the errno of ibv_destroy_qp (the QP then stays open)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        inUse.close(); // posts and binds from now on return EINVAL; those inside the provider have left
        int rc = context.verbs().destroyQp(qp);
        if (rc != 0) {
            inUse.reopen();
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_destroy_qp failed (errno " + rc + ")");
        }
        closed = true;
        context.forget(this);
        context.setPeer(qpn, -1);
        // no post is inside and none can enter: the native requests go with the arena (a post that checked a
        // volatile flag and then called the provider could reach the freed QP: found in review)
        arena.close();
    }

    @Override
    public String toString() {
        return "RdmaCoreQp{" + type + ", qpn=0x" + Integer.toHexString(qpn) + '}';
    }
}

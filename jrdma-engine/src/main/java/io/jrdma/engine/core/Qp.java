package io.jrdma.engine.core;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A queue pair as the core sees it, whatever its transport: its send and receive queues, its
 * attributes and its state. The posting side (application threads) writes send/receive queue
 * slots and publishes them with release stores of {@code sqProducer}/{@code rqProducer};
 * everything else belongs to the engine thread, and every state change runs there (modify
 * through {@link Context#control}), checked against the QP type's {@link QpStateTable}.
 *
 * <p>A transport makes its QPs ({@link Transport#newQp}) as a subclass that adds the state of
 * its own roles: {@code roce.RoceQp} (requester, completer, responder), {@code iwarp.IwarpQp} (the stream).
 */
public abstract class Qp implements QueuePair {
    private static final VarHandle SQ_PRODUCER;
    private static final VarHandle SQ_CONSUMER;
    private static final VarHandle RQ_PRODUCER;
    private static final VarHandle RQ_CONSUMER;
    private static final VarHandle DOORBELL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            SQ_PRODUCER = l.findVarHandle(Qp.class, "sqProducer", long.class);
            SQ_CONSUMER = l.findVarHandle(Qp.class, "sqConsumer", long.class);
            RQ_PRODUCER = l.findVarHandle(Qp.class, "rqProducer", long.class);
            RQ_CONSUMER = l.findVarHandle(Qp.class, "rqConsumer", long.class);
            DOORBELL = l.findVarHandle(Qp.class, "doorbell", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public final Context context;
    public final Pd pd;
    public final int qpn;
    public final Cq sendCq;
    public final Cq recvCq;
    public final QpInitAttr init;
    /** Which modify_qp transitions this QP's type allows, with which attributes */
    final QpStateTable stateTable;
    /** The QP's type, from its creation attributes. */
    public final QpType type;
    private final Arena arena = Arena.ofShared();

    // ---- send queue (producer: poster; consumer: completer) ----
    public final Wqe[] sq;
    public final int sqMask;
    @SuppressWarnings("unused")
    private long padA0, padA1, padA2, padA3, padA4, padA5, padA6;
    long sqProducer;
    @SuppressWarnings("unused")
    private long padB0, padB1, padB2, padB3, padB4, padB5, padB6;
    public long sqConsumer;
    // ---- receive queue (producer: poster; consumer: responder) ----
    public final RecvWqe[] rq;
    public final int rqMask;
    long rqProducer;
    public long rqConsumer;
    public int doorbell;
    /** The shared receive queue this QP takes its receives from instead of {@link #rq}, or null. */
    public final Srq srq;
    /**
     * The PD the lkeys of this QP's receives are checked against: the SRQ's when it has one (the receive
     * was posted to the SRQ, as siw checks), else its own.
     */
    public final Pd recvPd;
    /** The SRQ receive this QP took for the message in progress (a copy: the SRQ's slot is free at once). */
    private final RecvWqe srqRecv;
    private boolean holdingSrqRecv;
    /** QP_LAST_WQE_REACHED was raised since the QP entered ERROR (engine thread). */
    private boolean lastWqeRaised;
    /** COMM_EST was raised since the QP entered RTR (engine thread). */
    private boolean commEstRaised;
    /**
     * A request packet reached this QP since it last entered RTR: IBA's "communication established", which a
     * connection manager that moved the QP on to RTS before its peer confirmed reads (engine thread writes it).
     */
    private volatile boolean requestSeen;

    // ---- attributes (written on the engine thread by modify) ----
    public volatile QpState state = QpState.RESET;
    /** this QP's slot in the context's counters ({@link Counters#increment(long, QpCounter)}); engine thread writes it */
    public long stats;
    public int accessFlags;
    public int pkeyIndex;
    public Mtu mtu = Mtu.MTU_1024;
    public int mtuBytes = 1024;
    public int destQpn;
    public int timeout = 14;
    public int retryCnt = 7;
    public int rnrRetry = 7;
    public int minRnrTimer = 12;
    public int maxRdAtomic = 1;
    public int maxDestRdAtomic = 1;
    /** the first PSN of the send queue and the first expected on receive, as given to modify (SQ_PSN, RQ_PSN) */
    public int sqPsn;
    public int rqPsn;
    /** UD: the Q_Key (IBA 10.2.4.2), checked against each arriving datagram's DETH and sent when a WR asks for it */
    public int qkey;
    public AddressVector av;
    /** Where the QP's packets leave from (the link's path to {@link #remote}; its port may not be the GID's). */
    public Endpoint local;
    /** The local endpoint of the source GID (the address vector's sgid index). */
    Endpoint gidEndpoint;
    public Endpoint remote;

    /**
     * The work-request opcodes ({@code 1 << WrOpcode.ordinal()}) the transport cannot carry on this QP: a post of
     * one returns EOPNOTSUPP (iWARP: immediate data and atomics unless the peer speaks jrdma's extensions;
     * docs/iwarp-design.md). Written by the transport on the control path before the volatile write of
     * {@link #state} to RTS, read by posters after reading the state.
     */
    public int refusedOps;

    /** {@link #executeAtPost(boolean)}'s setting (shared memory's INVOKER QPs) */
    private boolean executeAtPost;

    /**
     * The opcodes ({@code 1 << WrOpcode.ordinal()}) {@link #postSend}'s short path may hand to {@link Engine#postDirect}
     * on this QP: {@link #DIRECT_OPS} less those its type does not carry (UC: no READ, atomics or SEND with
     * Invalidate; UD: none, as an address handle needs checks of its own); 0 when the QP does not execute at post
     * or takes no SGE. Set with {@link #executeAtPost(boolean)}.
     */
    private int directOps;

    /**
     * The requests a post may hand to {@link Engine#postDirect} (one SGE, some bytes, on a QP that executes at
     * post): the one-sided ones, which a transport with {@link Transport#executeDirect} completes in the post, and
     * the SENDs, which it sends in the post and keeps as the send queue's head WQE ({@link #keepDirect}) until
     * their answer comes.
     */
    private static final int DIRECT_OPS = 1 << WrOpcode.RDMA_WRITE.ordinal() | 1 << WrOpcode.RDMA_READ.ordinal()
            | 1 << WrOpcode.ATOMIC_CMP_AND_SWP.ordinal() | 1 << WrOpcode.ATOMIC_FETCH_AND_ADD.ordinal()
            | 1 << WrOpcode.SEND.ordinal() | 1 << WrOpcode.SEND_WITH_IMM.ordinal() | 1 << WrOpcode.SEND_WITH_INV.ordinal();

    /**
     * Set by the transport when the QP is made (INVOKER contexts only): a post runs the send queue at once in the
     * posting thread ({@link Engine#executeAtPost}) instead of ringing the doorbell, and a request of one SGE may be
     * executed from the work request itself ({@link Engine#postDirect}). Shared memory sets it: its WRITE, READ and
     * atomics complete inside the post.
     */
    protected final void executeAtPost(boolean on) {
        executeAtPost = on;
        int carried = type == QpType.RC ? DIRECT_OPS
                : type == QpType.UC ? DIRECT_OPS & (1 << WrOpcode.RDMA_WRITE.ordinal() | 1 << WrOpcode.SEND.ordinal()
                        | 1 << WrOpcode.SEND_WITH_IMM.ordinal()) : 0;
        directOps = on && init.maxSendSge() >= 1 ? carried : 0;
    }

    /**
     * A hint for {@link #postSend}, written by the engine's thread, read by the posting one: the send queue position up
     * to which the transport has every request under way with nothing else to do for it but its answer, so that a
     * SEND may go straight after them ({@link Transport#directBehind}, which decides, under the engine's claim); -1:
     * none (the transport keeps no such position).
     */
    public long sqUnderWay = -1;

    // ---- engine scheduling ----
    public boolean active;
    public boolean destroyed;
    private boolean closing;

    /**
     * Makes the queues; the transport's subclass adds its roles' state.
     *
     * @param context the device context
     * @param pd      the protection domain
     * @param qpn     the QP number, unused in the context
     * @param init    the creation attributes (checked by the PD)
     * @param sendCq  the send CQ
     * @param recvCq  the receive CQ
     */
    protected Qp(Context context, Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
        this.context = context;
        this.pd = pd;
        this.qpn = qpn;
        this.stats = context.counters.overflowSlot(); // until the context gives it a slot of its own
        this.init = init;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.type = init.type();
        this.stateTable = QpStateTable.of(type);
        if (type == QpType.UD) { // a UD QP has no path: its messages are bounded by the port's MTU
            mtu = context.activeMtu();
            mtuBytes = mtu.bytes();
        }
        int sqSlots = Integer.highestOneBit(init.maxSendWr() * 2 - 1);
        if (sqSlots < init.maxSendWr()) {
            sqSlots <<= 1;
        }
        sqSlots = Math.max(sqSlots, 1);
        sq = new Wqe[sqSlots];
        sqMask = sqSlots - 1;
        int inlineSize = (init.maxInlineData() + 7) & ~7;
        MemorySegment inlineArea = inlineSize == 0 ? null : arena.allocate((long) inlineSize * sqSlots, 64);
        for (int i = 0; i < sqSlots; i++) {
            sq[i] = new Wqe(init.maxSendSge(),
                    inlineArea == null ? null : inlineArea.asSlice((long) i * inlineSize, inlineSize));
        }
        this.srq = (Srq) init.srq(); // checked by the PD
        this.recvPd = srq != null ? srq.pd : pd;
        this.srqRecv = srq == null ? null : new RecvWqe(srq.maxSge);
        int rqSlots = srq != null ? 1 : Math.max(1, Integer.highestOneBit(Math.max(1, init.maxRecvWr()) * 2 - 1));
        if (srq == null && rqSlots < init.maxRecvWr()) {
            rqSlots <<= 1;
        }
        rq = new RecvWqe[rqSlots];
        rqMask = rqSlots - 1;
        for (int i = 0; i < rqSlots; i++) {
            rq[i] = new RecvWqe(init.maxRecvSge());
        }
    }

    @Override
    public int qpn() {
        return qpn;
    }

    @Override
    public QpType type() {
        return type;
    }

    @Override
    public QpState state() {
        return state;
    }

    @Override
    public ProtectionDomain pd() {
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
    public io.jrdma.verbs.SharedReceiveQueue srq() {
        return srq;
    }

    // ------------------------------------------------------------------ posting

    /**
     * A post. Its short path first: a request that every check of {@link #post} would pass and that the QP may
     * execute at post (one SGE of some bytes, an opcode of {@link #directOps}, an atomic's 8 aligned bytes, INLINE
     * only where allowed, nothing queued or a SEND behind requests under way) goes straight to {@link Engine#postDirect}, with only the tests that tell
     * it is such a request; anything else, and a request the direct path declines, takes {@link #post}'s checks.
     * The short path keeps a small method ahead of the checks' branches, which the compiler inlines into the
     * caller (docs/shm-performance.md, "The post's short path").
     */
    @Override
    public int postSend(SendWorkRequest wr) {
        int direct = directOps;
        if (direct != 0 && state == QpState.RTS && wr.numSge() == 1) {
            WrOpcode op = wr.opcode();
            int length = wr.sgeLength(0);
            int bit = 1 << op.ordinal();
            boolean inline = (wr.flags() & SendFlags.INLINE) != 0;
            boolean valid = (bit & ATOMIC_OPS) == 0
                    ? !inline || (bit & READ_OP) == 0 && length <= init.maxInlineData()
                    : !inline && length == 8 && (wr.remoteAddr() & 7) == 0;
            // only with nothing queued, or a SEND behind SENDs the transport has under way (read here as hints, so
            // that a post behind queued requests does not claim the engine twice; postDirect tests them again while it
            // holds the engine)
            if ((direct & ~refusedOps & bit) != 0 && length > 0 && valid
                    && (sqConsumer == sqProducer || (bit & SEND_OPS) != 0 && sqUnderWay == sqProducer)) {
                int rc = context.engine.postDirect(this, wr, op, length);
                if (rc != Engine.DECLINED) {
                    return rc;
                }
            }
        }
        return post(wr);
    }

    /** the opcodes a direct post may put behind requests in flight ({@link Transport#directBehind}) */
    static final int SEND_OPS = 1 << WrOpcode.SEND.ordinal() | 1 << WrOpcode.SEND_WITH_IMM.ordinal()
            | 1 << WrOpcode.SEND_WITH_INV.ordinal();
    private static final int ATOMIC_OPS = 1 << WrOpcode.ATOMIC_CMP_AND_SWP.ordinal()
            | 1 << WrOpcode.ATOMIC_FETCH_AND_ADD.ordinal();
    private static final int READ_OP = 1 << WrOpcode.RDMA_READ.ordinal();

    /**
     * A post with every check of libibverbs' {@code ibv_post_send} (rxe's), then the send queue. A request these
     * checks pass and the direct path could take was offered to it by {@link #postSend} already (its tests are a
     * subset of these), so none is offered here: what comes here is queued.
     */
    private int post(SendWorkRequest wr) {
        QpState s = state;
        if (s != QpState.RTS && s != QpState.SQD && s != QpState.ERROR && s != QpState.SQE) {
            return Errno.EINVAL.value();
        }
        int numSge = wr.numSge();
        if (numSge > init.maxSendSge()) {
            return Errno.EINVAL.value();
        }
        long length = 0;
        for (int i = 0; i < numSge; i++) {
            int len = wr.sgeLength(i);
            if (len < 0) {
                return Errno.EINVAL.value();
            }
            length += len;
        }
        WrOpcode op = wr.opcode();
        if ((refusedOps & (1 << op.ordinal())) != 0) {
            return Errno.EOPNOTSUPP.value(); // the transport cannot carry it (e.g. iWARP without jrdma's extensions)
        }
        if (op == WrOpcode.SEND_WITH_INV && type != QpType.RC) {
            return Errno.EINVAL.value(); // IBA: SEND with Invalidate is an RC operation
        }
        if (LocalOps.isLocal(op)) {
            if (!LocalOps.allowedOn(type, op)) {
                return Errno.EINVAL.value(); // rxe's opcode table: BIND_MW on RC and UC, REG_MR and LOCAL_INV on RC
            }
            if (numSge != 0) {
                return Errno.EINVAL.value(); // BIND_MW, REG_MR and LOCAL_INV carry no data
            }
        }
        if (type == QpType.UC && (op == WrOpcode.RDMA_READ || op.isAtomic())) {
            return Errno.EINVAL.value(); // IBA 9.8.3 / rxe: UC carries SEND and RDMA WRITE only
        }
        Ah ah = null;
        if (type == QpType.UD) {
            if (op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM) {
                return Errno.EINVAL.value(); // UD carries SEND (with or without immediate data) only
            }
            if (!(wr.ah() instanceof Ah a) || a.pd != pd || a.closed) {
                return Errno.EINVAL.value(); // a UD send needs a live address handle of the QP's PD
            }
            if (length > mtuBytes) {
                return Errno.EMSGSIZE.value(); // one packet per datagram (IBA C10-93.1.1): refused at post
            }
            ah = a;
        }
        if (length > Integer.MAX_VALUE + 1L) {
            return Errno.EMSGSIZE.value();
        }
        if (op.isAtomic() && (numSge != 1 || length != 8 || (wr.remoteAddr() & 7) != 0)) {
            return Errno.EINVAL.value();
        }
        boolean inline = (wr.flags() & SendFlags.INLINE) != 0;
        if (inline && (op == WrOpcode.RDMA_READ || op.isAtomic() || length > init.maxInlineData())) {
            return Errno.EINVAL.value();
        }
        // the queue's room is checked after the direct path (postSend's), which takes no slot
        long p = sqProducer;
        if (p - (long) SQ_CONSUMER.getAcquire(this) >= init.maxSendWr()) { // release partner: Completer.retire
            return Errno.ENOMEM.value();
        }
        Wqe w = sq[(int) (p & sqMask)];
        if (LocalOps.isLocal(op)) {
            int err = prepareLocal(w, wr, op);
            if (err != 0) {
                return err;
            }
        }
        for (int i = 0; i < numSge; i++) {
            w.sgeAddr[i] = wr.sgeAddr(i);
            w.sgeLength[i] = wr.sgeLength(i);
            w.sgeLkey[i] = wr.sgeLkey(i);
            w.sgeMr[i] = null;
        }
        if (inline) {
            long off = 0;
            for (int i = 0; i < numSge; i++) {
                int len = w.sgeLength[i];
                if (len == 0) {
                    continue; // nothing to copy (and no inline area at all when max_inline_data is 0)
                }
                Mr mr = context.keys.lookupLocal(w.sgeLkey[i]);
                if (mr == null || !mr.permits(pd, 0, w.sgeAddr[i], len)) {
                    mr = pd.covering(w.sgeAddr[i], len); // the lkey of inline data is not checked
                    if (mr == null) {
                        return Errno.EINVAL.value();
                    }
                }
                if (len == 8) { // one load and one store (a SEND of 8 bytes, as perftest's latency tests post it)
                    w.inlineArea.set(ValueLayout.JAVA_LONG_UNALIGNED, off,
                            mr.segment.get(ValueLayout.JAVA_LONG_UNALIGNED, w.sgeAddr[i] - mr.address));
                } else {
                    MemorySegment.copy(mr.segment, w.sgeAddr[i] - mr.address, w.inlineArea, off, len);
                }
                off += len;
            }
        }
        w.inline = inline;
        w.wrId = wr.wrId();
        w.opcode = op;
        w.flags = wr.flags();
        w.signaled = init.sqSigAll() || (wr.flags() & SendFlags.SIGNALED) != 0;
        w.numSge = numSge;
        w.remoteAddr = wr.remoteAddr();
        w.rkey = wr.rkey();
        w.imm = wr.imm();
        w.compareAdd = wr.compareAdd();
        w.swap = wr.swap();
        w.length = length;
        w.ah = ah;
        w.remoteQpn = wr.remoteQpn();
        w.remoteQkey = wr.remoteQkey();
        w.validated = false;
        w.started = false;
        w.localError = -1;
        SQ_PRODUCER.setRelease(this, p + 1); // acquire partner: Requester.run
        if (!executeAtPost || !context.engine.executeAtPost(this)) {
            ringDoorbell();
        }
        return 0;
    }

    /**
     * The posting thread, driving the engine with this QP's send queue empty, or for a SEND holding only requests
     * under way ({@link Engine#postDirect}): the
     * request a transport sends from the work request itself, kept in the queue's next WQE for what must outlive
     * the post: its completion when the answer comes, and a resend (an RNR) from its one SGE, whose region the
     * transport checked ({@code mr}; null for INLINE data, which the caller copies into the WQE's inline area).
     * It fills only what the transport's service reads for a SEND of one SGE; {@link #publishKept} then queues it.
     * Allocation-free.
     *
     * @return the WQE, not yet published
     */
    public Wqe keepDirect(SendWorkRequest wr, WrOpcode op, int length, Mr mr) {
        Wqe w = sq[(int) (sqProducer & sqMask)];
        w.wrId = wr.wrId();
        w.opcode = op;
        w.flags = wr.flags();
        w.signaled = init.sqSigAll() || (w.flags & SendFlags.SIGNALED) != 0;
        w.numSge = 1;
        w.sgeAddr[0] = wr.sgeAddr(0);
        w.sgeLength[0] = length;
        w.sgeLkey[0] = wr.sgeLkey(0);
        w.sgeMr[0] = mr;
        w.inline = mr == null;
        w.imm = wr.imm();
        w.length = length;
        w.validated = true; // its SGE was checked by the transport (Sgl.validate's check)
        w.started = false;
        w.localError = -1;
        return w;
    }

    /** Publishes the WQE {@link #keepDirect} filled: the send queue's head, already under way. */
    public void publishKept() {
        SQ_PRODUCER.setRelease(this, sqProducer + 1); // acquire partner: the transport's service
    }

    /** Posting thread: checks a BIND_MW or REG_MR's objects and copies them into the WQE (LOCAL_INV's key is imm). */
    private int prepareLocal(Wqe w, SendWorkRequest wr, WrOpcode op) {
        if (op == WrOpcode.BIND_MW) {
            // ibv_post_send's BIND_MW binds type 2 windows; type 1 windows are bound with bindMw
            if (!(wr.mw() instanceof Mw mw) || mw.pd.context != context || mw.type != io.jrdma.verbs.MwType.TYPE_2) {
                return Errno.EINVAL.value();
            }
            Mr mr = null;
            if (wr.bindMr() != null) {
                if (!(wr.bindMr() instanceof Mr m) || m.pd.context != context) {
                    return Errno.EINVAL.value();
                }
                mr = m;
            }
            w.mw = mw;
            w.localMr = mr;
            w.localKey = wr.mwRkey();
            w.localAddr = wr.bindAddr();
            w.localLength = wr.bindLength();
            w.localAccess = wr.bindAccess();
        } else if (op == WrOpcode.REG_MR) {
            MemorySegment seg = wr.regSegment();
            if (!(wr.regMr() instanceof Mr m) || m.pd.context != context || m.kind != Mr.FAST_REG || seg == null
                    || !seg.isNative() || seg.byteSize() == 0 || (wr.regAccess() & ~io.jrdma.verbs.Access.ALL) != 0) {
                return Errno.EINVAL.value();
            }
            w.localMr = m;
            w.localKey = wr.regKey();
            w.localSegment = seg;
            w.localAccess = wr.regAccess();
        }
        return 0;
    }

    /**
     * {@code ibv_bind_mw}: posts a bind of a type 1 window on this send queue (as a BIND_MW WQE) and gives the
     * window its next key at once. Allocation-free.
     */
    @Override
    public int bindMw(io.jrdma.verbs.MemoryWindow window, io.jrdma.verbs.MwBind bind) {
        if (!context.hasMemoryWindows()) {
            return Errno.EOPNOTSUPP.value();
        }
        if (!(window instanceof Mw mw) || mw.pd.context != context || mw.type != io.jrdma.verbs.MwType.TYPE_1
                || bind == null || !LocalOps.allowedOn(type, WrOpcode.BIND_MW)) {
            return Errno.EINVAL.value(); // a bind is a BIND_MW work request: RC and UC QPs only (rxe's ibv_bind_mw)
        }
        io.jrdma.verbs.MemoryRegion region = bind.mr();
        Mr mr = null;
        if (region == null) {
            if (bind.length() != 0) {
                return Errno.EINVAL.value(); // a range but no region
            }
        } else {
            if (!(region instanceof Mr m) || m.pd.context != context) {
                return Errno.EINVAL.value();
            }
            if (m.pd != mw.pd) {
                return Errno.EPERM.value(); // as libibverbs' ibv_bind_mw
            }
            mr = m;
        }
        QpState s = state;
        if (s != QpState.RTS && s != QpState.SQD && s != QpState.ERROR && s != QpState.SQE) {
            return Errno.EINVAL.value();
        }
        long p = sqProducer;
        if (p - (long) SQ_CONSUMER.getAcquire(this) >= init.maxSendWr()) {
            return Errno.ENOMEM.value();
        }
        Wqe w = sq[(int) (p & sqMask)];
        int key = io.jrdma.verbs.MemoryWindow.incRkey(mw.rkey());
        w.mw = mw;
        w.localMr = mr;
        w.localKey = key;
        w.localAddr = bind.addr();
        w.localLength = bind.length();
        w.localAccess = bind.access();
        w.inline = false;
        w.wrId = bind.wrId();
        w.opcode = WrOpcode.BIND_MW;
        w.flags = bind.flags();
        w.signaled = init.sqSigAll() || (bind.flags() & SendFlags.SIGNALED) != 0;
        w.numSge = 0;
        w.length = 0;
        w.validated = false;
        w.started = false;
        w.localError = -1;
        mw.rkey(key); // as ibv_bind_mw sets mw->rkey before the bind completes
        SQ_PRODUCER.setRelease(this, p + 1); // acquire partner: the requester
        ringDoorbell();
        return 0;
    }

    @Override
    public int postRecv(RecvWorkRequest wr) {
        if (srq != null || state == QpState.RESET) { // a QP on an SRQ has no receive queue (ibv_post_recv: EINVAL)
            return Errno.EINVAL.value();
        }
        int numSge = wr.numSge();
        if (numSge > init.maxRecvSge() || negativeLength(wr)) {
            return Errno.EINVAL.value();
        }
        long p = rqProducer;
        if (p - (long) RQ_CONSUMER.getAcquire(this) >= init.maxRecvWr()) { // release partner: Responder
            return Errno.ENOMEM.value();
        }
        RecvWqe r = rq[(int) (p & rqMask)];
        r.fill(wr);
        RQ_PRODUCER.setRelease(this, p + 1); // acquire partner: Responder.recvAvailable
        // a Dekker pair with Engine.enterError (its volatile store of ERROR, then the flush's load of the producer):
        // the fence puts this store before the state's load, so either the flush takes this receive or this post
        // sees ERROR and rings; without it both could miss, and the receive waited, unflushed, for whatever rang
        // the QP next (found in review)
        VarHandle.fullFence();
        if (state == QpState.ERROR) {
            ringDoorbell(); // so the engine flushes it
        }
        return 0;
    }

    /**
     * @return true when a receive's SGE has a negative length (a u32 of 2^31 or more in ibverbs): refused with EINVAL
     *         at post, as rxe refuses such a total (a scatter took it for a skip and placed the data after it)
     */
    static boolean negativeLength(RecvWorkRequest wr) {
        for (int i = 0, n = wr.numSge(); i < n; i++) {
            if (wr.sgeLength(i) < 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * After the post's store of its producer index: rings unless the doorbell is up. A Dekker pair with the engine's
     * {@link #clearDoorbell} then its read of the producer: the fence puts the producer's store before the doorbell's
     * load (a release store and a plain load may pass each other), so either the engine reads the new producer or
     * this post sees the cleared doorbell and rings; without it both could miss, and the request stayed unsent until
     * the QP's next post (found in review).
     */
    private void ringDoorbell() {
        VarHandle.fullFence();
        if ((int) DOORBELL.getOpaque(this) == 0 && DOORBELL.compareAndSet(this, 0, 1)) {
            context.engine.doorbell(this);
        }
    }

    /**
     * Engine thread: clears the doorbell before scanning the queue (so a later post rings again); volatile, the
     * clear before the scan's load of the producer (the other half of {@link #ringDoorbell}'s pair).
     */
    void clearDoorbell() {
        DOORBELL.setVolatile(this, 0);
    }

    // ------------------------------------------------------------------ receives, own queue or SRQ (engine thread)

    /**
     * Engine thread: the receive the next message would land in, left in place (a look before taking
     * it); the one taken for the message in progress if any; null when none is posted. QP-type-neutral:
     * every transport's responder finds its receives through here, from the QP's own queue or its SRQ.
     */
    public RecvWqe peekRecv() {
        if (srq == null) {
            return rqConsumer == rqProducerAcquire() ? null : rq[(int) (rqConsumer & rqMask)]; // release partner: postRecv
        }
        return holdingSrqRecv ? srqRecv : srq.peek();
    }

    /**
     * Engine thread: takes the receive for the message that starts (or goes on): the head of the QP's
     * own queue (freed by {@link #recvDone()}), or a copy of the SRQ's head, whose slot is freed now
     * and whose limit event may fire. Allocation-free.
     *
     * @return the receive, or null when none is posted (RC answers RNR, iWARP terminates)
     */
    public RecvWqe takeRecv() {
        if (srq == null) {
            return peekRecv();
        }
        if (holdingSrqRecv) {
            return srqRecv;
        }
        if (srq.take(srqRecv)) {
            holdingSrqRecv = true;
            return srqRecv;
        }
        return null;
    }

    /** Engine thread: the taken receive is finished; call before its completion is pushed. */
    public void recvDone() {
        if (srq == null) {
            rqConsumerRelease(rqConsumer + 1); // acquire partner: postRecv's full check
        } else {
            holdingSrqRecv = false;
        }
    }

    /** Engine thread: in ERROR, the held SRQ receive is still to flush or QP_LAST_WQE_REACHED still to raise. */
    boolean srqFlushPending() {
        return srq != null && (holdingSrqRecv || !lastWqeRaised);
    }

    /** Engine thread: the QP in ERROR flushes the SRQ receive it held, then says once that it will take no more. */
    int flushSrq() {
        int n = 0;
        if (holdingSrqRecv) {
            holdingSrqRecv = false;
            recvCq.push(srqRecv.wrId, io.jrdma.verbs.WcStatus.WR_FLUSH_ERR, io.jrdma.verbs.WcOpcode.RECV, 0, 0, 0, qpn, 0);
            n++;
        }
        if (!lastWqeRaised) {
            lastWqeRaised = true;
            context.events.raise(io.jrdma.verbs.AsyncEvent.Type.QP_LAST_WQE_REACHED, this);
        }
        return n;
    }

    /**
     * Engine thread: a packet reached this QP (a transport's receive path calls it for every accepted
     * packet); the first in RTR raises COMM_EST, as rxe's responder does. Allocation-free.
     */
    public void packetIn() {
        if (!requestSeen) {
            requestSeen = true;
        }
        if (state == QpState.RTR && !commEstRaised) {
            commEstRaised = true;
            context.events.raise(io.jrdma.verbs.AsyncEvent.Type.COMM_EST, this);
        }
    }

    /** {@return whether a request packet reached this QP since it last entered RTR (any thread)} */
    public boolean requestSeen() {
        return requestSeen;
    }

    public long sqProducerAcquire() {
        return (long) SQ_PRODUCER.getAcquire(this);
    }

    public long rqProducerAcquire() {
        return (long) RQ_PRODUCER.getAcquire(this);
    }

    public void sqConsumerRelease(long v) {
        SQ_CONSUMER.setRelease(this, v);
    }

    public void rqConsumerRelease(long v) {
        RQ_CONSUMER.setRelease(this, v);
    }

    // ------------------------------------------------------------------ control

    @Override
    public void modify(QpAttr attr) {
        context.control(() -> applyModify(attr));
    }

    /** Engine thread. IBA 10.3.1 / ibv_modify_qp(3): checks the transition and its required attributes. */
    private void applyModify(QpAttr a) {
        if (destroyed) {
            throw new RdmaException(Errno.EINVAL, "the QP is destroyed");
        }
        QpState cur = state;
        QpState next = a.has(QpAttr.STATE) ? a.state() : cur;
        stateTable.check(cur, next, a.mask());
        context.engine.transport.checkModify(this, cur, next);
        if (a.has(QpAttr.PKEY_INDEX)) {
            if (a.pkeyIndex() != 0) {
                throw new RdmaException(Errno.EINVAL, "P_Key index " + a.pkeyIndex() + " does not exist; the table has "
                        + "only index 0 (0xffff)");
            }
            pkeyIndex = 0;
        }
        if (a.has(QpAttr.PORT) && a.portNum() != 1) {
            throw RdmaException.noSuchPort(context.device().name(), a.portNum(), 1); // the software devices have one
        }
        if (a.has(QpAttr.AV)) {
            setAddress(a.av());
        }
        // after every check that can refuse the modify (P_Key index, port, address): a refused one changes nothing
        // (the access flags were written first, and a modify that failed with EINVAL had changed them; found in review)
        if (a.has(QpAttr.ACCESS_FLAGS)) {
            accessFlags = a.accessFlags();
        }
        if (a.has(QpAttr.PATH_MTU)) {
            Mtu max = context.activeMtu();
            mtu = a.pathMtu().bytes() > max.bytes() ? max : a.pathMtu();
            mtuBytes = mtu.bytes();
        }
        if (a.has(QpAttr.QKEY)) {
            qkey = a.qkey();
        }
        if (a.has(QpAttr.DEST_QPN)) {
            destQpn = a.destQpn();
        }
        if (a.has(QpAttr.RQ_PSN)) {
            rqPsn = a.rqPsn();
        }
        if (a.has(QpAttr.SQ_PSN)) {
            sqPsn = a.sqPsn();
        }
        if (a.has(QpAttr.MAX_DEST_RD_ATOMIC)) {
            maxDestRdAtomic = a.maxDestRdAtomic();
        }
        if (a.has(QpAttr.MAX_QP_RD_ATOMIC)) {
            maxRdAtomic = a.maxRdAtomic();
        }
        if (a.has(QpAttr.MIN_RNR_TIMER)) {
            minRnrTimer = a.minRnrTimer();
        }
        if (a.has(QpAttr.TIMEOUT)) {
            timeout = a.timeout();
        }
        if (a.has(QpAttr.RETRY_CNT)) {
            retryCnt = a.retryCnt();
        }
        if (a.has(QpAttr.RNR_RETRY)) {
            rnrRetry = a.rnrRetry();
        }
        context.engine.transport.modified(this, a, cur, next);
        if (next == QpState.RESET && cur != QpState.RESET) {
            resetQueues();
            releaseAddress();
        }
        if (next == QpState.ERROR && cur != QpState.ERROR) {
            Fallbacks.LOG.log(System.Logger.Level.DEBUG, () -> "QP 0x" + Integer.toHexString(qpn) + " of " + context
                    + " moves from " + cur + " to ERROR (modify_qp: the application or its connection manager)");
        }
        if (next != QpState.ERROR) {
            lastWqeRaised = false;
        }
        if (next != QpState.RTR) {
            commEstRaised = false;
        } else if (cur != QpState.RTR) {
            requestSeen = false;
        }
        state = next;
        if (next != cur) {
            QpEvent.changed(this, cur, next, "modify_qp");
        }
        if (next == QpState.ERROR || next == QpState.RTS) {
            context.engine.schedule(this);
        }
    }

    private void setAddress(AddressVector v) {
        Endpoint src = context.localEndpoint(v.sgidIndex());
        Endpoint dst = context.remoteEndpoint(v, src);
        if (src.isIpv6() != dst.isIpv6()) {
            throw new RdmaException(Errno.EINVAL, "source GID " + v.sgidIndex() + " (" + src + ") and destination "
                    + v.dgid() + " are of different IP versions; pick a source GID of the same family");
        }
        Endpoint path = context.link.attach(src, dst);
        if (local != null) {
            context.link.detach(gidEndpoint, local);
        }
        av = v;
        gidEndpoint = src;
        local = path;
        remote = dst;
    }

    /** Engine thread: drop every queued request without completions (modify to RESET, destroy). */
    private void releaseAddress() {
        if (local != null) {
            context.link.detach(gidEndpoint, local);
            gidEndpoint = null;
            local = null;
            remote = null;
            av = null;
        }
    }

    /** Engine thread: the queues are emptied without completions (modify to RESET, destroy); the roles start over. */
    private void resetQueues() {
        sqConsumerRelease(sqProducer);
        rqConsumerRelease(rqProducerAcquire());
        holdingSrqRecv = false; // dropped without a completion, as the queue's own receives
        context.engine.transport.reset(this);
    }

    @Override
    public QpAttr query() {
        QpAttr a = new QpAttr();
        context.control(() -> {
            a.state(state).accessFlags(accessFlags).pkeyIndex(pkeyIndex).portNum(1).pathMtu(mtu).destQpn(destQpn)
                    .rqPsn(rqPsn).sqPsn(sqPsn).maxRdAtomic(maxRdAtomic).maxDestRdAtomic(maxDestRdAtomic)
                    .minRnrTimer(minRnrTimer).timeout(timeout).retryCnt(retryCnt).rnrRetry(rnrRetry);
            if (type == QpType.UD) {
                a.qkey(qkey);
            }
            if (av != null) {
                a.av(av);
            }
            context.engine.transport.queried(this, a);
        });
        return a;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        context.control(() -> {
            context.engine.transport.destroying(this); // the peer's last request is acknowledged, not retried into the void
            destroyed = true;
            resetQueues();
            releaseAddress();
            state = QpState.RESET;
            context.engine.remove(this);
            context.qpnFreed(qpn);
            context.counters.freeQpSlot(stats);
            QpEvent.changed(this, state, "DESTROYED", "destroy_qp");
        });
        synchronized (context) {
            sendCq.users--;
            recvCq.users--;
        }
        if (srq != null) {
            synchronized (srq.pd) {
                srq.users--;
            }
        }
        pd.release(this);
        arena.close();
    }

    @Override
    public String toString() {
        return "QP 0x" + Integer.toHexString(qpn) + " (" + state + ")";
    }
}

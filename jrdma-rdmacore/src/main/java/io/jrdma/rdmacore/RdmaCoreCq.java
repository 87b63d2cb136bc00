package io.jrdma.rdmacore;

import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A completion queue of an rdma-core device ({@code ibv_create_cq}). {@link #poll} calls the context's
 * {@code ops.poll_cq} into an array of {@code struct ibv_wc} laid out once, off-heap, and copies each entry
 * into the caller's {@link WorkCompletion}: no allocation.
 */
final class RdmaCoreCq implements CompletionQueue {
    /** How many {@code struct ibv_wc} one poll call fills at most. */
    static final int WC_BATCH = 32;
    /** {@code __be32 imm_data}: big-endian in memory, as on the wire. */
    static final ValueLayout.OfInt JAVA_INT_BE = JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    /** The {@code IBV_WC_*} flags that {@link WorkCompletion} has with the same values: GRH, WITH_IMM, WITH_INV. */
    private static final int WC_FLAG_BITS = WorkCompletion.GRH | WorkCompletion.WITH_IMM | WorkCompletion.WITH_INV;
    private static final WcStatus[] STATUS = WcStatus.values();
    /** {@code enum ibv_wc_opcode} 0..6 in order: SEND, RDMA_WRITE, RDMA_READ, COMP_SWAP, FETCH_ADD, BIND_MW, LOCAL_INV. */
    private static final WcOpcode[] SEND_OPCODES = {WcOpcode.SEND, WcOpcode.RDMA_WRITE, WcOpcode.RDMA_READ,
            WcOpcode.COMP_SWAP, WcOpcode.FETCH_ADD, WcOpcode.BIND_MW, WcOpcode.LOCAL_INV};
    static final int IBV_WC_RECV = 128;
    static final int IBV_WC_RECV_RDMA_WITH_IMM = 129;

    private final RdmaCoreContext context;
    final MemorySegment cq;
    private final RdmaCoreChannel channel;
    private final int capacity;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment wcs;
    private final java.lang.invoke.MethodHandle pollCq;
    private final java.lang.invoke.MethodHandle reqNotify;
    private volatile boolean closed;
    /** The polls and arms inside the provider, which {@link #close} waits out before it destroys the CQ. */
    private final InUse inUse = new InUse();

    /** @return true once destroyed: its native {@code ibv_cq} is freed */
    boolean closed() {
        return closed;
    }
    /** Whether a UD QP receives into this CQ: only then may a receive completion carry the GRH flag. */
    private volatile boolean udReceives;
    /** An iWARP device's CQ: a receive completed in error moves its QP to ERROR ({@link #receiveFailed}). */
    private final boolean iwarp;
    /**
     * Flush completions this provider owes for requests posted to an iWARP QP it knows to be in ERROR (Linux siw
     * flushes its user-mapped queues only at the transition: a request posted afterwards would never complete).
     * A ring laid out once; filled under {@code flushLock} by those posts (an error path) and drained by a poll
     * that finds {@link #flushPending} non-zero; an ordinary poll reads that one volatile field and nothing else.
     */
    private final long[] flushWrId;
    private final WcOpcode[] flushOpcode;
    private final int[] flushQpn;
    private final Object flushLock = new Object();
    private int flushHead, flushCount;
    private volatile int flushPending;
    /**
     * Armed ({@link #requestNotify}) and not fired since by a flush this provider owes: an owed flush fires the CQ's
     * channel itself ({@link RdmaCoreChannel#fire}), as the device fires it for its own completions; the kernel does
     * not know of these (found in review: an application that armed, posted to an iWARP QP in ERROR and waited on the
     * channel waited out its timeout). Written by the arm (one volatile store), cleared under {@code flushLock}.
     */
    private volatile boolean armed;

    RdmaCoreCq(RdmaCoreContext context, MemorySegment cq, RdmaCoreChannel channel) {
        this.context = context;
        this.cq = cq.reinterpret(Structs.IBV_CQ.byteSize());
        this.channel = channel;
        this.capacity = this.cq.get(JAVA_INT, Structs.CQ_CQE);
        this.wcs = arena.allocate(Structs.IBV_WC.byteSize() * WC_BATCH, 8);
        this.pollCq = context.ops().pollCq;
        this.reqNotify = context.ops().reqNotifyCq;
        this.kernelFlags = context.rxe();
        this.iwarp = context.device().transportType() == RdmaCoreDevice.TRANSPORT_IWARP;
        int ring = Math.max(16, Math.min(capacity, 1 << 16));
        this.flushWrId = new long[ring];
        this.flushOpcode = new WcOpcode[ring];
        this.flushQpn = new int[ring];
    }

    /**
     * Queues a {@code WR_FLUSH_ERR} completion for a request posted to a QP this provider knows to be in ERROR, as the
     * IBA completes such a request.
     *
     * @return 0, or ENOMEM when the CQ already owes as many flushes as it holds completions (a CQ overrun)
     */
    int owe(long wrId, WcOpcode opcode, int qpn) {
        synchronized (flushLock) {
            if (flushCount == flushWrId.length) {
                return 12; // ENOMEM
            }
            int at = (flushHead + flushCount) % flushWrId.length;
            flushWrId[at] = wrId;
            flushOpcode[at] = opcode;
            flushQpn[at] = qpn;
            flushCount++;
            flushPending = flushCount;
            if (armed && channel != null) {
                armed = false; // an armed CQ fires once
                channel.fire(this);
            }
            return 0;
        }
    }

    /** Moves owed flush completions into {@code out[from..max)} (or {@code one}); returns how many. */
    private int drainFlushes(WorkCompletion[] out, WorkCompletion one, int from, int max) {
        synchronized (flushLock) {
            int n = 0;
            while (flushCount > 0 && from + n < max) {
                WorkCompletion wc = out == null ? one : out[from + n];
                int qpn = flushQpn[flushHead];
                wc.set(flushWrId[flushHead], WcStatus.WR_FLUSH_ERR, flushOpcode[flushHead], 0, 0, 0, 0, qpn,
                        flushOpcode[flushHead] == WcOpcode.RECV ? Math.max(0, context.peerOf(qpn)) : 0);
                flushOpcode[flushHead] = null;
                flushHead = (flushHead + 1) % flushWrId.length;
                flushCount--;
                n++;
            }
            flushPending = flushCount;
            return n;
        }
    }

    /** Whether completions carry the kernel's flag values (Linux rxe): {@link #KERNEL_WC_WITH_INVALIDATE}. */
    private final boolean kernelFlags;

    /** Notes that a UD QP receives into this CQ. */
    void hasUd() {
        udReceives = true;
    }

    RdmaCoreContext context() {
        return context;
    }

    @Override
    public int capacity() {
        return capacity;
    }

    /**
     * Polls ({@code ops.poll_cq}) up to {@code wcs.length} completions, at most {@value #WC_BATCH} per call.
     *
     * @throws RdmaException EINVAL on a closed CQ; EIO if the provider's poll fails
     */
    @Override
    public int poll(WorkCompletion[] out) {
        return pollInto(out, null, Math.min(out.length, WC_BATCH));
    }

    @Override
    public int poll(WorkCompletion wc) {
        return pollInto(null, wc, 1);
    }

    private int pollInto(WorkCompletion[] out, WorkCompletion one, int max) {
        if (!inUse.enter()) {
            throw closedCq();
        }
        try {
            return pollEntered(out, one, max);
        } finally {
            inUse.exit();
        }
    }

    private static RdmaException closedCq() {
        return new RdmaException(RdmaException.Errno.EINVAL, "the CQ is closed");
    }

    private int pollEntered(WorkCompletion[] out, WorkCompletion one, int max) {
        if (max == 0) {
            return 0;
        }
        int n;
        try {
            n = (int) pollCq.invokeExact(cq, max, wcs);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (n < 0) {
            throw new RdmaException(RdmaException.Errno.EIO, "ibv_poll_cq failed (" + n + "): the CQ is in error"
                    + " (overrun); destroy it and its QPs");
        }
        if (n < max && flushPending != 0) {
            // the device's completions first: a flush owed was posted after the QP's own flush at its transition
            int owed = drainFlushes(out, one, n, max);
            if (n == 0) {
                return owed;
            }
            decodeNative(out, one, n);
            return n + owed;
        }
        decodeNative(out, one, n);
        return n;
    }

    private void decodeNative(WorkCompletion[] out, WorkCompletion one, int n) {
        int keep = udReceives ? WC_FLAG_BITS : WC_FLAG_BITS & ~WorkCompletion.GRH;
        PendingBinds binds = context.binds;
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = out == null ? one : out[i];
            decode(wcs, (long) i * Structs.IBV_WC.byteSize(), wc, keep, context, kernelFlags);
            if (binds.any() && (wc.status() != WcStatus.SUCCESS || wc.opcode() == WcOpcode.BIND_MW)) {
                binds.completed(wc.qpNum(), wc.wrId(), wc.status() == WcStatus.SUCCESS);
            }
            if (iwarp && wc.opcode() == WcOpcode.RECV && wc.status() != WcStatus.SUCCESS
                    && wc.status() != WcStatus.WR_FLUSH_ERR) {
                receiveFailed(wc.qpNum());
            }
        }
    }

    /**
     * A receive of an iWARP QP completed in error that Linux siw left the QP connected after (a refused SEND_WITH_INV:
     * {@code siw_rdmap_complete} completes the receive REM_INV_REQ_ERR and prepares a TERMINATE it does not send): the
     * verbs move a QP whose work request failed to ERROR, so the provider does, which makes siw flush the QP, send the
     * TERMINATE and close the connection. An error path: the lookup and the modify allocate.
     */
    private void receiveFailed(int qpn) {
        RdmaCoreQp qp = context.qpOf(qpn);
        if (qp != null && qp.state() != io.jrdma.verbs.QpState.ERROR) {
            try {
                qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.ERROR));
            } catch (RdmaException e) {
                // destroyed meanwhile: nothing to move
            }
        }
    }

    /**
     * The kernel's {@code IB_WC_WITH_INVALIDATE} (1 << 2), which is {@code IBV_WC_IP_CSUM_OK} in libibverbs: Linux rxe
     * writes its completions into the user's ring with the kernel's flag values, so rdma-core's rxe provider hands a
     * receive that invalidated a key with this bit instead of {@code IBV_WC_WITH_INV} (1 << 3).
     */
    static final int KERNEL_WC_WITH_INVALIDATE = 1 << 2;

    /** Copies the {@code struct ibv_wc} at {@code at} into {@code wc}. */
    static void decode(MemorySegment s, long at, WorkCompletion wc, int keepFlags, RdmaCoreContext peers) {
        decode(s, at, wc, keepFlags, peers, false);
    }

    /**
     * Copies the {@code struct ibv_wc} at {@code at} into {@code wc}; with {@code kernelFlags} (Linux rxe) a receive's
     * {@link #KERNEL_WC_WITH_INVALIDATE} is read as {@link WorkCompletion#WITH_INV}.
     */
    static void decode(MemorySegment s, long at, WorkCompletion wc, int keepFlags, RdmaCoreContext peers,
                       boolean kernelFlags) {
        int status = s.get(JAVA_INT, at + Structs.WC_STATUS);
        int op = s.get(JAVA_INT, at + Structs.WC_OPCODE);
        boolean receive = op >= IBV_WC_RECV;
        if (!receive) {
            keepFlags = 0; // rxe flags a SEND_WITH_IMM's own completion WITH_IMM: only receives carry these
        }
        // rxe flags RC/UC receives with IBV_WC_GRH too, though only a UD receive buffer holds a GRH: kept for
        // CQs that UD QPs receive into, cleared on the others
        int raw = s.get(JAVA_INT, at + Structs.WC_FLAGS);
        if (kernelFlags && receive && (raw & KERNEL_WC_WITH_INVALIDATE) != 0) {
            raw = (raw & ~KERNEL_WC_WITH_INVALIDATE) | WorkCompletion.WITH_INV;
        }
        int flags = raw & keepFlags;
        int imm = (flags & WorkCompletion.WITH_IMM) != 0 ? s.get(JAVA_INT_BE, at + Structs.WC_IMM)
                : (flags & WorkCompletion.WITH_INV) != 0 ? s.get(JAVA_INT, at + Structs.WC_IMM) : 0;
        WcOpcode opcode = op >= 0 && op < SEND_OPCODES.length ? SEND_OPCODES[op]
                : op == IBV_WC_RECV_RDMA_WITH_IMM ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV;
        int qpNum = s.get(JAVA_INT, at + Structs.WC_QP_NUM);
        int srcQp = s.get(JAVA_INT, at + Structs.WC_SRC_QP);
        if (receive && srcQp == 0 && peers != null) {
            // rdma-core fills src_qp for UD only; an RC/UC receive came from the QP this one is connected to
            int peer = peers.peerOf(qpNum);
            srcQp = peer < 0 ? 0 : peer;
        }
        wc.set(s.get(JAVA_LONG, at + Structs.WC_WR_ID),
                status >= 0 && status < STATUS.length ? STATUS[status] : WcStatus.GENERAL_ERR, opcode,
                s.get(JAVA_INT, at + Structs.WC_VENDOR_ERR), s.get(JAVA_INT, at + Structs.WC_BYTE_LEN), imm, flags,
                qpNum, srcQp)
                .ud(Short.toUnsignedInt(s.get(JAVA_SHORT, at + Structs.WC_PKEY_INDEX)),
                        Short.toUnsignedInt(s.get(JAVA_SHORT, at + Structs.WC_SLID)),
                        Byte.toUnsignedInt(s.get(JAVA_BYTE, at + Structs.WC_SL)),
                        Byte.toUnsignedInt(s.get(JAVA_BYTE, at + Structs.WC_DLID_PATH_BITS)));
    }

    /**
     * Arms the CQ ({@code ops.req_notify_cq}).
     *
     * @throws RdmaException EINVAL without a channel or on a closed CQ; the provider's errno if it fails
     */
    @Override
    public void requestNotify(boolean solicitedOnly) {
        if (channel == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the CQ has no completion channel: create it with"
                    + " createCq(cqe, channel) to be notified");
        }
        if (!inUse.enter()) {
            throw closedCq();
        }
        int rc;
        try {
            rc = (int) reqNotify.invokeExact(cq, solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        } finally {
            inUse.exit();
        }
        if (rc != 0) {
            int e = Math.abs(rc);
            throw new RdmaException(RdmaException.Errno.of(e), "ibv_req_notify_cq failed (errno " + e + ")");
        }
        if (iwarp) {
            armed = true; // only iWARP QPs owe flushes (RdmaCoreQp's posts in ERROR)
        }
    }

    @Override
    public RdmaCoreChannel channel() {
        return channel;
    }

    /**
     * Destroys the CQ ({@code ibv_destroy_cq}); a second close does nothing. A poll or arm on another thread that is
     * inside the provider is waited out first (the destroy frees the {@code ibv_cq} and unmaps its ring); one that
     * comes later throws EINVAL ({@link InUse}).
     *
     * @throws RdmaException EBUSY while a QP uses it (before anything is done: a poll meanwhile goes on)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (context.qpUsing(this)) {
            throw new RdmaException(RdmaException.Errno.EBUSY, "ibv_destroy_cq would fail (EBUSY): a QP uses the CQ;"
                    + " close the QP first");
        }
        inUse.close(); // polls and arms from now on throw EINVAL; those inside the provider have left
        int rc = context.verbs().destroyCq(cq);
        if (rc != 0) {
            inUse.reopen();
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_destroy_cq failed (errno " + rc + ")"
                    + (rc == 16 ? ": a QP uses it; close the QP first" : ""));
        }
        closed = true;
        context.forget(this);
        arena.close();
    }

    @Override
    public String toString() {
        return "RdmaCoreCq{cqe=" + capacity + '}';
    }
}

package io.jrdma.tools.perf;

import io.jrdma.tools.oob.Roce;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * One side of a benchmark connection: PD, CQ (with a completion channel when the engine runs
 * DEDICATED), an RC QP, one registered buffer (data area + a 4 KiB control area), the
 * connection, and the completion dispatch and waits both sides share.
 *
 * <p>Buffer layout. Bandwidth tests use a data area of {@link #area(int)} bytes cut into up to
 * 64 slots of the message size: message {@code i} uses slot {@code i % slots} on both sides.
 * Latency tests use two halves of {@link #stride} bytes: [0, stride) receives the peer's
 * message, [stride, 2 stride) is what this side sends. The send_bw server instead has
 * {@link #recvSlots} receive slots. The control area holds the inbox the peer writes control
 * messages into, the outbox they are sent from, and the landing spot of control-only receives.
 *
 * <p>Waits never spin on a DEDICATED context: its thread blocks on the completion channel.
 * On an INVOKER context the waiting thread is the engine, so it spins driving it.
 */
final class Session implements AutoCloseable {
    /** wr_id bit of control-message sends. */
    static final long CTRL_SEND = 1L << 62;
    /** wr_id bit of control-only receives. */
    static final long CTRL_RECV = 1L << 61;
    static final int CTRL_AREA = 4096;
    static final int INBOX = 0;
    static final int OUTBOX = 2048;
    static final int RECV_SINK = 3584;
    /**
     * send_bw's receive credits (docs/tools.md, "`--jrdma-cm`"): the server's sources of its credit WRITEs,
     * {@link #CREDIT_SRCS} words of 8 bytes, each WRITE its own, in turn
     */
    static final int CREDIT_SRC = 3712;
    static final int CREDIT_SRCS = 16;
    /** send_bw, the client's control area: the receives the server has posted in all (u64, little-endian), written by the server */
    static final int CREDIT = 3968;
    /** wr_id bit of the send_bw server's credit WRITEs (one in {@link #CREDIT_SIGNAL_EVERY} signaled, so a provider frees their slots) */
    static final long CREDIT_SEND = 1L << 60;
    static final int CREDIT_SIGNAL_EVERY = 8;
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle CREDIT_WORD = ValueLayout.JAVA_LONG.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN).varHandle();
    static final int CTRL_RECVS = 4;
    /** Ring of 8-byte fetch results of the atomic bandwidth client. */
    static final int ATOMIC_RING = 4096;
    static final int SEND_LAT_RECVS = 8;
    /** Messages up to this size are posted INLINE by the latency tests (perftest's default for RC WRITE). */
    static final int INLINE_MAX = 220;
    static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final Duration SLICE = Duration.ofMillis(100);

    final DeviceContext ctx;
    final PerfTest test;
    final boolean server;
    final boolean dedicated;
    final Watchdog dog;
    final int maxSize;
    final int txDepth;
    final int sigEvery;
    final long area;
    final long stride;
    final int recvSlots;
    final int recvSlotSize;
    final boolean recvOverlap;
    final long dataLength;
    final long ctrlOff;

    private final Arena arena = Arena.ofShared();
    final ProtectionDomain pd;
    final CompletionChannel channel;
    final CompletionQueue cq;
    final QueuePair qp;
    final MemorySegment buf;
    final MemoryRegion mr;
    final long base;
    final int lkey;
    ConnectionManager.Connection conn;
    long peerAddr;
    int peerRkey;
    long peerLength;
    long peerCtrl;

    final WorkCompletion[] wcs = new WorkCompletion[32];
    final SendWorkRequest dataWr = new SendWorkRequest(1);
    private final SendWorkRequest ctrlWr = new SendWorkRequest(1);
    private final SendWorkRequest creditWr = new SendWorkRequest(1);
    private final RecvWorkRequest recvWr = new RecvWorkRequest(1);
    final CtrlMsg in = new CtrlMsg();
    final CtrlMsg out = new CtrlMsg();
    private MemorySegment expected;
    private long expectedSeed;
    private long expectedLength = -1;

    // completion state, written by dispatch
    long dataCompleted;
    long lastDataNanos;
    BwMeter meter;
    RecvSink sink;
    boolean ctrlArrived;
    private long ctrlSent;
    private long ctrlDone;
    /** send_bw server: receives posted in all (the first ones and every repost) */
    private long granted;
    /** send_bw server: the count its last credit WRITE carried */
    private long grantedSent;
    private long creditWrites;
    /** send_bw server: a credit WRITE found the send queue full; the next poll sends it */
    private boolean creditOwed;
    /** send_bw server: it gives receive credits (its reply says so: {@link Hello#REPLY_CREDITS}) */
    boolean givesCredits;
    /** send_bw client: the receives the server posted before the first message (its limit until a credit comes); 0: no credits */
    long peerRecvs;
    /** send_bw client: messages sent that take one of the server's receives (data SENDs and control messages) */
    long consumed;
    private long lastRcvdPkts = -1;
    private long nextCounterCheck;
    /** Set when a receive was flushed: the connection is gone; thrown by the next wait that finds nothing. */
    private PerfFailure flushed;

    /** Handles incoming data messages (send tests). Called from {@link #dispatch}: must not poll. */
    interface RecvSink {
        void onData(WorkCompletion wc);
    }

    /** The device's port the QP is on: the one of the connection's address ({@link io.jrdma.tools.DeviceChoice#portFor}). */
    final int port;

    /** @param port the port of the connection's address, for the QP's INIT (the connection manager has the last word) */
    Session(DeviceContext ctx, int port, PerfTest test, boolean server, int maxSize, int txDepth, Watchdog dog) {
        this.ctx = ctx;
        this.port = port;
        this.test = test;
        this.server = server;
        this.dedicated = ctx.options().threadingMode() == ThreadingMode.DEDICATED;
        this.dog = dog;
        this.maxSize = maxSize;
        this.txDepth = txDepth;
        this.sigEvery = test.isBw() ? Math.max(1, Math.min(txDepth / 2, 64)) : 64;
        this.area = area(maxSize);
        this.stride = roundUp(maxSize, 64);
        if (test == PerfTest.SEND_BW && server) {
            recvSlotSize = (int) stride;
            recvSlots = (int) Math.min(512, Math.max(8, (32L << 20) / stride));
            recvOverlap = false;
            dataLength = (long) recvSlots * recvSlotSize;
        } else if (test == PerfTest.SEND_LAT) {
            recvSlotSize = maxSize;
            recvSlots = SEND_LAT_RECVS;
            recvOverlap = true;
            dataLength = 2 * stride;
        } else {
            recvSlotSize = 0;
            recvSlots = 0;
            recvOverlap = false;
            if (test.isBw()) {
                dataLength = test.isAtomic() && !server ? Math.max(area, ATOMIC_RING * 8L) : area;
            } else {
                dataLength = 2 * stride;
            }
        }
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        ctrlOff = roundUp(dataLength, 4096);
        int recvs = recvSlots > 0 ? recvSlots : CTRL_RECVS;
        int maxSendWr = Math.max(txDepth, sigEvery) + 16;
        int maxRecvWr = recvs + 4;
        ProtectionDomain pd0 = null;
        CompletionChannel ch0 = null;
        CompletionQueue cq0 = null;
        QueuePair qp0 = null;
        MemoryRegion mr0 = null;
        try {
            pd0 = ctx.allocPd();
            ch0 = dedicated ? ctx.createCompletionChannel() : null;
            cq0 = ctx.createCq(maxSendWr + maxRecvWr + 16, ch0);
            qp0 = pd0.createQp(new QpInitAttr(QpType.RC, cq0, cq0, maxSendWr, maxRecvWr, 1, 1,
                    256, false));
            // INIT now, so that the receives are posted before the peer can send
            qp0.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(port).accessFlags(
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
            MemorySegment seg = ctx.allocateBuffer(ctrlOff + CTRL_AREA, 4096, arena); // reachable by peers (shm)
            mr0 = pd0.register(seg, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
                    | Access.REMOTE_ATOMIC);
        } catch (RuntimeException e) {
            closeQuietly(mr0);
            closeQuietly(qp0);
            closeQuietly(cq0);
            closeQuietly(ch0);
            closeQuietly(pd0);
            arena.close();
            throw e;
        }
        pd = pd0;
        channel = ch0;
        cq = cq0;
        qp = qp0;
        mr = mr0;
        buf = mr.segment();
        base = mr.address();
        lkey = mr.lkey();
        try {
            for (int i = 0; i < recvs; i++) {
                repost(recvSlots > 0 ? i : CTRL_RECV | i);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        grantedSent = granted; // the client knows these from the reply (Hello.Reply.rxDepth)
    }

    /** @return the bandwidth tests' data area for a largest message size: up to 64 messages, at most 8 MiB (or one message) */
    static long area(int maxSize) {
        return roundUp(Math.min(64L * maxSize, Math.max(maxSize, 8L << 20)), 64);
    }

    /** @return how many message slots of {@code size} bytes the area holds (1..64) */
    static int slots(long area, int size) {
        return (int) Math.min(64, Math.max(1, area / size));
    }

    static long roundUp(long v, long to) {
        return (v + to - 1) / to * to;
    }

    /** After connect/accept: the peer's buffer. */
    void connected(ConnectionManager.Connection c, long addr, int rkey, long length, long ctrlOffset) {
        conn = c;
        peerAddr = addr;
        peerRkey = rkey;
        peerLength = length;
        peerCtrl = ctrlOffset;
        if (ctrlOffset + CTRL_AREA > length) {
            throw new PerfFailure("the peer's buffer (" + length + " bytes) has no room for its control area at "
                    + ctrlOffset);
        }
    }

    // ------------------------------------------------------------------ completions

    /** Polls the CQ once (in INVOKER mode this runs the engine once) and handles what came. */
    int pollOnce() {
        if (creditOwed) {
            sendCredit();
        }
        int n = cq.poll(wcs);
        if (n > 0) {
            dispatch(n);
            dog.progress();
        } else if (flushed != null) {
            throw flushed;
        }
        return n;
    }

    private void dispatch(int n) {
        for (int k = 0; k < n; k++) {
            WorkCompletion wc = wcs[k];
            if (wc.status() != WcStatus.SUCCESS) {
                if (wc.status() == WcStatus.WR_FLUSH_ERR && (wc.opcode() == WcOpcode.RECV
                        || (wc.wrId() & CREDIT_SEND) != 0)) { // a send_bw server's credit still queued at the close
                    // An unused receive flushed because the connection closed. Over iWARP the peer's close
                    // (TCP FIN) can arrive in the same poll as its last control message or the completion of
                    // this side's last one, which must still count: the failure is raised by the next poll
                    // that finds nothing, i.e. only when a wait is still unsatisfied.
                    if (flushed == null) {
                        flushed = new PerfFailure(describe(wc) + " (the connection closed)");
                    }
                    continue;
                }
                throw new PerfFailure(describe(wc));
            }
            long id = wc.wrId();
            WcOpcode op = wc.opcode();
            if (op == WcOpcode.RECV || op == WcOpcode.RECV_RDMA_WITH_IMM) {
                if (wc.hasImm()) {
                    onCtrl(wc);
                } else if (sink != null) {
                    sink.onData(wc);
                } else {
                    throw new PerfFailure("protocol error: an unexpected message of " + wc.byteLen() + " bytes arrived");
                }
            } else if ((id & CTRL_SEND) != 0) {
                ctrlDone++;
            } else if ((id & CREDIT_SEND) != 0) {
                continue; // a signaled credit WRITE: nothing waits for it
            } else {
                dataCompleted = id + 1;
                lastDataNanos = System.nanoTime();
                if (meter != null) {
                    meter.add(lastDataNanos, dataCompleted);
                }
            }
        }
    }

    private void onCtrl(WorkCompletion wc) {
        if (ctrlArrived) {
            throw new PerfFailure("protocol error: a control message arrived before the previous one was handled");
        }
        in.readFrom(buf, ctrlOff + INBOX);
        int type = wc.imm() >>> 24;
        if (in.type != type) {
            throw new PerfFailure("protocol error: control message type " + in.type + " announced as " + type);
        }
        repost(wc.wrId());
        ctrlArrived = true;
    }

    /** (Re)posts receive {@code wrId}: a control-only receive, or data slot {@code wrId}. */
    void repost(long wrId) {
        if ((wrId & CTRL_RECV) != 0) {
            recvWr.reset().wrId(wrId).sge(0, base + ctrlOff + RECV_SINK, 64, lkey);
        } else {
            long off = recvOverlap ? 0 : wrId * recvSlotSize;
            recvWr.reset().wrId(wrId).sge(0, base + off, recvSlotSize, lkey);
        }
        int rc = qp.postRecv(recvWr);
        if (rc != 0) {
            throw new PerfFailure("posting a receive failed: " + RdmaException.Errno.of(rc));
        }
        granted++;
        if (givesCredits && conn != null && granted - grantedSent >= Math.max(1, recvSlots / 4)) {
            sendCredit();
        }
    }

    /**
     * send_bw server: tells the client how many receives it has posted in all, by an RDMA WRITE into the client's
     * {@link #CREDIT} word, every quarter of its receives; the client keeps the messages it sent under that count
     * ({@link #awaitCredit}). Over iWARP a SEND that finds no receive ends the connection (there is no RNR), and on
     * RoCE and shm0 it costs an RNR wait; perftest's ib_send_bw gives such credits over iWARP too.
     */
    private void sendCredit() {
        long at = ctrlOff + CREDIT_SRC + 8L * (creditWrites % CREDIT_SRCS);
        buf.set(LONG_LE, at, granted);
        boolean signaled = creditWrites % CREDIT_SIGNAL_EVERY == CREDIT_SIGNAL_EVERY - 1;
        creditWr.reset().wrId(CREDIT_SEND | creditWrites).opcode(WrOpcode.RDMA_WRITE)
                .flags(signaled ? SendFlags.SIGNALED : 0).sge(0, base + at, 8, lkey)
                .remote(peerAddr + peerCtrl + CREDIT, peerRkey);
        int rc = qp.postSend(creditWr);
        if (rc == RdmaException.Errno.ENOMEM.value()) {
            creditOwed = true; // the send queue is full: the next poll tries again
            return;
        }
        if (rc != 0) {
            throw new PerfFailure("posting a credit WRITE failed: " + RdmaException.Errno.of(rc) + " (QP state "
                    + qp.state() + ")");
        }
        creditOwed = false;
        grantedSent = granted;
        creditWrites++;
    }

    /** send_bw client: @return true when one more message may go (it will find a receive posted at the server) */
    boolean creditLeft() {
        return peerRecvs == 0 || consumed < Math.max(peerRecvs, (long) CREDIT_WORD.getAcquire(buf, ctrlOff + CREDIT));
    }

    /** send_bw client: waits until one more message may go ({@link #creditLeft}), driving the engine. */
    void awaitCredit() {
        while (!creditLeft()) {
            if (pollOnce() == 0) {
                idleWait();
            }
        }
    }

    /** One idle turn of a wait: spin driving the engine (INVOKER) or block on the channel (DEDICATED). */
    void idleWait() {
        if (!dedicated) {
            if (ctx.progress() > 0) {
                dog.progress();
            } else {
                dog.idle();
            }
            return;
        }
        cq.requestNotify(false);
        if (pollOnce() > 0) {
            return;
        }
        if (channel.await(SLICE) == null) {
            packetProgress();
        }
        dog.check();
    }

    /** One idle turn while waiting for memory to change (RDMA WRITEs make no completion). */
    void idleMemory(int spins) {
        if (!dedicated) {
            idleWait();
            return;
        }
        if (spins < 2000) {
            Thread.onSpinWait();
        } else {
            LockSupport.parkNanos(20_000);
            if ((spins & 1023) == 0) {
                packetProgress();
            }
        }
        dog.idle();
    }

    /** A passive DEDICATED side sees no completions while the client works: packets arriving count as progress. */
    private void packetProgress() {
        long now = System.nanoTime();
        if (now - nextCounterCheck < 0) {
            return;
        }
        nextCounterCheck = now + 500_000_000L;
        long r = io.jrdma.tools.oob.Roce.packets(ctx);
        if (r != lastRcvdPkts) {
            lastRcvdPkts = r;
            dog.progress();
        }
    }

    /** Posts a data request, polling while the send queue is full. Not for use inside a {@link RecvSink}. */
    void postData(SendWorkRequest wr) {
        int rc;
        while ((rc = qp.postSend(wr)) == RdmaException.Errno.ENOMEM.value()) {
            if (pollOnce() == 0) {
                idleWait();
            }
        }
        if (rc != 0) {
            throw postFailure(rc);
        }
    }

    PerfFailure postFailure(int rc) {
        return new PerfFailure("posting a " + test.cliName() + " request failed: " + RdmaException.Errno.of(rc)
                + " (QP state " + qp.state() + ")");
    }

    // ------------------------------------------------------------------ control messages

    /** Sends a control message (after the previous one completed, so the outbox is free). */
    void sendCtrl(CtrlMsg m) {
        dog.reset("sending " + CtrlMsg.typeName(m.type) + " to the peer");
        while (ctrlDone < ctrlSent) {
            if (pollOnce() == 0) {
                idleWait();
            }
        }
        awaitCredit(); // a control message takes one of a send_bw server's receives too
        int len = m.writeTo(buf, ctrlOff + OUTBOX);
        ctrlWr.reset().wrId(CTRL_SEND | ctrlSent).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .sge(0, base + ctrlOff + OUTBOX, len, lkey).remote(peerAddr + peerCtrl + INBOX, peerRkey)
                .imm((m.type << 24) | (m.phase & 0xFFFFFF));
        int rc;
        while ((rc = qp.postSend(ctrlWr)) == RdmaException.Errno.ENOMEM.value()) {
            if (pollOnce() == 0) {
                idleWait();
            }
        }
        if (rc != 0) {
            throw new PerfFailure("posting a control message failed: " + RdmaException.Errno.of(rc) + " (QP state "
                    + qp.state() + ")");
        }
        ctrlSent++;
        if (peerRecvs > 0) {
            consumed++;
        }
    }

    /** Waits for the next control message, which must be of {@code type}. */
    CtrlMsg awaitCtrl(int type, String doing) {
        dog.reset(doing);
        while (!ctrlArrived) {
            if (pollOnce() == 0) {
                idleWait();
            }
        }
        ctrlArrived = false;
        if (in.type != type) {
            throw new PerfFailure("protocol error: expected " + CtrlMsg.typeName(type) + " from the peer, got "
                    + CtrlMsg.typeName(in.type));
        }
        return in;
    }

    /** Waits until every control message sent was acknowledged by the peer. */
    void awaitCtrlSent(String doing) {
        dog.reset(doing);
        while (ctrlDone < ctrlSent) {
            if (pollOnce() == 0) {
                idleWait();
            }
        }
    }

    /** INVOKER only: keeps the engine turning briefly, so the last acknowledgements leave before closing. */
    void linger() {
        if (dedicated) {
            return;
        }
        Roce.linger(ctx, 20_000_000L, 200);
    }

    // ------------------------------------------------------------------ data helpers

    /** @return the pattern image of {@code length} bytes with {@code seed} (a reused scratch segment) */
    MemorySegment expected(long seed, long length) {
        if (expected == null || expected.byteSize() < length) {
            expected = arena.allocate(Math.max(length, area), 64);
            expectedLength = -1;
        }
        if (expectedSeed != seed || expectedLength < length) {
            Pattern.fill(expected.asSlice(0, length), seed); // prefixes of the pattern agree: a longer fill serves shorter asks
            expectedSeed = seed;
            expectedLength = length;
        }
        return expected.asSlice(0, length);
    }

    byte readByteAcquire(long off) {
        return (byte) BYTE.getAcquire(buf, off);
    }

    // ------------------------------------------------------------------ reporting

    /** @return perftest's two address lines (with their GID lines) for the header */
    String[] addressLines() {
        QpAttr a = qp.query();
        int sgid = a.av() != null ? a.av().sgidIndex() : 0;
        Gid local = ctx.gid(a.portNum(), sgid);
        Gid remote = a.av() != null ? a.av().dgid() : null;
        return new String[] {
            String.format(" local address: QPN %#06x PSN %#08x RKey %#010x VAddr %#018x", qp.qpn(), a.sqPsn(),
                    mr.rkey(), base),
            " GID: " + gidDecimal(local) + " (index " + sgid + ")",
            String.format(" remote address: QPN %#06x PSN %#08x RKey %#010x VAddr %#018x", conn.peerQpn(), a.rqPsn(),
                    peerRkey, peerAddr),
            " GID: " + (remote == null ? "?" : gidDecimal(remote)),
        };
    }

    /** @return the negotiated path MTU in bytes and the outstanding READ/atomic limit */
    int[] pathMtuAndReads() {
        QpAttr a = qp.query();
        return new int[] {a.pathMtu().bytes(), a.maxRdAtomic()};
    }

    private static String gidDecimal(Gid g) {
        byte[] r = g.raw();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < r.length; i++) {
            sb.append(i == 0 ? "" : ":").append(String.format("%02d", r[i] & 0xff));
        }
        return sb.toString();
    }

    static String describe(WorkCompletion wc) {
        long id = wc.wrId();
        String what = (id & CTRL_SEND) != 0 ? "a control message"
                : (id & CTRL_RECV) != 0 ? "a control receive"
                : (id & CREDIT_SEND) != 0 ? "a credit WRITE" : "request " + id;
        String hint = switch (wc.status()) {
            case RETRY_EXC_ERR -> ": the peer stopped answering (transport retries exhausted)";
            case RNR_RETRY_EXC_ERR -> ": the peer had no receive posted (RNR retries exhausted)";
            case REM_ACCESS_ERR -> ": the peer refused the access (address, rkey or permission)";
            case REM_INV_REQ_ERR -> ": the peer found the request invalid";
            case LOC_LEN_ERR -> ": a message did not fit the receive buffer";
            case WR_FLUSH_ERR -> ": the QP entered the error state after an earlier error";
            default -> "";
        };
        return "work completion error " + wc.status() + " on " + what + hint;
    }

    // ------------------------------------------------------------------ teardown

    @Override
    public void close() {
        closeQuietly(conn);
        closeQuietly(qp);
        closeQuietly(mr);
        closeQuietly(cq);
        closeQuietly(channel);
        closeQuietly(pd);
        try {
            arena.close();
        } catch (RuntimeException ignored) {
            // already closed
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // teardown after the result is known: nothing useful to add
        }
    }
}

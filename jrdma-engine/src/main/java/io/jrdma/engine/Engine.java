package io.jrdma.engine;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.link.Link;
import io.jrdma.engine.link.PacketSink;
import io.jrdma.engine.util.IntMap;
import io.jrdma.engine.util.MpscQueue;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.wire.Bth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.Ipv4IdSolver;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The software NIC of one device context: an agent whose duty cycle
 * <ol>
 * <li>runs queued control operations (modify, create, destroy: the single-writer rule),</li>
 * <li>receives up to {@value #RX_BATCH} packets and checks each as rxe_recv.c does (length,
 *     opcode, ICRC, destination QP, source address, QP state) before handing requests to the
 *     {@link Responder} and responses to the {@link Completer},</li>
 * <li>takes doorbells and runs every active QP: flush if in error, responder output
 *     (READ/atomic responses, coalesced ACKs and NAKs), timers, {@link Requester}.</li>
 * </ol>
 * Everything here runs on one thread (the engine thread, or the caller in INVOKER mode), reads
 * the clock once per cycle and allocates nothing in steady state.
 */
final class Engine implements PacketSink {
    static final int RX_BATCH = 64;
    static final int QP_SEND_BUDGET = 32;
    static final int TX_BUFFER = 8192;

    final Context context;
    final Link link;
    final NanoClock clock;
    final Counters counters;
    final Icrc icrc = new Icrc();
    private final Ipv4IdSolver idSolver = new Ipv4IdSolver();
    private final boolean anyIpv4Id;
    /**
     * The packet being built: one slot of {@link #txSlots}. A link that holds packets until
     * {@link Link#flush} (batched transmit) keeps a reference to each sent slot, so the engine
     * moves to the next slot after every send; the ring has one slot more than the link holds,
     * so the slot being built is never one the link still holds.
     */
    ByteBuffer tx;
    MemorySegment txSeg;
    private final ByteBuffer[] txBufs;
    private final MemorySegment[] txSegs;
    private int txSlot;
    private final boolean linkHolds;
    final IntMap<Qp> qps = new IntMap<>(64);
    private final MpscQueue<Qp> doorbells = new MpscQueue<>(1 << 16);
    private volatile boolean doorbellOverflow;
    final ConcurrentLinkedQueue<Context.ControlTask> controlQueue = new ConcurrentLinkedQueue<>();
    final Requester requester;
    final Completer completer;
    final Responder responder;
    /** The iWARP transport (siw's tx/rx over TCP) when this context is an iWARP device, else null (RoCE over {@link #link}). */
    final IwarpEngine iwarp;
    private Qp[] active = new Qp[64];
    private int activeCount;
    long now;
    /** duty cycles run so far: a coalesced ACK waits for the cycle after the packet that asked for it */
    long cycle;
    volatile Thread thread;
    volatile boolean parked;

    Engine(Context context, Link link, NanoClock clock) {
        this.context = context;
        this.link = link;
        this.clock = clock;
        this.counters = context.counters;
        this.anyIpv4Id = context.options.anyIpv4Id();
        this.requester = new Requester(this);
        this.completer = new Completer(this);
        this.responder = new Responder(this);
        this.iwarp = context.iwarpMode ? new IwarpEngine(this) : null;
        this.linkHolds = iwarp == null && link.heldPackets() > 0;
        int slots = linkHolds ? link.heldPackets() + 1 : 1;
        ByteBuffer area = ByteBuffer.allocateDirect(TX_BUFFER * slots);
        txBufs = new ByteBuffer[slots];
        txSegs = new MemorySegment[slots];
        for (int i = 0; i < slots; i++) {
            txBufs[i] = area.slice(i * TX_BUFFER, TX_BUFFER);
            txSegs[i] = MemorySegment.ofBuffer(txBufs[i]);
        }
        tx = txBufs[0];
        txSeg = txSegs[0];
    }

    /** One duty cycle. @return the amount of work done; 0 means idle */
    int doWork() {
        now = clock.nanoTime();
        int work = 0;
        if (!controlQueue.isEmpty()) {
            work += runControl();
        }
        cycle++;
        work += drainDoorbells();
        if (linkHolds) {
            link.flush(); // fresh posts leave before this cycle's receive system call
        }
        work += iwarp == null ? link.poll(this, RX_BATCH) : iwarp.receive();
        work += serviceActive();
        if (linkHolds) {
            link.flush();
        }
        return work;
    }

    private int runControl() {
        int n = 0;
        Context.ControlTask t;
        while ((t = controlQueue.poll()) != null) {
            t.run();
            n++;
        }
        return n;
    }

    /** Any thread: a QP has new work. Wakes a parked engine thread. */
    void doorbell(Qp qp) {
        if (!doorbells.offer(qp)) {
            doorbellOverflow = true;
        }
        if (parked) {
            Thread t = thread;
            if (t != null) {
                java.util.concurrent.locks.LockSupport.unpark(t);
            }
        }
    }

    /** @return true if there is queued work the engine has not seen (checked before parking) */
    boolean hasPendingSignals() {
        return !doorbells.isEmpty() || !controlQueue.isEmpty() || doorbellOverflow;
    }

    private int drainDoorbells() {
        int n = 0;
        Qp qp;
        while ((qp = doorbells.poll()) != null) {
            qp.clearDoorbell();
            schedule(qp);
            // fast path: a fresh post goes out before this cycle's receive system call
            n += 1 + (iwarp == null ? requester.run(qp, QP_SEND_BUDGET) : iwarp.transmit(qp, QP_SEND_BUDGET));
        }
        if (doorbellOverflow) {
            doorbellOverflow = false;
            qps.forEachValue(this::schedule);
        }
        return n;
    }

    /** Engine thread: puts a QP on the active list (once). */
    void schedule(Qp qp) {
        if (qp.active || qp.destroyed) {
            return;
        }
        if (activeCount == active.length) {
            active = java.util.Arrays.copyOf(active, activeCount * 2);
        }
        qp.active = true;
        active[activeCount++] = qp;
    }

    void add(Qp qp) {
        qps.put(qp.qpn, qp);
    }

    void remove(Qp qp) {
        qps.remove(qp.qpn);
        for (int i = 0; i < activeCount; i++) {
            if (active[i] == qp) {
                active[i] = active[--activeCount];
                active[activeCount] = null;
                break;
            }
        }
        qp.active = false;
    }

    private int serviceActive() {
        int work = 0;
        for (int i = 0; i < activeCount; ) {
            Qp qp = active[i];
            if (qp.state == QpState.ERROR) {
                work += flush(qp);
                if (iwarp != null) {
                    work += iwarp.onError(qp);
                }
            } else if (iwarp != null) {
                work += iwarp.transmit(qp, QP_SEND_BUDGET);
            } else {
                completer.checkTimers(qp);
                work += requester.run(qp, QP_SEND_BUDGET);
                work += responder.output(qp, QP_SEND_BUDGET);
            }
            if (iwarp != null ? iwarp.hasWork(qp) : hasWork(qp)) {
                i++;
            } else {
                qp.active = false;
                active[i] = active[--activeCount];
                active[activeCount] = null;
            }
        }
        return work;
    }

    static boolean hasWork(Qp qp) {
        if (qp.state == QpState.ERROR) {
            return qp.sqConsumer != qp.sqProducerAcquire() || qp.rqConsumer != qp.rqProducerAcquire();
        }
        if (qp.state == QpState.RESET || qp.state == QpState.INIT) {
            return false;
        }
        return qp.resCount > 0 || qp.ackPending || qp.ackDueAt != 0 || qp.nakPendingSyndrome >= 0
                || qp.sqConsumer != qp.sqProducerAcquire();
    }

    /**
     * Control path, before a QP goes away: sends the ACK it still owes (deferred or coalesced),
     * so the peer's last message is acknowledged instead of retried until its retry count runs out.
     */
    void sendOwedAck(Qp qp) {
        if ((qp.state == QpState.RTR || qp.state == QpState.RTS || qp.state == QpState.SQD)
                && (qp.ackPending || qp.ackDueAt != 0)) {
            qp.ackCycle = cycle - 1;
            if (qp.ackDueAt != 0) {
                qp.ackDueAt = now;
            }
            responder.output(qp, QP_SEND_BUDGET);
            if (linkHolds) {
                link.flush();
            }
        }
    }

    /** Moves a QP to ERROR (IBA 10.3.1): its queued requests will complete with WR_FLUSH_ERR. */
    void enterError(Qp qp) {
        if (Fallbacks.LOG.isLoggable(System.Logger.Level.DEBUG)) { // once per QP: not a data-path cost
            Fallbacks.LOG.log(System.Logger.Level.DEBUG, "QP 0x" + Integer.toHexString(qp.qpn) + " of " + context
                    + " moves from " + qp.state + " to ERROR (" + Fallbacks.caller() + ")");
        }
        qp.state = QpState.ERROR;
        qp.retransmitDeadline = 0;
        qp.rnrWaiting = false;
        qp.resCount = 0;
        qp.ackPending = false;
        qp.ackDueAt = 0;
        qp.nakPendingSyndrome = -1;
        schedule(qp);
    }

    /** Completes everything queued on an ERROR QP with WR_FLUSH_ERR, send queue then receive queue. */
    int flush(Qp qp) {
        int n = 0;
        long p = qp.sqProducerAcquire();
        while (qp.sqConsumer != p) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            qp.sendCq.push(w.wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.of(w.opcode), 0, 0, 0, qp.qpn, 0);
            qp.sqConsumerRelease(qp.sqConsumer + 1);
            n++;
        }
        qp.reqIndex = qp.sqConsumer;
        qp.reqOffset = 0;
        qp.rdAtomicInFlight = 0;
        long rp = qp.rqProducerAcquire();
        while (qp.rqConsumer != rp) {
            RecvWqe r = qp.rq[(int) (qp.rqConsumer & qp.rqMask)];
            qp.recvCq.push(r.wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qp.qpn, 0);
            qp.rqConsumerRelease(qp.rqConsumer + 1);
            n++;
        }
        qp.respRecv = null;
        return n;
    }

    // ------------------------------------------------------------------ packet receiver (rxe_recv.c)

    @Override
    public void onPacket(ByteBuffer buf, MemorySegment seg, int len, Endpoint src, Endpoint dst) {
        counters.increment(Counter.RCVD_PKTS);
        if (len < Bth.LENGTH + Icrc.LENGTH) {
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int opcode = Bth.opcode(seg, 0);
        if (!IbOpcode.valid(opcode) || Bth.tver(seg, 0) != 0) {
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int hdr = IbOpcode.headerLength(opcode);
        int payload = len - hdr - Bth.padCnt(seg, 0) - Icrc.LENGTH;
        int mask = IbOpcode.mask(opcode);
        if (payload < 0 || ((mask & IbOpcode.PAYLOAD) == 0 && payload != 0)) {
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int expected = icrc(src, dst, buf, len - Icrc.LENGTH);
        int received = Icrc.read(seg, len - Icrc.LENGTH);
        if (expected != received) {
            if (src.isIpv6() || !anyIpv4Id || idSolver.solve(expected, received, len - Icrc.LENGTH) < 0) {
                counters.increment(Counter.RCVD_ICRC_ERR);
                return;
            }
            counters.increment(Counter.ICRC_IPV4_ID_SOLVED);
        }
        int pkey = Bth.pkey(seg, 0);
        if ((pkey & 0x7FFF) != 0x7FFF || opcode >= 0x20) { // default P_Key only; RC opcodes only (RC QPs)
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        Qp qp = qps.get(Bth.destQp(seg, 0));
        if (qp == null) {
            counters.increment(Counter.RCVD_UNKNOWN_QP);
            return;
        }
        if (qp.remote == null || !src.sameAddress(qp.remote)) {
            counters.increment(Counter.RCVD_BAD_ADDR);
            return;
        }
        try {
            if ((mask & IbOpcode.REQ) != 0) {
                responder.onRequest(qp, seg, opcode, mask, hdr, payload);
            } else {
                completer.onResponse(qp, seg, opcode, mask, hdr, payload);
            }
        } catch (RuntimeException e) {
            // e.g. a region whose memory was freed under it: the packet is dropped, the engine goes on
            counters.increment(Counter.ENGINE_ERRORS);
        }
    }

    // ------------------------------------------------------------------ transmit

    /**
     * Appends the ICRC to the packet in {@code tx[0, len)} and sends it on the QP's path.
     *
     * @return false when the link is full (nothing was sent; the caller retries later)
     */
    boolean transmit(Qp qp, int len) {
        Icrc.write(txSeg, len, icrc(qp.local, qp.remote, tx, len));
        // batched transmit (sendmmsg, UDP GSO) only toward a jrdma peer, the only one with which
        // peerAcksUnrequested is negotiated: both ends take the IPv4 ID as 0 in the ICRC, and the Linux peers of
        // the interop suites keep the one-send-per-packet path they were proven on (docs/interop.md)
        if (!link.send(tx, txSeg, len + Icrc.LENGTH, qp.local, qp.remote, qp.peerAcksUnrequested)) {
            counters.increment(Counter.SEND_ERR);
            return false;
        }
        counters.increment(Counter.SENT_PKTS);
        if (linkHolds) { // the link may still hold this slot: build the next packet in the next one
            int next = txSlot + 1 == txBufs.length ? 0 : txSlot + 1;
            txSlot = next;
            tx = txBufs[next];
            txSeg = txSegs[next];
        }
        return true;
    }

    /** The ICRC of {@code buf[0, len)} sent from {@code from} to {@code to}; IPv4 with the ID taken as 0 (docs/wire.md). */
    private int icrc(Endpoint from, Endpoint to, ByteBuffer buf, int len) {
        return from.isIpv6()
                ? icrc.computeIpv6(from.ipv6Bytes(), to.ipv6Bytes(), from.port(), to.port(), buf, 0, len)
                : icrc.computeIpv4(from.ipv4(), to.ipv4(), 0, from.port(), to.port(), buf, 0, len);
    }

    /** Zero-fills the pad bytes after a payload ending at {@code end}; @return the pad count. */
    int pad(int end, int payload) {
        int pad = (-payload) & 3;
        for (int i = 0; i < pad; i++) {
            txSeg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, end + i, (byte) 0);
        }
        return pad;
    }

    static long timeoutNanos(int timeout) {
        return timeout == 0 ? 0 : 4096L << timeout;
    }

    /** IBA table 45 (RNR NAK timer field), in nanoseconds. */
    static long rnrNanos(int code) {
        return RNR_NANOS[code & 31];
    }

    private static final long[] RNR_NANOS = {
        655_360_000L, 10_000, 20_000, 30_000, 40_000, 60_000, 80_000, 120_000, 160_000, 240_000, 320_000,
        480_000, 640_000, 960_000, 1_280_000, 1_920_000, 2_560_000, 3_840_000, 5_120_000, 7_680_000,
        10_240_000, 15_360_000, 20_480_000, 30_720_000, 40_960_000, 61_440_000, 81_920_000, 122_880_000,
        163_840_000, 245_760_000, 327_680_000, 491_520_000
    };
}

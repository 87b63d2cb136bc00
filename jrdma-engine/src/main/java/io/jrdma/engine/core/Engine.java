package io.jrdma.engine.core;

import io.jrdma.engine.util.IntMap;
import io.jrdma.engine.util.MpscQueue;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;

import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The software NIC of one device context, transport-neutral: an agent whose duty cycle
 * <ol>
 * <li>runs queued control operations (modify, create, destroy: the single-writer rule),</li>
 * <li>takes doorbells: each QP whose doorbell rang transmits at once ({@link Transport#transmit}),</li>
 * <li>lets the transport receive one batch ({@link Transport#receive}),</li>
 * <li>runs every active QP: flush if in error, else {@link Transport#service}.</li>
 * </ol>
 * What travels on the wire, and how, is the {@link Transport}'s: RoCE ({@code roce.RoceTransport}) or
 * iWARP ({@code iwarp.IwarpEngine}).
 * Everything here runs on one thread (the engine thread, or the caller in INVOKER mode), reads
 * the clock once per cycle (a transport may read it again where a cycle is too coarse: RoCE arms a
 * QP's retransmit timer when its packets have left) and allocates nothing in steady state.
 */
public final class Engine {
    public static final int QP_SEND_BUDGET = 32;

    public final Context context;
    public final NanoClock clock;
    public final Counters counters;
    public final IntMap<Qp> qps = new IntMap<>(64);
    private final MpscQueue<Qp> doorbells = new MpscQueue<>(1 << 16);
    private volatile boolean doorbellOverflow;
    final ConcurrentLinkedQueue<Context.ControlTask> controlQueue = new ConcurrentLinkedQueue<>();
    /** The transport: every wire-specific step of the duty cycle goes through it. */
    public final Transport transport;
    private Qp[] active = new Qp[64];
    private int activeCount;
    /** the clock at the start of this duty cycle (only if the transport {@link Transport#readsCycleClock reads it}) */
    public long now;
    private final boolean cycleClock;
    /** duty cycles run so far: a coalesced ACK waits for the cycle after the packet that asked for it */
    public long cycle;
    public volatile Thread thread;
    volatile boolean parked;
    /** INVOKER: 1 while a thread drives the engine ({@link #tryDrive}): a duty cycle, or a send queue run at post time */
    @SuppressWarnings("unused")
    private volatile int driving;
    private static final java.lang.invoke.VarHandle DRIVING;

    static {
        try {
            DRIVING = java.lang.invoke.MethodHandles.lookup().findVarHandle(Engine.class, "driving", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public Engine(Context context, NanoClock clock, TransportFactory transport) {
        this.context = context;
        this.clock = clock;
        this.counters = context.counters;
        this.transport = transport.create(this);
        this.cycleClock = this.transport.readsCycleClock();
        this.threadFence = this.transport.threadFence();
    }

    /** One duty cycle. @return the amount of work done; 0 means idle */
    int doWork() {
        if (cycleClock) {
            now = clock.nanoTime();
        }
        int work = 0;
        if (!controlQueue.isEmpty()) {
            work += runControl();
        }
        cycle++;
        work += drainDoorbells();
        transport.beforeReceive();
        work += transport.receive();
        work += serviceActive();
        transport.afterService();
        if (overrunPending) {
            overrunPending = false;
            qps.forEachValue(this::errorIfOverrun);
        }
        return work;
    }

    private boolean overrunPending;

    /** the last poll took a receive straight into its completion: the next one runs a duty cycle first */
    private boolean tookDirect;

    /**
     * INVOKER, the caller drives the engine: a poll of one completion from {@code cq}. When the CQ holds none and
     * the poll before did not take this way, the transport may complete an arrived receive straight into {@code wc}
     * ({@link Transport#receiveInto}); else one duty cycle. Never twice in a row, so that a stream of arrivals does
     * not keep the duty cycle (control operations, doorbells, results, timers) from running.
     *
     * @return true when {@code wc} holds a completion taken that way
     */
    boolean pollInto(Cq cq, io.jrdma.verbs.WorkCompletion wc) {
        if (!tookDirect && cq.takesDirect() && transport.receiveInto(cq, wc)) {
            tookDirect = true;
            cq.directTaken(wc);
            return true;
        }
        tookDirect = false;
        doWork();
        return false;
    }

    /**
     * INVOKER mode: claims the engine for the calling thread (one CAS), so that a send queue run at post time
     * ({@link #executeAtPost}) and a duty cycle ({@code DeviceContext.progress}) never overlap, even when the
     * application posts on one thread and polls on another. @return false when another thread drives it now
     */
    boolean tryDrive() {
        Thread t = Thread.currentThread();
        if (driver == t) {
            return false; // already driving (a claim inside a claim fails, as the CAS did)
        }
        Bias b = bias;
        if (b != null && b.owner == t) {
            // the thread the claim is biased to: a plain store and two loads, no locked instruction. The store before
            // the loads pairs with a claimer's CAS, then its fence (membarrier), then its load of held (tryDriveSlow):
            // either that claimer sees held set and backs off, or this thread sees its CAS here and backs off. The
            // Java memory model lets an opaque store pass a later volatile load; HotSpot does not (its compilers put
            // a CPU-order barrier around each VarHandle access that is not plain), and the CPU's own reordering is
            // what the other side's fence takes care of: the same reliance as the one-sided operations' own hold
            HELD.setOpaque(b, 1);
            if ((int) DRIVING.getVolatile(this) == 0 && bias == b) {
                heldBias = b;
                driver = t;
                slowRun = 0; // a claim of the biased thread: the slow claims of others are no longer in a row
                slowAny = 0;
                return true;
            }
            HELD.setRelease(b, 0);
            return false; // another thread holds the claim (or took the bias: its CAS first, then ours)
        }
        return tryDriveSlow(t);
    }

    /**
     * {@link #tryDrive} for a thread the claim is not biased to: the CAS, then, with a bias, the fence and a bounded
     * wait for the biased thread's claim in progress; it fails (the CAS given back) when that claim outlasts the wait,
     * so that a claimer never blocks behind another thread's claim, as with the CAS alone.
     */
    private boolean tryDriveSlow(Thread t) {
        if (!DRIVING.compareAndSet(this, 0, 1)) {
            return false;
        }
        Bias b = bias;
        if (b != null) {
            try {
                // every running thread through a full barrier: the biased thread's store of held, if it came before
                // its load of DRIVING missed our CAS, is visible now; a load it makes later sees the CAS
                threadFence.run();
            } catch (RuntimeException | Error e) {
                DRIVING.setRelease(this, 0);
                throw e;
            }
            // acquire partner: its release of held (endDrive). While DRIVING is ours it cannot claim again, so the
            // word only goes from 1 to 0, at the end of the claim in progress
            for (int spins = 0; (int) HELD.getAcquire(b) != 0; spins++) {
                if (spins == BIASED_WAIT_SPINS) {
                    DRIVING.setRelease(this, 0);
                    return false; // it drives the engine now
                }
                Thread.onSpinWait();
            }
        }
        if (threadFence != null) {
            // the claim goes to a thread that takes it the slow way BIAS_AFTER times in a row with no claim of the
            // biased thread between (the application's thread soon after the context opens, and again after it moved
            // to another thread); slow claims of several threads in a row, the biased one claiming no more, end the bias
            if (t == slowThread) {
                slowRun++;
            } else {
                slowThread = t;
                slowRun = 1;
            }
            slowAny++;
            if (slowRun >= BIAS_AFTER) { // (never the biased thread's own: it does not come here)
                bias = new Bias(t);
                slowRun = 0;
                slowAny = 0;
            } else if (b != null && slowAny >= 4 * BIAS_AFTER) {
                bias = null; // a stale bias: every claim paid the fence
                slowAny = 0;
            }
        }
        heldBias = null;
        driver = t;
        return true;
    }

    /**
     * A close: the claim the caller took ({@link #tryDrive}) kept for good, every later claim failing at once, the
     * caller's own included. A claim taken through the bias sets the CAS's word too (a slow claimer that took it
     * meanwhile gives it back within its bounded wait).
     */
    void keepClaim() {
        if (heldBias != null) {
            while (!DRIVING.compareAndSet(this, 0, 1)) {
                Thread.onSpinWait();
            }
        }
        kept = true;
    }

    /** under the claim: {@link #keepClaim} ran, and no {@link #endDrive} gives the CAS's word back */
    private boolean kept;

    /** Ends {@link #tryDrive}: everything the driver wrote is published with the release. */
    void endDrive() {
        driver = null;
        Bias b = heldBias;
        if (b != null) {
            heldBias = null;
            HELD.setRelease(b, 0); // acquire partner: tryDriveSlow's wait, or this thread's next claim (program order)
        } else if (!kept) {
            DRIVING.setRelease(this, 0);
        }
    }

    /**
     * The thread the INVOKER claim is biased to: it claims by its own word ({@code held}) instead of the CAS, which a
     * transport with an asymmetric fence ({@link Transport#threadFence}) lets it do. One object per bias, so that a
     * thread that read an old bias sets and clears the old object's word, which nobody waits on any more.
     */
    private static final class Bias {
        final Thread owner;
        @SuppressWarnings("unused")
        volatile int held;

        Bias(Thread owner) {
            this.owner = owner;
        }
    }

    /** @return the thread the claim is biased to now, or null (tests) */
    Thread biasedTo() {
        Bias b = bias;
        return b == null ? null : b.owner;
    }

    /** @return whether the transport gave a fence, which biased claims need (tests) */
    boolean biasable() {
        return threadFence != null;
    }

    /** the slow claims in a row by one thread after which the claim is biased to it */
    static final int BIAS_AFTER = 16;
    /** how long a slow claimer waits for the biased thread's claim in progress before it fails (some microseconds) */
    private static final int BIASED_WAIT_SPINS = 1_000;
    private static final java.lang.invoke.VarHandle HELD;

    static {
        try {
            HELD = java.lang.invoke.MethodHandles.lookup().findVarHandle(Bias.class, "held", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** the transport's fence through every running thread (membarrier), or null: no bias, every claim a CAS */
    private final Runnable threadFence;
    /** written under the claim: the biased thread, or null */
    private volatile Bias bias;
    /** the driver's own: the bias it holds the claim by, or null for the CAS */
    private Bias heldBias;
    /** under the claim: the thread of the last slow claim, and how many in a row it made */
    private Thread slowThread;
    private int slowRun;
    /** under the claim: slow claims of any threads since the bias was set or its thread last claimed */
    private int slowAny;

    /**
     * INVOKER: the thread that drives the engine now, written by that thread alone (after its claim, and null before
     * its release), so a thread that reads itself here drives it (another thread reads its own write or another's)
     */
    private Thread driver;

    /** @return true when the calling thread drives the engine now (INVOKER: inside a duty cycle or a post) */
    boolean drivenByCaller() {
        return driver == Thread.currentThread();
    }

    /**
     * INVOKER mode, the posting thread, right after a post published its WQE (a QP whose transport asked for
     * it: {@link Qp#executeAtPost}): runs the QP's send queue now, in order from its head, as a duty cycle's
     * {@link Transport#transmit} would, so a request that can complete at once (shared memory's WRITE, READ,
     * atomics) completes inside the post, without the doorbell queue and a duty cycle. What is left (a SEND
     * waiting for its receiver) puts the QP on the active list for the next duty cycle.
     *
     * @return false when another thread drives the engine at this moment: the caller rings the doorbell instead
     */
    boolean executeAtPost(Qp qp) {
        if (!tryDrive()) {
            return false;
        }
        try {
            if (qp.state != QpState.ERROR && !qp.destroyed) {
                transport.transmit(qp, QP_SEND_BUDGET);
            }
            if (transport.hasWork(qp) || qp.state == QpState.ERROR) {
                schedule(qp);
            }
            return true;
        } finally {
            endDrive();
        }
    }

    /** {@link #postDirect}'s answer when it did nothing: the post queues the request as usual. */
    public static final int DECLINED = Integer.MIN_VALUE;
    /**
     * {@link Transport#executeDirect}'s answer for a request it sent but that completes later (a SEND waits for its
     * receiver's answer): it is kept as the send queue's head WQE ({@link Qp#keepDirect}), which the transport's
     * service completes when the answer comes.
     */
    public static final int IN_FLIGHT = Integer.MIN_VALUE + 1;
    private static final WcStatus[] STATUS = WcStatus.values();

    /**
     * INVOKER mode, the posting thread, before the post fills a WQE (a QP that executes at post, one SGE, a
     * one-sided request or a SEND; {@link Qp#postSend} checked the request as for any post): when nothing is queued
     * on the send queue before it (or, for a SEND, only requests the transport has under way:
     * {@link Transport#directBehind}), hands the request to {@link Transport#executeDirect}, which completes it here,
     * from the work request itself: no WQE, no send-queue slot, no pass through the transport's service loop, and
     * the order of the send queue is kept because it is empty (or every request before it is sent). The completion (when signaled, or on an error) is
     * pushed here and an error moves the QP to ERROR, as the service loop's retire does. A SEND is sent here the same
     * way but completes when its receiver answers: the transport keeps it as the queue's head WQE
     * ({@link #IN_FLIGHT}), and the QP goes on the active list, whose service completes it.
     *
     * @return 0 when the request was executed (its completion is pushed, or it was unsignaled), or {@link #DECLINED}
     *         when the post must queue it (another thread drives the engine, requests are queued, the QP is not in
     *         RTS, or the transport declined it: a local key to check the slow way, an inline source, ...)
     */
    int postDirect(Qp qp, io.jrdma.verbs.SendWorkRequest wr, io.jrdma.verbs.WrOpcode op, int length) {
        if (!tryDrive()) {
            return DECLINED;
        }
        try {
            if (qp.state != QpState.RTS || qp.destroyed
                    || qp.sqConsumer != qp.sqProducer && ((1 << op.ordinal() & Qp.SEND_OPS) == 0 || !transport.directBehind(qp))) {
                return DECLINED;
            }
            int st = transport.executeDirect(qp, wr, op, length);
            if (st == DECLINED) {
                return DECLINED;
            }
            if (st == IN_FLIGHT) {
                schedule(qp); // the service reads the answer
                return 0;
            }
            boolean ok = st == 0; // WcStatus.SUCCESS
            if (!ok || qp.init.sqSigAll() || (wr.flags() & io.jrdma.verbs.SendFlags.SIGNALED) != 0) {
                qp.sendCq.push(wr.wrId(), STATUS[st], WcOpcode.of(op), op.isAtomic() ? 8 : length, 0, 0, qp.qpn, 0);
            }
            if (!ok) {
                enterError(qp);
            }
            return 0;
        } finally {
            endDrive();
        }
    }

    /** Engine thread: a CQ overran; at the end of this cycle the QPs that use it move to ERROR. */
    void cqOverrun() {
        overrunPending = true;
    }

    private void errorIfOverrun(Qp qp) {
        if (qp.state != QpState.ERROR && qp.state != QpState.RESET && (qp.sendCq.overrun || qp.recvCq.overrun)) {
            enterError(qp);
        }
    }

    /**
     * The engine thread, or in INVOKER mode the thread holding the claim: runs the control operations other threads
     * queued ({@link Context#control}). @return how many
     */
    int runControl() {
        int n = 0;
        Context.ControlTask t;
        while ((t = controlQueue.poll()) != null) {
            t.run();
            n++;
        }
        return n;
    }

    /** Any thread: a QP has new work. Wakes a parked engine thread. */
    public void doorbell(Qp qp) {
        if (!doorbells.offer(qp)) {
            doorbellOverflow = true;
        }
        if (parked) {
            Thread t = thread;
            if (t != null) {
                java.util.concurrent.locks.LockSupport.unpark(t);
            }
            transport.wake();
        }
    }

    /**
     * Set by {@link Context#close} before it wakes the engine thread: a thread between its loop's check and its
     * park (which the wake cannot reach before the transport's sleeping flag is up) sees it here and does not sleep.
     */
    volatile boolean stopping;

    /** @return true if there is queued work the engine has not seen, or the context closes (checked before parking) */
    public boolean hasPendingSignals() {
        return stopping || !doorbells.isEmpty() || !controlQueue.isEmpty() || doorbellOverflow;
    }

    private int drainDoorbells() {
        int n = 0;
        Qp qp;
        while ((qp = doorbells.poll()) != null) {
            qp.clearDoorbell();
            schedule(qp);
            // fast path: a fresh post goes out before this cycle's receive system call
            n += 1 + transport.transmit(qp, QP_SEND_BUDGET);
        }
        if (doorbellOverflow) {
            doorbellOverflow = false;
            qps.forEachValue(this::rescheduleAfterOverflow);
        }
        return n;
    }

    /**
     * After the doorbell queue overflowed: a QP whose ring found the queue full keeps its doorbell raised, so its
     * later posts would not ring again; cleared here as a drained one's is, and the QP scheduled (found in review:
     * left raised, such a QP's posts after it went idle never ran).
     */
    private void rescheduleAfterOverflow(Qp qp) {
        qp.clearDoorbell();
        schedule(qp);
    }

    /** Engine thread: @return true while a QP is on the active list (a request in flight, a timer, a flush) */
    public boolean hasActiveQps() {
        return activeCount > 0;
    }

    /** Engine thread: puts a QP on the active list (once). */
    public void schedule(Qp qp) {
        if (qp.active || qp.destroyed) {
            return;
        }
        if (activeCount == active.length) {
            active = java.util.Arrays.copyOf(active, activeCount * 2);
        }
        qp.active = true;
        active[activeCount++] = qp;
    }

    public void add(Qp qp) {
        qps.put(qp.qpn, qp);
    }

    public void remove(Qp qp) {
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
                work += transport.serviceError(qp);
            } else {
                work += transport.service(qp, QP_SEND_BUDGET);
            }
            if (transport.hasWork(qp)) {
                i++;
            } else {
                qp.active = false;
                active[i] = active[--activeCount];
                active[activeCount] = null;
            }
        }
        return work;
    }

    /** @return true while a QP in ERROR still has queued requests to complete with WR_FLUSH_ERR */
    public static boolean flushPending(Qp qp) {
        return qp.sqConsumer != qp.sqProducerAcquire() || qp.rqConsumer != qp.rqProducerAcquire() || qp.srqFlushPending();
    }

    /** Moves a QP to ERROR (IBA 10.3.1): its queued requests will complete with WR_FLUSH_ERR. */
    public void enterError(Qp qp) {
        if (Fallbacks.LOG.isLoggable(System.Logger.Level.DEBUG)) { // once per QP: not a data-path cost
            Fallbacks.LOG.log(System.Logger.Level.DEBUG, "QP 0x" + Integer.toHexString(qp.qpn) + " of " + context
                    + " moves from " + qp.state + " to ERROR (" + Fallbacks.caller() + ")");
        }
        QpEvent.enteredError(qp); // an error path, never per packet
        qp.state = QpState.ERROR;
        transport.enteredError(qp);
        schedule(qp);
    }

    /** Completes everything queued on an ERROR QP with WR_FLUSH_ERR, send queue then receive queue. */
    public int flush(Qp qp) {
        int n = 0;
        long p = qp.sqProducerAcquire();
        while (qp.sqConsumer != p) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            qp.sendCq.push(w.wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.of(w.opcode), 0, 0, 0, qp.qpn, 0);
            qp.sqConsumerRelease(qp.sqConsumer + 1);
            n++;
        }
        long rp = qp.rqProducerAcquire();
        while (qp.rqConsumer != rp) {
            RecvWqe r = qp.rq[(int) (qp.rqConsumer & qp.rqMask)];
            qp.recvCq.push(r.wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qp.qpn, 0);
            qp.rqConsumerRelease(qp.rqConsumer + 1);
            n++;
        }
        if (qp.srq != null) {
            n += qp.flushSrq();
        }
        transport.flushed(qp);
        if (n > 0) {
            counters.add(qp.stats, QpCounter.FLUSHED, n); // per QP, what a flush completed with WR_FLUSH_ERR
        }
        return n;
    }
}

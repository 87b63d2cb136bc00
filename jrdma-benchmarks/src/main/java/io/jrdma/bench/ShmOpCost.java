package io.jrdma.bench;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The cost of one operation on the shared-memory device, on one thread, with the copies it is compared
 * with measured in the same rounds: two INVOKER contexts of {@code shm0} in this process, connected RC
 * QPs, buffers from {@code allocateBuffer}. A noise-robust companion of {@code bench/compare.sh --shm}
 * (whose two-process rows on a shared 2-core host wait for a core as often as they run): every figure
 * here is measured on this thread's CPU-time clock (operations and bandwidth alike, the copy baseline too), so an
 * A/B of two builds compares work done, not the time spent waiting for a core.
 *
 * <ul>
 * <li>{@code write8}, {@code read8}, {@code fadd8}: ns per post of a signaled 8-byte request plus the poll
 * that returns its completion (no peer thread takes part: the initiator does the operation);</li>
 * <li>{@code post8}: ns per post of an unsignaled 8-byte WRITE, nothing polled: the post alone (its checks, the
 * store, the key's in-use count and the counters), so that {@code write8 - post8} is what a completion adds
 * (its push, the poll's duty cycle, the copy into a {@code WorkCompletion});</li>
 * <li>{@code poll0}: ns per {@code CompletionQueue.poll} that finds nothing (INVOKER: a duty cycle);</li>
 * <li>{@code send8}: ns per SEND of 8 bytes into a posted receive, with the receive's and the SEND's
 * completions polled (both contexts' duty cycles on this thread: the sum of both sides' work);</li>
 * <li>{@code send8q}: the same with one more receive posted ahead throughout, so that the receive queue never
 * runs empty, as in {@code jrdma perf send_lat} (perftest's 512 receives): the receiver's engine keeps the QP
 * on its watched list from the first message (in {@code send8} the queue is empty after each message);</li>
 * <li>{@code send8i}: {@code send8q} with the SEND flagged INLINE (its 8 bytes copied into the request at post),
 * as {@code jrdma perf send_lat} posts messages up to its inline size;</li>
 * <li>{@code turn8}: ns per turn of an 8-byte SEND ping-pong between the two QPs, played on this thread as
 * {@code jrdma perf send_lat}'s loop plays one side of it: the poll that finds the peer's SEND, the reply's post
 * (INLINE, one in 100 signaled) and its receive posted again, with two more receives posted ahead (the median of
 * blocks of one ping-pong, after blocks not measured); each side's
 * previous SEND is retired in the same poll (between two processes an earlier, empty, poll retires it). What one
 * side of a ping-pong does between the message's arrival and its answer, on one core: the figure that
 * {@code AeronBench mode=turn} gives for Aeron IPC;</li>
 * <li>{@code write.S}, {@code read.S}: GB/s (bytes per ns of this thread's CPU time) of WRITEs (READs) of S
 * bytes, 16 in flight, each signaled,
 * from one source buffer of S bytes into one target buffer of S bytes (perftest's exchange uses one buffer
 * of the message size when it exceeds its 4 KiB cycle buffer), against {@code copy.S}, the
 * {@link MemorySegment#copy} of the same S bytes between the same two buffers, measured in the same round.</li>
 * </ul>
 *
 * {@code plain=true} gives the target side (b, whose memory a's WRITEs and READs reach) a buffer from a plain arena
 * instead of {@code allocateBuffer}, registered without REMOTE_ATOMIC: the provider reaches it by cross-memory
 * attach, a system call per operation (then leave {@code fadd8} out: an atomic cannot be done there).
 *
 * <pre>ShmOpCost [rounds=5] [n=200000] [sizes=65536,1048576] [secs=0.5] [dev=shm0] [plain=false] [only=write8,post8,read8,fadd8,poll0,send8,send8q,send8i,turn8,bw]</pre>
 * prints one {@code ROUND} line per round and one {@code RESULT shm_op_cost name=... median=... min=... max=...}
 * line per figure (ratios: {@code write.S/copy.S} per round).
 */
public final class ShmOpCost {
    private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    private static final int WINDOW = 16;

    /** a comma-separated list of the figures to measure (e.g. {@code write8,poll0}); empty: all */
    private static String only = "";
    private final SendWorkRequest wr = new SendWorkRequest();
    private final io.jrdma.verbs.RecvWorkRequest rwr = new io.jrdma.verbs.RecvWorkRequest();
    private final WorkCompletion[] wcs = new WorkCompletion[WINDOW];
    private final Side a;
    private final Side b;

    private static final class Side {
        final DeviceContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemorySegment buf;
        final MemoryRegion mr;

        /** @param plain the buffer from {@code arena.allocate} (not shared: peers reach it by cross-memory attach, no atomics) */
        Side(Device dev, Arena arena, long size, boolean plain) {
            ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            pd = ctx.allocPd();
            cq = ctx.createCq(256);
            qp = pd.createQp(QpInitAttr.rc(cq).withDepth(64, 64));
            buf = plain ? arena.allocate(size, 4096) : ctx.allocateBuffer(size, 4096, arena);
            mr = pd.register(buf, plain ? ALL & ~Access.REMOTE_ATOMIC : ALL);
        }

        void close() {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            ctx.close();
        }
    }

    private ShmOpCost(Device dev, Arena arena, long size, boolean plain) {
        a = new Side(dev, arena, size, false);
        b = new Side(dev, arena, size, plain);
        connect(a, b);
        connect(b, a);
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
    }

    private static void connect(Side s, Side peer) {
        s.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ALL));
        s.qp.modify(new QpAttr().state(QpState.RTR).av(new AddressVector(peer.ctx.gid(0), 0, 64, 0, 4791))
                .pathMtu(Mtu.MTU_4096).destQpn(peer.qp.qpn()).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
        s.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(16));
    }

    public static void main(String[] argv) {
        Args args = new Args(argv);
        int rounds = (int) args.num("rounds", 5);
        int n = (int) args.num("n", 200_000);
        double secs = args.dbl("secs", 0.5);
        int[] sizes = Arrays.stream(args.str("sizes", "65536,1048576").split(",")).mapToInt(s -> Integer.parseInt(s.trim()))
                .toArray();
        String name = args.str("dev", "shm0");
        only = args.str("only", "");
        Device dev = Rdma.devices().stream().filter(d -> d.name().equals(name)).findFirst().orElse(null);
        if (dev == null) {
            Result.fail("no device " + name + " (needs --enable-native-access=ALL-UNNAMED on Linux)");
            return;
        }
        int max = Arrays.stream(sizes).max().orElse(8);
        List<String> names = new ArrayList<>();
        List<double[]> values = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            ShmOpCost c = new ShmOpCost(dev, arena, Math.max(max, 4096), args.bool("plain", false));
            try {
                c.rounds(rounds, n, secs, sizes, true, names, values); // warm-up round: compiled code for the others
                names.clear();
                values.clear();
                c.rounds(rounds, n, secs, sizes, false, names, values);
            } finally {
                c.a.close();
                c.b.close();
            }
        }
        for (int i = 0; i < names.size(); i++) {
            double[] v = values.get(i).clone();
            Arrays.sort(v);
            System.out.printf(Locale.ROOT, "RESULT shm_op_cost name=%s median=%.4g min=%.4g max=%.4g%n", names.get(i),
                    v[v.length / 2], v[0], v[v.length - 1]);
        }
    }

    private void rounds(int rounds, int n, double secs, int[] sizes, boolean warm, List<String> names,
            List<double[]> values) {
        int r0 = warm ? 1 : rounds;
        for (int r = 0; r < r0; r++) {
            StringBuilder line = new StringBuilder("ROUND " + r);
            int k = warm ? 50_000 : n;
            put(names, values, r, r0, "write8", wanted("write8") ? latency(WrOpcode.RDMA_WRITE, k) : Double.NaN, line);
            put(names, values, r, r0, "post8", wanted("post8") ? unsignaled(k) : Double.NaN, line);
            put(names, values, r, r0, "read8", wanted("read8") ? latency(WrOpcode.RDMA_READ, k) : Double.NaN, line);
            put(names, values, r, r0, "fadd8", wanted("fadd8") ? latency(WrOpcode.ATOMIC_FETCH_AND_ADD, k) : Double.NaN,
                    line);
            put(names, values, r, r0, "poll0", wanted("poll0") ? emptyPoll(k) : Double.NaN, line);
            put(names, values, r, r0, "send8", wanted("send8") ? sendRecv(k / 2, false, 0) : Double.NaN, line);
            put(names, values, r, r0, "send8q", wanted("send8q") ? sendRecv(k / 2, true, 0) : Double.NaN, line);
            put(names, values, r, r0, "send8i", wanted("send8i") ? sendRecv(k / 2, true, SendFlags.INLINE) : Double.NaN,
                    line);
            put(names, values, r, r0, "turn8", wanted("turn8") ? turns(k / 2) : Double.NaN, line);
            for (int s : sizes) {
                if (!wanted("bw")) {
                    continue;
                }
                double w = bandwidth(WrOpcode.RDMA_WRITE, s, secs);
                double copy = copy(s, secs);
                double rd = bandwidth(WrOpcode.RDMA_READ, s, secs);
                put(names, values, r, r0, "write." + s, w, line);
                put(names, values, r, r0, "read." + s, rd, line);
                put(names, values, r, r0, "copy." + s, copy, line);
                put(names, values, r, r0, "write." + s + "/copy", w / copy, line);
                put(names, values, r, r0, "read." + s + "/copy", rd / copy, line);
            }
            if (!warm) {
                System.out.println(line);
            }
        }
    }

    private static boolean wanted(String name) {
        return only.isEmpty() || ("," + only + ",").contains("," + name + ",");
    }

    private static void put(List<String> names, List<double[]> values, int r, int rounds, String name, double v,
            StringBuilder line) {
        if (Double.isNaN(v)) {
            return;
        }
        int i = names.indexOf(name);
        if (i < 0) {
            names.add(name);
            values.add(new double[rounds]);
            i = names.size() - 1;
        }
        values.get(i)[r] = v;
        line.append(String.format(Locale.ROOT, " %s=%.4g", name, v));
    }

    /** @return ns per post and completion of one signaled 8-byte request */
    private double latency(WrOpcode op, int n) {
        wr.reset().opcode(op).wrId(1).flags(SendFlags.SIGNALED).sge(0, a.mr, 0, 8).remote(b.mr.address(), b.mr.rkey());
        if (op.isAtomic()) {
            wr.atomic(1, 0);
        }
        long t0 = cpu();
        for (int i = 0; i < n; i++) {
            post(a, wr);
            await(1);
        }
        return (double) (cpu() - t0) / n;
    }

    /**
     * @return ns per post of an unsignaled 8-byte WRITE, with no poll: the direct path runs it inside the post and
     *         takes no send-queue slot (a post that queued instead would fill the queue and fail with ENOMEM)
     */
    private double unsignaled(int n) {
        wr.reset().opcode(WrOpcode.RDMA_WRITE).wrId(1).flags(0).sge(0, a.mr, 0, 8).remote(b.mr.address(), b.mr.rkey());
        long t0 = cpu();
        for (int i = 0; i < n; i++) {
            post(a, wr);
        }
        double ns = (double) (cpu() - t0) / n;
        if (a.cq.poll(wcs) != 0) {
            Result.fail("an unsignaled WRITE completed: " + wcs[0]);
        }
        return ns;
    }

    /** @return ns per SEND of 8 bytes into a posted receive, both completions polled (both engines on this thread) */
    /**
     * @param spare one more receive posted before the first message and consumed by one more message after the
     *              last, so that the queue holds two receives at each SEND (the timed ones) and none after
     * @param flags more send flags (INLINE)
     */
    private double sendRecv(int n, boolean spare, int flags) {
        wr.reset().opcode(WrOpcode.SEND).wrId(1).flags(SendFlags.SIGNALED | flags).sge(0, a.mr, 0, 8);
        if (spare) {
            postRecv(b);
        }
        long t0 = cpu();
        for (int i = 0; i < n; i++) {
            postRecv(b);
            sendOne();
        }
        long t1 = cpu();
        if (spare) {
            sendOne(); // into the spare receive: none is left posted for the next figure
        }
        return (double) (t1 - t0) / n;
    }

    /**
     * Blocks of {@code turn8}'s ping-pong run and not measured before the measured ones, in the same ping-pong: after
     * a warm-up of 25,000 round trips (the other figures') and even of 4,000,000, the first two rounds of 500,000 took
     * 1.1-2x the time of the later ones, each round a ping-pong of its own.
     */
    private static final int TURN_WARM_BLOCKS = 6;
    /** Measured blocks of {@code turn8}'s ping-pong: the figure is their median. */
    private static final int TURN_BLOCKS = 5;
    /** Receives each side keeps posted in {@link #turns}: the used one is replaced after the reply (send_lat's order). */
    private static final int TURN_RECVS = 3;

    /**
     * @return ns per turn of a SEND ping-pong, both sides on this thread: a turn polls its CQ until its receive
     *         completes (a signaled SEND's completion found on the way is checked and passed over), posts the 8-byte
     *         reply and posts the used receive again; one ping-pong, {@link #TURN_WARM_BLOCKS} blocks of {@code n}
     *         round trips not measured, then the median of {@link #TURN_BLOCKS} measured blocks
     */
    private double turns(int n) {
        for (int i = 0; i < TURN_RECVS; i++) {
            postRecv(a);
            postRecv(b);
        }
        turnWr.reset().opcode(WrOpcode.SEND).wrId(1).flags(SendFlags.INLINE).sge(0, a.mr, 0, 8);
        post(a, turnWr);
        double[] blocks = new double[TURN_BLOCKS];
        for (int k = -TURN_WARM_BLOCKS; k < TURN_BLOCKS; k++) {
            long t0 = cpu();
            for (int i = 0; i < n; i++) {
                turn(b, i);
                turn(a, i);
            }
            if (k >= 0) {
                blocks[k] = (double) (cpu() - t0) / (2.0 * n);
            }
        }
        // a's last reply, then the receives left: none stays posted, nor a completion in a CQ, for the next figure
        awaitRecv(b);
        for (int i = 1; i < TURN_RECVS; i++) {
            post(a, turnWr.reset().opcode(WrOpcode.SEND).wrId(1).flags(0).sge(0, a.mr, 0, 8));
            awaitRecv(b);
        }
        for (int i = 0; i < TURN_RECVS; i++) {
            post(b, turnWr.reset().opcode(WrOpcode.SEND).wrId(1).flags(0).sge(0, b.mr, 0, 8));
            awaitRecv(a);
        }
        for (int k = 0; k < 4; k++) { // the last signaled SEND's completion, if its sender's engine had not read it yet
            drain(a);
            drain(b);
        }
        Arrays.sort(blocks);
        return blocks[TURN_BLOCKS / 2];
    }

    private final SendWorkRequest turnWr = new SendWorkRequest();

    private void drain(Side s) {
        while (s.cq.poll(wcs[0]) > 0) {
            if (wcs[0].status() != WcStatus.SUCCESS || wcs[0].opcode() == io.jrdma.verbs.WcOpcode.RECV) {
                Result.fail("a completion left after the turns: " + wcs[0]);
            }
        }
    }

    private void turn(Side s, int i) {
        awaitRecv(s);
        turnWr.reset().opcode(WrOpcode.SEND).wrId(1).flags(SendFlags.INLINE | (i % 100 == 99 ? SendFlags.SIGNALED : 0))
                .sge(0, s.mr, 0, 8);
        post(s, turnWr);
        postRecv(s);
    }

    /** Polls {@code s}'s CQ until a receive completes (10 s at most); SEND completions on the way are checked. */
    private void awaitRecv(Side s) {
        long deadline = 0;
        while (true) {
            if (s.cq.poll(wcs[0]) == 0) {
                if (deadline == 0) {
                    deadline = System.nanoTime() + 10_000_000_000L;
                } else if (System.nanoTime() > deadline) {
                    Result.fail("no receive completion within 10 s");
                }
                continue;
            }
            if (wcs[0].status() != WcStatus.SUCCESS) {
                Result.fail("completion with error: " + wcs[0]);
            }
            if (wcs[0].opcode() == io.jrdma.verbs.WcOpcode.RECV) {
                return;
            }
        }
    }

    private void postRecv(Side s) {
        if (s.qp.postRecv(rwr.reset().wrId(2).sge(0, s.mr, 64, 64)) != 0) {
            Result.fail("postRecv failed");
        }
    }

    private static void post(Side s, SendWorkRequest w) {
        int rc = s.qp.postSend(w);
        if (rc != 0) {
            Result.fail("postSend: " + io.jrdma.verbs.RdmaException.Errno.of(rc));
        }
    }

    /** {@code wr} (a signaled 8-byte SEND) from a to b, and both completions polled. */
    private void sendOne() {
        post(a, wr);
        long deadline = 0;
        while (b.cq.poll(wcs[0]) == 0) { // b's duty cycle places the SEND and completes the receive
            a.ctx.progress(); // a's, where the post left the SEND to it (a build without post-time runs)
            if (deadline == 0) {
                deadline = System.nanoTime() + 10_000_000_000L;
            } else if (System.nanoTime() > deadline) {
                Result.fail("no receive completion within 10 s");
            }
        }
        if (wcs[0].status() != WcStatus.SUCCESS) {
            Result.fail("receive completion with error: " + wcs[0]);
        }
        await(1); // a's duty cycle reads the slot's result and completes the SEND
    }

    private double emptyPoll(int n) {
        long t0 = cpu();
        int found = 0;
        for (int i = 0; i < n; i++) {
            found += a.cq.poll(wcs[0]);
        }
        if (found != 0) {
            Result.fail("an empty CQ returned " + found + " completions");
        }
        return (double) (cpu() - t0) / n;
    }

    /** @return GB/s of {@code op}s of {@code size} bytes, {@value #WINDOW} in flight, from one buffer into one */
    private double bandwidth(WrOpcode op, int size, double secs) {
        wr.reset().opcode(op).wrId(1).flags(SendFlags.SIGNALED).sge(0, a.mr, 0, size).remote(b.mr.address(), b.mr.rkey());
        long end = System.nanoTime() + (long) (secs * 1e9);
        long t0 = cpu();
        long done = 0;
        int inFlight = 0;
        do {
            while (inFlight < WINDOW) {
                post(a, wr);
                inFlight++;
            }
            int k = await(1);
            inFlight -= k;
            done += k;
        } while (System.nanoTime() < end);
        while (inFlight > 0) {
            int k = await(1);
            inFlight -= k;
            done += k;
        }
        return (double) done * size / (cpu() - t0);
    }

    /** @return GB/s of {@link MemorySegment#copy} of {@code size} bytes between the two buffers the WRITEs use */
    private double copy(int size, double secs) {
        MemorySegment src = a.buf;
        MemorySegment dst = b.buf;
        long end = System.nanoTime() + (long) (secs * 1e9);
        long t0 = cpu();
        long done = 0;
        do {
            for (int i = 0; i < WINDOW; i++) {
                MemorySegment.copy(src, 0, dst, 0, size);
            }
            done += WINDOW;
        } while (System.nanoTime() < end);
        return (double) done * size / (cpu() - t0);
    }

    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

    /** @return this thread's CPU time: the time it ran, not the time it waited for a core on a shared host */
    private static long cpu() {
        return THREADS.getCurrentThreadCpuTime();
    }

    /** Polls until at least {@code min} completions came (10 s at most). @return how many */
    private int await(int min) {
        int got = 0;
        long deadline = 0;
        while (got < min) {
            int k = a.cq.poll(wcs);
            for (int i = 0; i < k; i++) {
                if (wcs[i].status() != WcStatus.SUCCESS) {
                    Result.fail("completion with error: " + wcs[i]);
                }
            }
            got += k;
            if (k == 0) {
                b.ctx.progress();
                if (deadline == 0) {
                    deadline = System.nanoTime() + 10_000_000_000L;
                } else if (System.nanoTime() > deadline) {
                    Result.fail("no completion within 10 s");
                }
            }
        }
        return got;
    }
}

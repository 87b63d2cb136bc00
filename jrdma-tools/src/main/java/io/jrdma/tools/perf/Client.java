package io.jrdma.tools.perf;

import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The active side: connects, tells the server what to run, runs every size and prints the
 * table. Its context is INVOKER: this thread is the engine, so nothing runs that it does not
 * drive, and the timed loops allocate nothing.
 */
final class Client {
    private final PerfOptions o;
    private final PerfTest test;
    private final PrintStream out;
    private final Watchdog dog;
    private final boolean durationMode;
    private final long durationNanos;
    /** this phase: duration mode (else {@link #phaseIters} iterations) */
    private boolean duration;
    private long phaseIters;
    private Session s;
    private long[] times;
    private String mismatch;

    // results of the last run
    private long count;
    private long elapsed;
    private double peak;
    private double avg;
    private double rate;
    private LatencyStats lat;

    // send_lat receive path
    private long dataRecvs;
    private int curSize;
    private MemorySegment recvSlice;
    private MemorySegment expectSlice;

    Client(PerfOptions o, PrintStream out, Watchdog dog) {
        this.o = o;
        this.test = o.test();
        this.out = out;
        this.dog = dog;
        this.durationMode = o.durationSec() > 0;
        this.durationNanos = o.durationSec() * 1_000_000_000L;
    }

    void run(Device device, InetSocketAddress server) {
        if (io.jrdma.tools.oob.EngineWarmup.warms(device)) {
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        DeviceContext ctx = device.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        try {
            PerfCommand.checkGidIndex(ctx, o.gidIndex());
            s = new Session(ctx, io.jrdma.tools.DeviceChoice.portFor(ctx, server.getAddress()), test, false,
                    o.maxSize(), o.txDepth(), dog);
            try {
                connectAndRun(ctx, server);
            } finally {
                s.close();
            }
        } finally {
            io.jrdma.tools.oob.Roce.printCounters(ctx, "client");
            ctx.close();
        }
    }

    private void connectAndRun(DeviceContext ctx, InetSocketAddress server) {
        Hello.Request req = new Hello.Request(test, o.verify(), o.maxSize(), o.txDepth(),
                durationMode ? 0 : o.iterations(), o.durationSec(), o.sizes().size(), s.base, s.mr.rkey(), s.mr.length(),
                s.ctrlOff);
        Mtu mtu = o.mtu() > 0 ? Mtu.ofBytes(o.mtu()) : ctx.queryPort(s.port).activeMtu();
        ConnParam param = ConnParam.defaults().withMtu(mtu).withRetry(7, 7).withPrivateData(Hello.encode(req));
        ConnectionManager.Connection conn;
        try {
            io.jrdma.tools.Progress.step("connecting to " + server);
            conn = ctx.connectionManager().connect(s.qp, server, param, Duration.ofSeconds(o.timeoutSec()));
        } catch (RdmaException e) {
            throw new PerfFailure("cannot connect to the server at " + server.getAddress().getHostAddress() + ":"
                    + server.getPort() + ": " + e.getMessage() + hint(e.errno()), e);
        }
        Hello.Reply rep;
        try {
            rep = Hello.decodeReply(conn.peerParam().privateData());
        } catch (IllegalArgumentException e) {
            conn.close();
            throw new PerfFailure(e.getMessage());
        }
        s.connected(conn, rep.addr(), rep.rkey(), rep.length(), rep.ctrlOffset());
        if (test == PerfTest.SEND_BW && rep.credits()) {
            s.peerRecvs = rep.rxDepth(); // the server's receives: the messages that may go before its first credit
        }
        dog.watchPeer(() -> conn.pollEvent(Duration.ZERO) == ConnectionManager.Event.DISCONNECTED,
                "the server disconnected (its connection ended: it closed it, stopped or died)");
        long warm = o.warmupIterations();
        if (!test.isBw()) {
            times = new long[(int) Math.max(durationMode ? 0 : o.iterations(), warm) + 1];
        }
        int[] mr = s.pathMtuAndReads();
        boolean inlineShown = test == PerfTest.WRITE_LAT || test == PerfTest.SEND_LAT;
        Report.header(out, new Report.Header(test, ctx.device().name(), Report.transport(ctx), mr[0], o.txDepth(),
                test.isSend() ? rep.rxDepth() : 0, test.opcode.isReadOrAtomic() ? mr[1] : 0,
                inlineShown ? Session.INLINE_MAX : -1,
                "client INVOKER / server " + (rep.dedicated() ? "DEDICATED" : "INVOKER"), o.verify(),
                o.durationSec(), warm, s.addressLines()));
        out.println(Report.columns(test, durationMode));
        out.flush();
        List<String> failures = new ArrayList<>();
        List<Integer> sizes = o.sizes();
        if (warm > 0) {
            warmUp(sizes.getFirst(), warm, failures);
        }
        for (int p = 0; p < sizes.size() && failures.isEmpty(); p++) {
            phase(p, sizes.get(p), p == sizes.size() - 1, false, o.iterations(), durationMode, failures);
        }
        out.println(Report.DASHES);
        s.linger();
        if (!failures.isEmpty()) {
            throw new PerfFailure(String.join("; ", failures));
        }
    }

    /** Warm-up runs done before the first measured size. */
    int warmUpRuns;
    /** Tests only: the last client's {@link #warmUpRuns}. */
    static volatile int lastWarmUpRuns;

    /**
     * The warm-up: runs of {@code iters} messages of the first size, not measured (the server follows each, as it
     * follows every size), for at least {@link Perftest#WARMUP_NANOS} and then while the JIT's compiler threads work,
     * at most {@link Perftest#WARMUP_MAX_NANOS}, as the perftest exchange's warm-ups. One run of 1,000 messages left
     * the measured run in the interpreter and beside the compiler threads: `jrdma perf write_bw -d iwarp_lo -s 65536`
     * gave 988 MB/s where `-D 3` gave 4,751 (docs/tools.md, "--jrdma-cm").
     */
    private void warmUp(int size, long iters, List<String> failures) {
        long start = System.nanoTime();
        JitQuiet jit = new JitQuiet(start);
        long now;
        boolean mine;
        do {
            phase(-1, size, false, true, iters, false, failures);
            warmUpRuns++;
            lastWarmUpRuns = warmUpRuns;
            now = System.nanoTime();
            // both JVMs: the server's receive loop is measured too (send_bw), and its compiler threads share the host
            mine = quietJitForTest ? now - start < Perftest.WARMUP_NANOS : jit.warming(now);
        } while (failures.isEmpty() && (mine || serverCompiling && now - start < Perftest.WARMUP_MAX_NANOS));
        lastWarmUpNanos = now - start;
    }

    /** The last warm-up run's ACK said that the server's JIT still works ({@link CtrlMsg#compiling}). */
    private boolean serverCompiling;
    /** Tests only: this JVM's JIT counts as quiet for the client's warm-up (the server's ACKs still count). */
    static volatile boolean quietJitForTest;
    /** Tests only: how long the last client's warm-up ran. */
    static volatile long lastWarmUpNanos;

    private String hint(RdmaException.Errno errno) {
        return switch (errno) {
            case ECONNREFUSED -> " (is 'jrdma perf " + test.cliName() + "' running there?)";
            case EIO, ECONNRESET, EPROTO -> " (the server ended the setup: see its output; a server without -d uses its"
                    + " first non-loopback device, so a client coming from another address needs the server started"
                    + " with -d naming that address's device)";
            default -> "";
        };
    }

    /** One size: START, READY, the run, DONE, ACK, and the row unless it is the warm-up. */
    private void phase(int p, int size, boolean last, boolean warmup, long iters, boolean dur, List<String> failures) {
        phaseIters = iters;
        duration = dur;
        io.jrdma.tools.Progress.step((warmup ? "warming up" : "measuring") + " at " + size + " B");
        prepare(size);
        s.sendCtrl(s.out.set(CtrlMsg.START, p, size, last, duration ? 0 : iters, duration ? durationNanos : 0)
                .warmup(warmup));
        s.awaitCtrl(CtrlMsg.READY, "waiting for the server to get ready for " + size + " B messages");
        long cpu0 = warmup ? -1 : io.jrdma.tools.oob.Roce.cpuNanos();
        long wall0 = System.nanoTime();
        if (test.isBw()) {
            runBw(size);
        } else {
            runLat(size);
        }
        if (!warmup) {
            io.jrdma.tools.oob.Roce.printCpu("client", cpu0, wall0, System.nanoTime());
        }
        String local = checkLocal(size);
        if (local != null && warmup) {
            local = "(warm-up) " + local;
        }
        boolean stop = last || local != null;
        s.sendCtrl(s.out.set(CtrlMsg.DONE, p, size, stop, count, elapsed).rates(peak, avg, rate)
                .status(local == null ? CtrlMsg.OK : CtrlMsg.MISMATCH, local).warmup(warmup));
        CtrlMsg ack = s.awaitCtrl(CtrlMsg.ACK, "waiting for the server's result for " + size + " B");
        serverCompiling = warmup && ack.compiling;
        if (!warmup) {
            if (test.isBw()) {
                out.println(Report.bwRow(size, count, peak, avg, rate));
            } else if (duration) {
                double avgUs = count == 0 ? 0 : elapsed / 1000.0 / count / rttFactor();
                out.println(Report.latDurationRow(size, count, avgUs, count / (elapsed / 1e9)));
            } else {
                out.println(Report.latRow(size, count, lat));
            }
            out.flush();
        }
        if (local != null) {
            failures.add(local);
        }
        if (ack.status != CtrlMsg.OK) {
            failures.add("server: " + ack.text);
        }
    }

    private int rttFactor() {
        return test == PerfTest.WRITE_LAT || test == PerfTest.SEND_LAT ? 2 : 1;
    }

    /** Fills what this side sends and clears what it receives, for one size. */
    private void prepare(int size) {
        mismatch = null;
        dataRecvs = 0;
        curSize = size;
        s.dataCompleted = 0;
        MemorySegment b = s.buf;
        switch (test) {
            case WRITE_BW, SEND_BW -> Pattern.fill(b.asSlice(0, (long) Session.slots(s.area, size) * size),
                    Pattern.seed(size));
            case READ_BW -> b.asSlice(0, s.area).fill((byte) 0);
            case READ_LAT -> b.asSlice(0, size).fill((byte) 0);
            case WRITE_LAT, SEND_LAT -> {
                b.asSlice(0, s.stride).fill((byte) 0);
                Pattern.fill(b.asSlice(s.stride, size), Pattern.seed(size));
                recvSlice = b.asSlice(0, size);
                expectSlice = s.expected(Pattern.seed(size), size);
                s.sink = test == PerfTest.SEND_LAT ? this::onPong : null;
            }
            case ATOMIC_BW, ATOMIC_LAT -> b.asSlice(0, s.dataLength).fill((byte) 0);
        }
    }

    /** send_lat: the server's answer arrived. */
    private void onPong(WorkCompletion wc) {
        if (wc.byteLen() != curSize && mismatch == null) {
            mismatch = "send_lat: the client received a " + wc.byteLen() + "-byte message, expected " + curSize;
        }
        if (o.verify() && mismatch == null) {
            String m = Pattern.compare(recvSlice, expectSlice, "send_lat: message " + dataRecvs + " received by the client");
            if (m != null) {
                mismatch = m;
            }
        }
        s.repost(wc.wrId());
        dataRecvs++;
    }

    // ------------------------------------------------------------------ bandwidth

    private void runBw(int size) {
        BwMeter meter = new BwMeter(duration ? 1 << 16 : (int) Math.min(1 << 20, phaseIters / s.sigEvery + 4));
        SendWorkRequest wr = s.dataWr.reset().opcode(test.opcode);
        boolean atomic = test.isAtomic();
        boolean send = test.isSend();
        boolean verifyAtomics = atomic && o.verify();
        if (atomic) {
            wr.atomic(1, 0);
        }
        int nslots = Session.slots(s.area, size);
        long lbase = s.base;
        int lkey = s.lkey;
        long rbase = s.peerAddr;
        int rkey = s.peerRkey;
        int tx = o.txDepth();
        int sig = s.sigEvery;
        long iters = phaseIters;
        long posted = 0;
        long checked = 0;
        boolean lastPosted = false;
        s.meter = meter;
        s.dataCompleted = 0;
        dog.reset("running " + test.cliName() + " with " + size + " B messages");
        long t0 = System.nanoTime();
        meter.add(t0, 0);
        long stopAt = t0 + durationNanos;
        try {
            while (true) {
                while (!lastPosted && posted - s.dataCompleted < tx && (!send || s.creditLeft())) {
                    boolean last = duration ? System.nanoTime() - stopAt >= 0 : posted == iters - 1;
                    if (atomic) {
                        wr.sge(0, lbase + (posted & (Session.ATOMIC_RING - 1)) * 8, 8, lkey).remote(rbase, rkey);
                    } else {
                        long off = (posted % nslots) * size;
                        wr.sge(0, lbase + off, size, lkey);
                        if (!send) {
                            wr.remote(rbase + off, rkey);
                        }
                    }
                    wr.wrId(posted).flags(last || (posted + 1) % sig == 0 ? SendFlags.SIGNALED : 0);
                    int rc = s.qp.postSend(wr);
                    if (rc != 0) {
                        if (rc == RdmaException.Errno.ENOMEM.value()) {
                            break;
                        }
                        throw s.postFailure(rc);
                    }
                    posted++;
                    if (send) {
                        s.consumed++;
                    }
                    lastPosted = last;
                }
                if (lastPosted && s.dataCompleted >= posted) {
                    break;
                }
                if (s.pollOnce() > 0) {
                    if (verifyAtomics && checked < s.dataCompleted) {
                        checked = checkFetched(checked, s.dataCompleted);
                    }
                } else {
                    s.idleWait();
                }
            }
        } finally {
            s.meter = null;
        }
        count = posted;
        elapsed = s.lastDataNanos - t0;
        peak = meter.peakMBps(size);
        avg = meter.averageMBps(size);
        rate = meter.msgRateMpps();
    }

    /** atomic_bw --verify: fetch-and-add {@code j} (adding 1 to a counter that started at 0) must return {@code j}. */
    private long checkFetched(long from, long to) {
        for (long j = from; j < to; j++) {
            long v = s.buf.get(ValueLayout.JAVA_LONG, (j & (Session.ATOMIC_RING - 1)) * 8);
            if (v != j && mismatch == null) {
                mismatch = "atomic_bw: fetch-and-add " + j + " returned " + v + ", expected " + j
                        + " (each adds 1 to a counter the server zeroed)";
            }
        }
        return to;
    }

    // ------------------------------------------------------------------ latency

    private void runLat(int size) {
        dog.reset("running " + test.cliName() + " with " + size + " B messages");
        switch (test) {
            case WRITE_LAT -> writeLat(size);
            case SEND_LAT -> sendLat(size);
            default -> oneByOne(size);
        }
        if (!duration) {
            lat = LatencyStats.of(times, (int) count, rttFactor());
        }
    }

    /**
     * The stop rule of every latency loop: in duration mode, time is up; otherwise iteration
     * {@code i} (whose start time is recorded) is the end. Sets {@code elapsed} when it stops.
     */
    private boolean finished(long i, long t0, long stopAt, long iters, long[] ts) {
        long now = System.nanoTime();
        if (duration) {
            if (now - stopAt >= 0) {
                elapsed = now - t0;
                return true;
            }
            return false;
        }
        ts[(int) i] = now;
        if (i == iters) {
            elapsed = now - t0;
            return true;
        }
        return false;
    }

    /** Ping-pong of RDMA WRITEs: each side polls the last byte of its receive half for the iteration number. */
    private void writeLat(int size) {
        SendWorkRequest wr = s.dataWr.reset().opcode(WrOpcode.RDMA_WRITE).sge(0, s.base + s.stride, size, s.lkey)
                .remote(s.peerAddr, s.peerRkey);
        int inline = size <= Session.INLINE_MAX ? SendFlags.INLINE : 0;
        long lastOff = size - 1;
        long markOff = s.stride + lastOff;
        long[] ts = times;
        long iters = duration ? Long.MAX_VALUE : phaseIters;
        long t0 = System.nanoTime();
        long stopAt = t0 + durationNanos;
        long i = 0;
        for (;; i++) {
            if (finished(i, t0, stopAt, iters, ts)) {
                break;
            }
            byte mark = (byte) (i + 1);
            s.buf.set(ValueLayout.JAVA_BYTE, markOff, mark);
            wr.wrId(i).flags(inline | ((i + 1) % s.sigEvery == 0 ? SendFlags.SIGNALED : 0));
            s.postData(wr);
            while (s.readByteAcquire(lastOff) != mark) {
                if (s.pollOnce() == 0) {
                    s.idleWait();
                }
            }
            dog.progress();
        }
        count = i;
        toDeltas(ts);
    }

    /** Ping-pong of SENDs into pre-posted receives. */
    private void sendLat(int size) {
        SendWorkRequest wr = s.dataWr.reset().opcode(WrOpcode.SEND).sge(0, s.base + s.stride, size, s.lkey);
        int inline = size <= Session.INLINE_MAX ? SendFlags.INLINE : 0;
        long[] ts = times;
        long iters = duration ? Long.MAX_VALUE : phaseIters;
        long t0 = System.nanoTime();
        long stopAt = t0 + durationNanos;
        long i = 0;
        for (;; i++) {
            if (finished(i, t0, stopAt, iters, ts)) {
                break;
            }
            wr.wrId(i).flags(inline | ((i + 1) % s.sigEvery == 0 ? SendFlags.SIGNALED : 0));
            s.postData(wr);
            while (dataRecvs <= i) {
                if (s.pollOnce() == 0) {
                    s.idleWait();
                }
            }
        }
        count = i;
        toDeltas(ts);
    }

    /** READ or fetch-and-add, one at a time: the latency is the whole operation. */
    private void oneByOne(int size) {
        boolean atomic = test.isAtomic();
        SendWorkRequest wr = s.dataWr.reset().opcode(test.opcode).sge(0, s.base, atomic ? 8 : size, s.lkey)
                .remote(s.peerAddr, s.peerRkey).flags(SendFlags.SIGNALED);
        if (atomic) {
            wr.atomic(1, 0);
        }
        boolean verifyAtomics = atomic && o.verify();
        long[] ts = times;
        long iters = duration ? Long.MAX_VALUE : phaseIters;
        s.dataCompleted = 0;
        long t0 = System.nanoTime();
        long stopAt = t0 + durationNanos;
        long i = 0;
        long now = t0;
        for (; i < iters; i++) {
            long start = System.nanoTime();
            if (duration && start - stopAt >= 0) {
                break;
            }
            wr.wrId(i);
            s.postData(wr);
            while (s.dataCompleted <= i) {
                if (s.pollOnce() == 0) {
                    s.idleWait();
                }
            }
            now = System.nanoTime();
            if (!duration) {
                ts[(int) i] = now - start;
            }
            if (verifyAtomics) {
                long v = s.buf.get(ValueLayout.JAVA_LONG, 0);
                if (v != i && mismatch == null) {
                    mismatch = "atomic_lat: fetch-and-add " + i + " returned " + v + ", expected " + i;
                }
            }
        }
        count = i;
        elapsed = now - t0;
    }

    /** Post timestamps to per-iteration round trips, in place. */
    private void toDeltas(long[] ts) {
        if (duration) {
            return;
        }
        for (int k = 0; k < count; k++) {
            ts[k] = ts[k + 1] - ts[k];
        }
    }

    // ------------------------------------------------------------------ verification

    /** @return null, or what this side found wrong in the data it received during the run */
    private String checkLocal(int size) {
        s.sink = null;
        if (mismatch != null) {
            return mismatch;
        }
        if (test == PerfTest.SEND_LAT && dataRecvs != count) {
            return "send_lat: the client received " + dataRecvs + " answers to " + count + " messages";
        }
        if (!o.verify() || count == 0) {
            return null;
        }
        return switch (test) {
            case READ_BW -> {
                long n = Math.min(Session.slots(s.area, size), count) * size;
                yield Pattern.compare(s.buf.asSlice(0, n), s.expected(Pattern.READ_SEED, n),
                        "read_bw: the data the client read");
            }
            case READ_LAT -> Pattern.compare(s.buf.asSlice(0, size), s.expected(Pattern.READ_SEED, size),
                    "read_lat: the data the client read");
            case WRITE_LAT -> {
                String m = size > 1 ? Pattern.compare(s.buf.asSlice(0, size - 1),
                        s.expected(Pattern.seed(size), size - 1), "write_lat: the client's buffer") : null;
                byte last = s.buf.get(ValueLayout.JAVA_BYTE, size - 1);
                if (m == null && last != (byte) count) {
                    m = "write_lat: the client's last byte is " + (last & 0xff) + ", expected " + (count & 0xff);
                }
                yield m;
            }
            default -> null;
        };
    }
}

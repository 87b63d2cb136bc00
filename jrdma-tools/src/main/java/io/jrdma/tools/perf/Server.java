package io.jrdma.tools.perf;

import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.IdleStrategy;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.IntConsumer;

/**
 * The passive side: listens, accepts one client, follows the test and parameters the client
 * chose, serves every size and prints its view. Its engine runs DEDICATED (BACKOFF idling) for
 * the tests where it is only an RDMA target, the application thread then blocking on the
 * completion channel; INVOKER, this thread driving it, when it answers (latency, send_bw).
 */
final class Server {
    /** The longest a server gives a client between its accept and the client's ready-to-use (RTU). */
    static final int RTU_SECONDS = 5;

    /** Tests only: the server damages one received byte before checking, to prove --verify catches it. */
    static volatile boolean corruptForTest;
    /** Tests only: the send_bw server gives no receive credits and its reply says none, as a server before them. */
    static volatile boolean noCreditsForTest;
    /** Tests only: the send_bw server stops for 0.2 ms after every 32nd message, as a slow receiver would. */
    static volatile boolean slowReceiverForTest;
    /** Tests only: every warm-up run's ACK says that this server's JIT still works. */
    static volatile boolean compilingForTest;
    /** Whether this JVM's JIT still works, sampled from the first warm-up run on (its ACKs say: CtrlMsg.compiling). */
    private JitQuiet jit;
    /** The warm-up run prepared last, and its size: the next warm-up run of the same size reuses its buffers. */
    private boolean preparedWarmUp;

    private final PerfOptions o;
    private final PrintStream out;
    private final Watchdog dog;
    private final boolean announce;
    private Session s;
    private PerfTest test;
    private Hello.Request req;
    private String mismatch;

    // per-size state of the active server loops
    private int curSize;
    private long dataRecvs;
    private long firstRecvNanos;
    private long lastRecvNanos;
    private BwMeter meter;
    private int srcSlots;
    private MemorySegment[] recvSlices;
    private MemorySegment[] expectSlices;
    private long pendingPongs;
    private long pongsPosted;
    private long pings;

    /** @param announce print the "waiting for a client" banner (not in --loopback runs) */
    Server(PerfOptions o, PrintStream out, Watchdog dog, boolean announce) {
        this.o = o;
        this.out = out;
        this.dog = dog;
        this.announce = announce;
    }

    /** @return the threading mode the server's context uses for a test */
    static ThreadingMode modeFor(PerfTest t) {
        return t.serverPassive() ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER;
    }

    void run(Device device, InetSocketAddress listenOn, IntConsumer listening, long acceptTimeoutNanos) {
        if (io.jrdma.tools.oob.EngineWarmup.warms(device)) {
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        DeviceContext ctx = device.open(DeviceOptions.defaults().withThreadingMode(modeFor(o.test()))
                .withIdleStrategy(IdleStrategy.valueOf(System.getProperty("jrdma.perf.serverIdle", "BACKOFF"))));
        try {
            PerfCommand.checkGidIndex(ctx, o.gidIndex());
            ConnectionManager.Listener listener;
            try {
                listener = ctx.connectionManager().listen(listenOn);
            } catch (RdmaException e) {
                throw new PerfFailure("cannot listen on TCP port " + listenOn.getPort() + ": " + e.getMessage()
                        + (e.errno() == RdmaException.Errno.EADDRINUSE ? ": " + io.jrdma.tools.oob.SideChannel.PORT_BUSY
                        : ""), e);
            }
            try {
                int port = listener.address().getPort();
                io.jrdma.tools.Progress.step("waiting for a client on TCP port " + port);
                if (announce) {
                    out.println("************************************");
                    out.println("* Waiting for client to connect... *");
                    out.println("************************************");
                    out.println(" Listening on TCP port " + port + ", device " + device.name() + " ("
                            + Report.transport(ctx) + ", engine " + modeFor(o.test()) + ")");
                    out.flush();
                }
                listening.accept(port);
                ConnectionManager.ConnectRequest cr = awaitRequest(listener, acceptTimeoutNanos);
                serve(ctx, cr);
            } finally {
                listener.close();
            }
        } finally {
            io.jrdma.tools.oob.Roce.printCounters(ctx, "server");
            ctx.close();
        }
    }

    /**
     * A server without {@code -d}: as rdma_cm, it answers on the device the client reached. It opens
     * every RoCE device that is up, listens on each of their addresses at {@code port}, serves the
     * first client on the device whose address it came to, and closes the others.
     */
    void runAnyDevice(java.util.List<Device> devices, int port, long acceptTimeoutNanos) {
        if (devices.stream().anyMatch(io.jrdma.tools.oob.EngineWarmup::warms)) {
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        java.util.List<DeviceContext> ctxs = new java.util.ArrayList<>();
        java.util.List<ConnectionManager.Listener> listeners = new java.util.ArrayList<>();
        java.util.List<DeviceContext> owners = new java.util.ArrayList<>();
        DeviceContext chosen = null;
        try {
            StringBuilder names = new StringBuilder();
            int bound = port;
            for (Device d : devices) {
                DeviceContext ctx = d.open(DeviceOptions.defaults().withThreadingMode(modeFor(o.test()))
                        .withIdleStrategy(IdleStrategy.valueOf(System.getProperty("jrdma.perf.serverIdle", "BACKOFF"))));
                ctxs.add(ctx);
                boolean any = false;
                for (io.jrdma.verbs.Gid g : io.jrdma.tools.DeviceChoice.gidsOfAllPorts(ctx)) { // every port's
                    java.net.InetAddress a = g.toInetAddress();
                    if (a == null || a.isAnyLocalAddress()) {
                        continue;
                    }
                    try {
                        ConnectionManager.Listener l = ctx.connectionManager().listen(new InetSocketAddress(a, bound));
                        bound = l.address().getPort(); // port 0: the first listener's, for all
                        listeners.add(l);
                        owners.add(ctx);
                        any = true;
                    } catch (RdmaException e) {
                        // an address that cannot be bound (a link-local one without its scope): not listened on
                    }
                }
                if (any) {
                    names.append(names.isEmpty() ? "" : ", ").append(d.name());
                }
            }
            if (listeners.isEmpty()) {
                throw new PerfFailure("cannot listen on TCP port " + port + " on any address of " + devices);
            }
            if (announce) {
                out.println("************************************");
                out.println("* Waiting for client to connect... *");
                out.println("************************************");
                out.println(" Listening on TCP port " + bound + ", devices " + names + " (the one the client reaches"
                        + " serves it; engine " + modeFor(o.test()) + ")");
                out.flush();
            }
            dog.reset("waiting for a client");
            long deadline = System.nanoTime() + acceptTimeoutNanos;
            ConnectionManager.ConnectRequest cr = null;
            while (cr == null) {
                for (int i = 0; i < listeners.size() && cr == null; i++) {
                    cr = listeners.get(i).poll(Duration.ofMillis(20));
                    if (cr != null) {
                        chosen = owners.get(i);
                    }
                }
                dog.progress();
                dog.check();
                if (cr == null && System.nanoTime() - deadline > 0) {
                    throw new PerfFailure("no client connected within " + acceptTimeoutNanos / 1_000_000_000L + " s");
                }
            }
            for (int i = 0; i < listeners.size(); i++) {
                if (owners.get(i) != chosen) {
                    listeners.get(i).close();
                }
            }
            for (DeviceContext c : ctxs) {
                if (c != chosen) {
                    c.close();
                }
            }
            if (announce) {
                out.println(" Client " + cr.peerAddress().getAddress().getHostAddress() + " reached device "
                        + chosen.device().name() + " (" + Report.transport(chosen) + ")");
                out.flush();
            }
            PerfCommand.checkGidIndex(chosen, o.gidIndex());
            serve(chosen, cr);
        } finally {
            for (ConnectionManager.Listener l : listeners) {
                l.close();
            }
            if (chosen != null) {
                io.jrdma.tools.oob.Roce.printCounters(chosen, "server");
            }
            for (DeviceContext c : ctxs) {
                c.close();
            }
        }
    }

    /**
     * {@code jrdma perf <test> --server --jrdma-cm}: a long-running server. It opens its device(s) and listens
     * once, then serves client after client (each chooses its test, sizes and iterations, as with one client),
     * until {@code maxClients} were served. A client that fails, stops or dies ends only its own run: its
     * departure is seen through {@link ConnectionManager.Connection#pollEvent} (DISCONNECTED) within a fraction
     * of a second, and a client that sends its request and never confirms (no RTU) is let go at the deadline
     * its accept gives it. After each client it prints its resources (file descriptors, threads, heap, direct
     * memory), as the perftest-exchange server does.
     *
     * @param devices   the devices to listen on: one (-d), or every RoCE device that is up (the one a client
     *                  reaches serves it)
     * @param port      the TCP port (0: any, the first listener's for all)
     * @param oneDevice listen on the wildcard address of the single device (-d) rather than on its addresses
     * @param parallel  how many clients to serve at once, each on a thread of its own (1: one after the other, on
     *                  this thread); above 1 the contexts' engines run DEDICATED
     * @return how many clients' runs failed
     * @throws PerfFailure when nothing could be listened on
     */
    long serveClients(java.util.List<Device> devices, int port, boolean oneDevice, IntConsumer listening,
                      long maxClients, int parallel, PrintStream err) {
        if (devices.stream().anyMatch(io.jrdma.tools.oob.EngineWarmup::warms)) {
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        java.util.List<DeviceContext> ctxs = new java.util.ArrayList<>();
        java.util.List<ConnectionManager.Listener> listeners = new java.util.ArrayList<>();
        java.util.List<DeviceContext> owners = new java.util.ArrayList<>();
        long failed = 0;
        java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(parallel);
        java.util.concurrent.atomic.AtomicLong failedInThreads = new java.util.concurrent.atomic.AtomicLong();
        java.util.List<Thread> workers = new java.util.ArrayList<>();
        // serving several clients at once takes an engine thread (an INVOKER context is driven by one thread)
        io.jrdma.verbs.ThreadingMode mode = parallel > 1 ? io.jrdma.verbs.ThreadingMode.DEDICATED : modeFor(o.test());
        try {
            int bound = port;
            StringBuilder names = new StringBuilder();
            for (Device d : devices) {
                DeviceContext ctx = d.open(DeviceOptions.defaults().withThreadingMode(mode)
                        .withIdleStrategy(IdleStrategy.valueOf(System.getProperty("jrdma.perf.serverIdle", "BACKOFF"))));
                ctxs.add(ctx);
                PerfCommand.checkGidIndex(ctx, o.gidIndex());
                java.util.List<InetSocketAddress> at = new java.util.ArrayList<>();
                if (oneDevice) {
                    at.add(new InetSocketAddress(bound));
                } else {
                    for (io.jrdma.verbs.Gid g : io.jrdma.tools.DeviceChoice.gidsOfAllPorts(ctx)) { // every port's
                        java.net.InetAddress a = g.toInetAddress();
                        if (a != null && !a.isAnyLocalAddress()) {
                            at.add(new InetSocketAddress(a, bound));
                        }
                    }
                }
                boolean any = false;
                for (InetSocketAddress a : at) {
                    try {
                        ConnectionManager.Listener l = ctx.connectionManager().listen(
                                bound == a.getPort() ? a : new InetSocketAddress(a.getAddress(), bound));
                        bound = l.address().getPort(); // port 0: the first listener's, for all
                        listeners.add(l);
                        owners.add(ctx);
                        any = true;
                    } catch (RdmaException e) {
                        if (oneDevice) {
                            throw new PerfFailure("cannot listen on TCP port " + bound + ": " + e.getMessage()
                                    + (e.errno() == RdmaException.Errno.EADDRINUSE
                                    ? ": " + io.jrdma.tools.oob.SideChannel.PORT_BUSY : ""), e);
                        }
                        // an address that cannot be bound (a link-local one without its scope): not listened on
                    }
                }
                if (any) {
                    names.append(names.isEmpty() ? "" : ", ").append(d.name());
                }
            }
            if (listeners.isEmpty()) {
                throw new PerfFailure("cannot listen on TCP port " + port + " on any address of " + devices);
            }
            out.println(" jrdma perf server: " + o.test().cliName() + " for client after client on TCP port " + bound
                    + (maxClients == Long.MAX_VALUE ? ", until stopped" : ", " + maxClients + " clients")
                    + (parallel > 1 ? ", up to " + parallel + " at once" : "")
                    + " (jrdma's connection manager; device" + (listeners.size() > 1 && !oneDevice ? "s " : " ")
                    + names + ", engine " + mode + ")");
            out.flush();
            listening.accept(bound);
            for (long n = 1; n <= maxClients; n++) {
                ConnectionManager.ConnectRequest cr = null;
                DeviceContext owner = null;
                if (parallel > 1) {
                    slots.acquireUninterruptibly(); // at most `parallel` at once: the next request waits in the listener
                }
                io.jrdma.tools.Progress.step("waiting for client " + n + " on TCP port " + bound);
                while (cr == null) { // a long-running server waits for its next client without a deadline
                    for (int i = 0; i < listeners.size() && cr == null; i++) {
                        cr = listeners.get(i).poll(Duration.ofMillis(listeners.size() == 1 ? 200 : 20));
                        owner = owners.get(i);
                    }
                }
                if (parallel == 1) {
                    if (!serveOne(n, owner, cr, out, err)) {
                        failed++;
                    }
                    continue;
                }
                // a thread of its own; its report is printed in one piece when it ends
                long num = n;
                DeviceContext ctx = owner;
                ConnectionManager.ConnectRequest req0 = cr;
                workers.removeIf(t -> !t.isAlive());
                workers.add(Thread.ofPlatform().name("jrdma-perf-client-" + n).start(() -> {
                    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
                    PrintStream mine = new PrintStream(b, true, java.nio.charset.StandardCharsets.UTF_8);
                    try {
                        if (!serveOne(num, ctx, req0, mine, mine)) {
                            failedInThreads.incrementAndGet();
                        }
                    } catch (RuntimeException | Error e) {
                        failedInThreads.incrementAndGet();
                        mine.println("jrdma perf: FAILED (client " + num + "): " + e);
                    } finally {
                        synchronized (out) {
                            out.print(b.toString(java.nio.charset.StandardCharsets.UTF_8));
                            out.flush();
                        }
                        slots.release();
                    }
                }));
            }
            joinAll(workers);
        } finally {
            for (ConnectionManager.Listener l : listeners) {
                l.close();
            }
            for (DeviceContext c : ctxs) {
                io.jrdma.tools.oob.Roce.printCounters(c, "server");
                c.close();
            }
        }
        return failed + failedInThreads.get();
    }

    /**
     * Serves client {@code n} and prints how it went (its resources line when done, its failure on {@code err}).
     *
     * @return whether its run succeeded
     */
    private boolean serveOne(long n, DeviceContext ctx, ConnectionManager.ConnectRequest cr, PrintStream to,
                             PrintStream err) {
        long t0 = System.nanoTime();
        try {
            new Server(o, to, new Watchdog(o.timeoutSec(), null), false).serve(ctx, cr);
            to.println(" client " + n + ": done in " + (System.nanoTime() - t0) / 1_000_000 + " ms; "
                    + PerftestCommand.resources());
            to.flush();
            return true;
        } catch (PerfFailure | RdmaException e) {
            to.flush();
            err.println("jrdma perf: FAILED (client " + n + ", after " + (System.nanoTime() - t0) / 1_000_000
                    + " ms): " + e.getMessage());
            err.flush();
            to.println(" client " + n + ": failed; waiting for the next one");
            to.flush();
            return false;
        }
    }

    private ConnectionManager.ConnectRequest awaitRequest(ConnectionManager.Listener listener, long timeoutNanos) {
        io.jrdma.tools.Progress.step("waiting for a client on TCP port " + listener.address().getPort());
        dog.reset("waiting for a client");
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            ConnectionManager.ConnectRequest cr = listener.poll(Duration.ofMillis(200));
            if (cr != null) {
                return cr;
            }
            dog.progress(); // the listen deadline is the one below
            dog.check();
            if (System.nanoTime() - deadline > 0) {
                throw new PerfFailure("no client connected within " + timeoutNanos / 1_000_000_000L + " s");
            }
        }
    }

    /** Serves one client: accepts its request, follows its test and sizes, and closes the connection. */
    void serve(DeviceContext ctx, ConnectionManager.ConnectRequest cr) {
        try {
            req = Hello.decodeRequest(cr.peerParam().privateData());
        } catch (IllegalArgumentException e) {
            cr.reject(e.getMessage().getBytes(StandardCharsets.UTF_8));
            throw new PerfFailure("rejected the client at " + cr.peerAddress() + ": " + e.getMessage());
        }
        test = req.test();
        if (test != o.test()) {
            out.println(" Note: the client runs " + test.cliName() + "; this server follows it (started as "
                    + o.test().cliName() + ", so its engine runs " + modeFor(o.test()) + ")");
        }
        // the port the client is reached from (jrdma's connection manager moves the QP to its address's port)
        s = new Session(ctx, io.jrdma.tools.DeviceChoice.portFor(ctx,
                cr.peerAddress() == null ? null : cr.peerAddress().getAddress()), test, true,
                req.maxSize(), req.txDepth(), dog);
        try {
            if (test == PerfTest.READ_BW || test == PerfTest.READ_LAT) {
                Pattern.fill(s.buf.asSlice(0, s.dataLength), Pattern.READ_SEED);
            }
            Mtu mtu = o.mtu() > 0 ? Mtu.ofBytes(o.mtu()) : ctx.queryPort(s.port).activeMtu();
            s.givesCredits = test == PerfTest.SEND_BW && !noCreditsForTest; // receive credits (Session.sendCredit)
            Hello.Reply reply = new Hello.Reply(s.dedicated, s.recvSlots, s.base, s.mr.rkey(), s.mr.length(), s.ctrlOff,
                    s.givesCredits);
            ConnParam param = ConnParam.defaults().withMtu(mtu).withRetry(7, 7).withPrivateData(Hello.encode(reply));
            ConnectionManager.Connection conn;
            try {
                // the client's RTU is due within this (the side channel's accept does not wait for it: a client
                // that never sends it is seen as DISCONNECTED below)
                conn = cr.accept(s.qp, param, Duration.ofSeconds(Math.min(RTU_SECONDS, o.timeoutSec())));
            } catch (RdmaException e) {
                if (e.errno() == RdmaException.Errno.ENETUNREACH) {
                    throw new PerfFailure("the client " + cr.peerAddress().getAddress().getHostAddress()
                            + " reached this server through an address device " + ctx.device().name()
                            + " does not own; start the server with -d naming the device of that address ("
                            + e.getMessage() + ")", e);
                }
                throw new PerfFailure("accepting the client failed: " + e.getMessage(), e);
            }
            s.connected(conn, req.addr(), req.rkey(), req.length(), req.ctrlOffset());
            dog.watchPeer(() -> conn.pollEvent(Duration.ZERO) == ConnectionManager.Event.DISCONNECTED,
                    "the client disconnected (its connection ended: it closed it, stopped or died)");
            phases(ctx);
        } finally {
            s.close();
        }
    }

    private void phases(DeviceContext ctx) {
        int[] mr = s.pathMtuAndReads();
        boolean duration = req.durationSec() > 0;
        boolean inlineShown = test == PerfTest.WRITE_LAT || test == PerfTest.SEND_LAT;
        Report.header(out, new Report.Header(test, ctx.device().name(), Report.transport(ctx), mr[0],
                req.txDepth(), s.recvSlots > 0 ? s.recvSlots : 0, test.opcode.isReadOrAtomic() ? mr[1] : 0,
                inlineShown ? Session.INLINE_MAX : -1,
                "client INVOKER / server " + (s.dedicated ? "DEDICATED" : "INVOKER"), req.verify(),
                req.durationSec(), 0, s.addressLines()));
        if (test.isBw()) {
            out.println(Report.columns(test, duration));
        } else {
            out.println(" (latency is measured by the client: see its output)");
        }
        out.flush();
        String failure = null;
        while (true) {
            CtrlMsg start = s.awaitCtrl(CtrlMsg.START, "waiting for the client's next message size");
            int size = start.size;
            if (size < 1 || size > req.maxSize()) {
                throw new PerfFailure("protocol error: the client asked for " + size + " B, above its maximum "
                        + req.maxSize());
            }
            prepare(size, start.warmup, start.count);
            if (start.warmup && jit == null) {
                jit = new JitQuiet(System.nanoTime());
            }
            s.sendCtrl(s.out.set(CtrlMsg.READY, start.phase, size, false, 0, 0));
            long cpu0 = start.warmup ? -1 : io.jrdma.tools.oob.Roce.cpuNanos();
            long wall0 = System.nanoTime();
            dog.reset("serving " + test.cliName() + " with " + size + " B messages");
            if (test == PerfTest.WRITE_LAT) {
                writeLatResponder(size);
            }
            CtrlMsg done = awaitDone(size);
            if (!done.warmup) {
                io.jrdma.tools.oob.Roce.printCpu("server", cpu0, wall0, System.nanoTime());
            }
            int phase = done.phase;
            long clientCount = done.count;
            boolean last = done.last;
            boolean warmup = done.warmup;
            boolean clientOk = done.status == CtrlMsg.OK;
            String clientText = done.text;
            double cPeak = done.peakMBps;
            double cAvg = done.avgMBps;
            double cRate = done.msgRateMpps;
            String mine = verify(size, clientCount);
            long myCount = clientCount;
            double peak = cPeak;
            double avg = cAvg;
            double rate = cRate;
            long nanos = done.nanos;
            if (test == PerfTest.SEND_BW) {
                myCount = dataRecvs;
                if (dataRecvs > 0) {
                    meter.add(lastRecvNanos, dataRecvs - 1);
                }
                nanos = lastRecvNanos - firstRecvNanos;
                peak = meter.peakMBps(size);
                avg = meter.averageMBps(size);
                rate = meter.msgRateMpps();
            } else if (test == PerfTest.SEND_LAT) {
                myCount = dataRecvs;
            } else if (test == PerfTest.WRITE_LAT) {
                myCount = pings;
            }
            if (test.isBw() && !warmup) {
                out.println(Report.bwRow(size, myCount, peak, avg, rate));
                out.flush();
            }
            s.sendCtrl(s.out.set(CtrlMsg.ACK, phase, size, last, myCount, nanos).rates(peak, avg, rate)
                    .status(mine == null ? CtrlMsg.OK : CtrlMsg.MISMATCH, mine)
                    .compiling(warmup && (compilingForTest || jit != null && !jit.quiet(System.nanoTime()))));
            if (mine != null) {
                failure = mine;
            } else if (!clientOk) {
                failure = "the client reported: " + clientText;
            }
            if (last || failure != null) {
                break;
            }
        }
        out.println(Report.DASHES);
        out.flush();
        // the client disconnects once it has the final ACK, possibly before its acknowledgement of it arrived here:
        // no longer a departure to fail on (a client that died now shows as the ACK's transport retries running out)
        dog.watchPeer(null, null);
        // the ACK must reach the client before the QP goes away
        s.awaitCtrlSent("waiting for the client to acknowledge the final result");
        s.linger();
        if (failure != null) {
            throw new PerfFailure(failure);
        }
    }

    private CtrlMsg awaitDone(int size) {
        String doing = "waiting for the client to finish " + size + " B messages";
        if (test == PerfTest.SEND_LAT) {
            dog.reset(doing);
            while (!s.ctrlArrived) {
                if (s.pollOnce() == 0) {
                    s.idleWait();
                }
                flushPongs();
            }
        }
        CtrlMsg m = s.awaitCtrl(CtrlMsg.DONE, doing);
        s.sink = null;
        return m;
    }

    /** Prepares the buffer for one size: clears what the client writes, fills what this side sends. */
    /**
     * Gets the buffers ready for a run of {@code count} messages (0: a duration) of {@code size} bytes. A warm-up run
     * after a warm-up run of the same size keeps what the one before left, whose data is the same: the repeated
     * warm-up (0.3-2 s) would otherwise zero the whole receive area, 32 MiB at send_bw's 64 KiB, and make a meter,
     * once per run.
     */
    private void prepare(int size, boolean warmup, long count) {
        boolean again = warmup && preparedWarmUp && size == curSize;
        preparedWarmUp = warmup;
        curSize = size;
        mismatch = null;
        dataRecvs = 0;
        pings = 0;
        pendingPongs = 0;
        pongsPosted = 0;
        if (again && test == PerfTest.SEND_BW) {
            meter.reset();
            s.sink = this::onSendBw; // the run's end took it away
            return;
        }
        MemorySegment b = s.buf;
        switch (test) {
            case WRITE_BW -> {
                if (!again) {
                    b.asSlice(0, s.dataLength).fill((byte) 0);
                }
            }
            case ATOMIC_BW, ATOMIC_LAT -> b.asSlice(0, 8).fill((byte) 0);
            case WRITE_LAT, SEND_LAT -> {
                b.asSlice(0, s.stride).fill((byte) 0);
                Pattern.fill(b.asSlice(s.stride, size), Pattern.seed(size));
                if (test == PerfTest.SEND_LAT) {
                    recvSlices = new MemorySegment[] {b.asSlice(0, size)};
                    expectSlices = new MemorySegment[] {s.expected(Pattern.seed(size), size)};
                    srcSlots = 1;
                    s.dataWr.reset().opcode(WrOpcode.SEND).sge(0, s.base + s.stride, size, s.lkey);
                    s.sink = this::onPing;
                }
            }
            case SEND_BW -> {
                b.asSlice(0, s.dataLength).fill((byte) 0);
                srcSlots = Session.slots(Session.area(req.maxSize()), size);
                recvSlices = new MemorySegment[s.recvSlots];
                for (int i = 0; i < recvSlices.length; i++) {
                    recvSlices[i] = b.asSlice((long) i * s.recvSlotSize, size);
                }
                expectSlices = new MemorySegment[srcSlots];
                if (req.verify()) {
                    MemorySegment e = s.expected(Pattern.seed(size), (long) srcSlots * size);
                    for (int i = 0; i < srcSlots; i++) {
                        expectSlices[i] = e.asSlice((long) i * size, size);
                    }
                }
                meter = new BwMeter(count > 0 ? (int) Math.min(1 << 20, count / 64 + 4) : 1 << 16);
                s.sink = this::onSendBw;
            }
            default -> {
            }
        }
    }

    /** send_bw: one message arrived; check it, give its slot back, keep the clock. */
    private void onSendBw(WorkCompletion wc) {
        long now = System.nanoTime();
        int slot = (int) wc.wrId();
        if (dataRecvs == 0) {
            firstRecvNanos = now;
            meter.reset();
            meter.add(now, 0);
        }
        lastRecvNanos = now;
        if (wc.byteLen() != curSize && mismatch == null) {
            mismatch = "send_bw: message " + dataRecvs + " has " + wc.byteLen() + " bytes, expected " + curSize;
        }
        if (req.verify() && mismatch == null) {
            MemorySegment exp = expectSlices[(int) (dataRecvs % srcSlots)];
            if (recvSlices[slot].mismatch(exp) >= 0) {
                mismatch = Pattern.compare(recvSlices[slot], exp, "send_bw: message " + dataRecvs
                        + " received by the server");
            }
        }
        s.repost(slot);
        dataRecvs++;
        if (slowReceiverForTest && dataRecvs % 32 == 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(200_000);
        }
        if (dataRecvs % 64 == 0) {
            meter.add(now, dataRecvs - 1);
        }
    }

    /** send_lat: a ping arrived; check it and answer (posted by the wait loop: a sink may not poll). */
    private void onPing(WorkCompletion wc) {
        if (wc.byteLen() != curSize && mismatch == null) {
            mismatch = "send_lat: message " + dataRecvs + " has " + wc.byteLen() + " bytes, expected " + curSize;
        }
        if (req.verify() && mismatch == null && recvSlices[0].mismatch(expectSlices[0]) >= 0) {
            mismatch = Pattern.compare(recvSlices[0], expectSlices[0], "send_lat: message " + dataRecvs
                    + " received by the server");
        }
        s.repost(wc.wrId());
        dataRecvs++;
        pendingPongs++;
    }

    private void flushPongs() {
        if (pendingPongs == 0) {
            return;
        }
        SendWorkRequest wr = s.dataWr;
        int inline = curSize <= Session.INLINE_MAX ? SendFlags.INLINE : 0;
        while (pendingPongs > 0) {
            wr.wrId(pongsPosted).flags(inline | ((pongsPosted + 1) % s.sigEvery == 0 ? SendFlags.SIGNALED : 0));
            int rc = s.qp.postSend(wr);
            if (rc == RdmaException.Errno.ENOMEM.value()) {
                return; // the send queue drains as the client acknowledges; the wait loop comes back
            }
            if (rc != 0) {
                throw s.postFailure(rc);
            }
            pongsPosted++;
            pendingPongs--;
        }
    }

    /** write_lat: wait for the client's iteration number in the last byte, answer with the same. */
    private void writeLatResponder(int size) {
        SendWorkRequest wr = s.dataWr.reset().opcode(WrOpcode.RDMA_WRITE).sge(0, s.base + s.stride, size, s.lkey)
                .remote(s.peerAddr, s.peerRkey);
        int inline = size <= Session.INLINE_MAX ? SendFlags.INLINE : 0;
        long lastOff = size - 1;
        long markOff = s.stride + lastOff;
        long i = 0;
        outer:
        while (true) {
            byte mark = (byte) (i + 1);
            int spins = 0;
            while (s.readByteAcquire(lastOff) != mark) {
                if (s.ctrlArrived) {
                    break outer;
                }
                if (s.pollOnce() == 0) {
                    s.idleMemory(++spins);
                } else {
                    spins = 0;
                }
            }
            dog.progress();
            i++;
            s.buf.set(ValueLayout.JAVA_BYTE, markOff, mark);
            wr.wrId(i).flags(inline | (i % s.sigEvery == 0 ? SendFlags.SIGNALED : 0));
            s.postData(wr);
        }
        pings = i;
    }

    /** @return null, or what the server found wrong when the client finished a size */
    private String verify(int size, long clientCount) {
        if (mismatch != null) {
            return mismatch;
        }
        switch (test) {
            case SEND_BW, SEND_LAT -> {
                if (dataRecvs != clientCount) {
                    return test.cliName() + ": the server received " + dataRecvs + " of the " + clientCount
                            + " messages the client sent";
                }
            }
            case WRITE_LAT -> {
                if (pings != clientCount) {
                    return "write_lat: the server saw " + pings + " of the " + clientCount + " writes the client made";
                }
            }
            case ATOMIC_BW, ATOMIC_LAT -> {
                long v = s.buf.get(ValueLayout.JAVA_LONG, 0);
                if (v != clientCount) {
                    return test.cliName() + ": the server's counter is " + v + " after " + clientCount
                            + " fetch-and-adds of 1";
                }
            }
            default -> {
            }
        }
        if (!req.verify() || clientCount == 0) {
            return null;
        }
        if (corruptForTest && test == PerfTest.WRITE_BW) {
            s.buf.set(ValueLayout.JAVA_BYTE, 1, (byte) ~s.buf.get(ValueLayout.JAVA_BYTE, 1));
        }
        return switch (test) {
            case WRITE_BW -> {
                long n = Math.min(Session.slots(Session.area(req.maxSize()), size), clientCount) * size;
                yield Pattern.compare(s.buf.asSlice(0, n), s.expected(Pattern.seed(size), n),
                        "write_bw: the server's buffer after " + clientCount + " writes of " + size + " B");
            }
            case WRITE_LAT -> {
                String m = size > 1 ? Pattern.compare(s.buf.asSlice(0, size - 1),
                        s.expected(Pattern.seed(size), size - 1), "write_lat: the server's buffer") : null;
                byte last = s.buf.get(ValueLayout.JAVA_BYTE, size - 1);
                if (m == null && last != (byte) clientCount) {
                    m = "write_lat: the server's last byte is " + (last & 0xff) + ", expected " + (clientCount & 0xff);
                }
                yield m;
            }
            default -> null;
        };
    }

    /** Waits for every thread of {@code workers} to end; an interrupt stops the wait and is kept. */
    static void joinAll(java.util.List<Thread> workers) {
        for (Thread t : workers) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}

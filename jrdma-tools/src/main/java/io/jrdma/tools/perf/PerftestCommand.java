package io.jrdma.tools.perf;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.RdmaException;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;

/** Runs {@code jrdma perf} in perftest's exchange: one side, or both over 127.0.0.1 with {@code --loopback}. */
public final class PerftestCommand {
    private PerftestCommand() {
    }

    /** Runs one side (or both with --loopback); returns the exit code. */
    public static int execute(PerftestOptions o, PrintStream out, PrintStream err) {
        return execute(o, out, err, port -> { });
    }

    /** As {@link #execute(PerftestOptions, PrintStream, PrintStream)}; a server tells its TCP port to {@code listening}. */
    public static int execute(PerftestOptions o, PrintStream out, PrintStream err, IntConsumer listening) {
        if (o.loopback()) {
            return loopback(o, out, err);
        }
        try {
            new Perftest(o, out, err, new Watchdog(o.timeoutSec(), null), listening, true).run();
            return 0;
        } catch (Throwable e) {
            return report(e, out, err, "");
        }
    }

    /** The longest a client's exchange (its version, parameters and QP keys) may take on a long-running server. */
    static final long EXCHANGE_NANOS = 5_000_000_000L;

    /** {@link #serve(PerftestOptions, long, int, PrintStream, PrintStream, IntConsumer)} one client at a time. */
    public static int serve(PerftestOptions o, long maxClients, PrintStream out, PrintStream err,
                            IntConsumer listening) {
        return serve(o, maxClients, 1, out, err, listening);
    }

    /**
     * {@code jrdma perf <test> --server}: a long-running server. It keeps one listening socket and serves
     * client after client (each with the test and flags given here, as perftest's server), until killed or
     * {@code maxClients} were served. Connections are accepted as they come, by a {@link PerftestGate} that waits
     * for each one's version string at once: a client that stays silent or sends part of it never takes a slot,
     * and is closed at its deadline, {@code min(5 s, --timeout)}. A client whose version came is served as soon
     * as one of the {@code parallel} slots is free, and its whole exchange (parameters and QP keys) must be over
     * within that deadline too. A client that fails, stops or dies ends only its own run: the server says so and
     * serves the next one. A client that goes away is noticed through the side channel at once, not after
     * {@code --timeout}.
     *
     * @param maxClients how many clients to serve (those whose version came), or {@link Long#MAX_VALUE} for no end
     * @param parallel   how many to serve at once, each on a thread with its own context, QPs, CQs and buffers
     *                   (1: one after the other, on this thread); their reports are then printed whole as each ends
     * @return 0 when every client's run succeeded, 1 when one failed, 2 for a bad flag or device
     */
    public static int serve(PerftestOptions o, long maxClients, int parallel, PrintStream out, PrintStream err,
                            IntConsumer listening) {
        long exchange = Math.min(EXCHANGE_NANOS, o.timeoutSec() * 1_000_000_000L);
        PerftestGate gate;
        try {
            gate = new PerftestGate(o.port(), exchange, o.timeoutSec() * 1_000_000_000L, out);
        } catch (SideChannelException e) {
            return report(e, out, err, "");
        }
        AtomicLong next = new AtomicLong(1);
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> fatal = new AtomicReference<>();
        try (gate) {
            out.println(" jrdma perf server: " + o.test().cliName() + " for client after client on TCP port "
                    + gate.port() + (maxClients == Long.MAX_VALUE ? ", until stopped" : ", " + maxClients + " clients")
                    + (parallel > 1 ? ", up to " + parallel + " at once" : "") + "; each exchange within "
                    + exchange / 1_000_000L + " ms");
            out.flush();
            listening.accept(gate.port());
            Runnable worker = () -> {
                while (fatal.get() == null) {
                    SideChannel sc = gate.take();
                    if (sc == null) {
                        return;
                    }
                    long n = next.getAndIncrement();
                    if (n > maxClients) {
                        sc.close();
                        return;
                    }
                    if (n == maxClients && parallel > 1) {
                        gate.close(); // the last client: the other workers' take() ends
                    }
                    if (parallel == 1) {
                        serveOne(o, n, sc, gate, exchange, out, err, failed, fatal);
                    } else {
                        ByteArrayOutputStream b = new ByteArrayOutputStream();
                        PrintStream mine = new PrintStream(b, true, StandardCharsets.UTF_8);
                        try {
                            serveOne(o, n, sc, gate, exchange, mine, mine, failed, fatal);
                        } finally {
                            synchronized (out) {
                                out.print(b.toString(StandardCharsets.UTF_8));
                                out.flush();
                            }
                        }
                    }
                    if (n >= maxClients) {
                        return;
                    }
                }
            };
            if (parallel == 1) {
                worker.run();
            } else {
                List<Thread> workers = new ArrayList<>();
                for (int i = 0; i < parallel; i++) {
                    workers.add(Thread.ofPlatform().name("jrdma-perf-server-" + i).start(worker));
                }
                Server.joinAll(workers);
            }
        }
        if (fatal.get() != null) {
            return report(fatal.get(), out, err, "");
        }
        return failed.get() == 0 ? 0 : 1;
    }

    /** Serves client {@code n} on {@code sc} and prints how it went; a bad flag or device is put in {@code fatal}. */
    private static void serveOne(PerftestOptions o, long n, SideChannel sc, PerftestGate gate, long exchange,
                                 PrintStream out, PrintStream err, AtomicLong failed,
                                 AtomicReference<Throwable> fatal) {
        long t0 = System.nanoTime();
        try {
            new Perftest(o, out, err, new Watchdog(o.timeoutSec(), null), p -> { }, true).servingOn(sc, exchange).run();
            out.println(" client " + n + ": done in " + (System.nanoTime() - t0) / 1_000_000 + " ms; "
                    + resources());
        } catch (PerfCommand.BadValue | DeviceChoice.NoSuchDevice e) {
            sc.close();
            fatal.compareAndSet(null, e);
            gate.close();
            return;
        } catch (PerfFailure | SideChannelException | RdmaException e) {
            sc.close();
            failed.incrementAndGet();
            report(e, out, err, " (client " + n + ", after " + (System.nanoTime() - t0) / 1_000_000 + " ms)");
            out.println(" client " + n + ": failed; waiting for the next one");
        } catch (RuntimeException e) {
            sc.close();
            failed.incrementAndGet();
            report(e, out, err, " (client " + n + ", after " + (System.nanoTime() - t0) / 1_000_000 + " ms)");
            out.println(" client " + n + ": failed; waiting for the next one");
        }
        String dropped = gate.dropped();
        if (!dropped.isEmpty()) {
            out.println(" (so far " + dropped + ")");
        }
        out.flush();
    }

    /**
     * @return this process's resources as a long-running server reports them after each client: open file
     *         descriptors (Linux), threads, heap in use and direct/mapped buffer memory (a churn shows growth here)
     */
    static String resources() {
        long fds = -1;
        try (var s = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            fds = s.count();
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux: no count
        }
        long direct = 0;
        for (var b : java.lang.management.ManagementFactory.getPlatformMXBeans(
                java.lang.management.BufferPoolMXBean.class)) {
            direct += b.getMemoryUsed();
        }
        long afterGc = 0; // what the last collection of each heap pool left: growth shows without forcing a GC
        for (var pool : java.lang.management.ManagementFactory.getMemoryPoolMXBeans()) {
            var u = pool.getType() == java.lang.management.MemoryType.HEAP ? pool.getCollectionUsage() : null;
            afterGc += u == null ? 0 : u.getUsed();
        }
        return "fds " + fds + ", threads " + java.lang.management.ManagementFactory.getThreadMXBean().getThreadCount()
                + ", heap " + java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()
                / 1024 + " KiB (" + afterGc / 1024 + " KiB after the last GC), direct " + direct / 1024 + " KiB";
    }

    /**
     * {@code jrdma perf <test> <host> --clients N}: N runs of the client one after the other, in this process (a
     * churn against a {@code --server}); stops at the first failure.
     *
     * @return 0 when all N runs succeeded, else the failing run's exit code
     */
    public static int repeat(PerftestOptions o, long n, PrintStream out, PrintStream err) {
        return repeat(n, out, err, ps -> execute(o, ps, err));
    }

    /**
     * N runs of {@code run} one after the other (given where it prints: the last run's output is shown), the
     * resources reported every 100 runs; stops at the first failure.
     *
     * @return 0 when all N runs succeeded, else the failing run's exit code
     */
    static int repeat(long n, PrintStream out, PrintStream err, java.util.function.ToIntFunction<PrintStream> run) {
        PrintStream quiet = new PrintStream(java.io.OutputStream.nullOutputStream(), true,
                java.nio.charset.StandardCharsets.UTF_8);
        long t0 = System.nanoTime();
        for (long i = 1; i <= n; i++) {
            int rc = run.applyAsInt(i == n ? out : quiet);
            if (rc != 0) {
                err.println("jrdma perf: run " + i + " of " + n + " failed");
                return rc;
            }
            if (i % 100 == 0 || i == n) {
                out.println(" run " + i + " of " + n + " done, " + (System.nanoTime() - t0) / 1_000_000 + " ms; "
                        + resources());
                out.flush();
            }
        }
        return 0;
    }

    /** @return the exit code for a failure, after printing it */
    static int report(Throwable e, PrintStream out, PrintStream err, String side) {
        out.flush();
        if (e instanceof PerfCommand.BadValue || e instanceof DeviceChoice.NoSuchDevice) {
            err.println("jrdma perf: " + e.getMessage());
            return 2;
        }
        if (e instanceof PerfFailure || e instanceof SideChannelException || e instanceof RdmaException) {
            err.println("jrdma perf: FAILED" + side + ": " + e.getMessage());
            return 1;
        }
        if (e instanceof Error er) {
            throw er;
        }
        err.println("jrdma perf: FAILED" + side + ": " + e);
        e.printStackTrace(err);
        return 1;
    }

    /** Server in a thread (its output discarded), client here; both through the perftest exchange on 127.0.0.1. */
    private static int loopback(PerftestOptions o, PrintStream out, PrintStream err) {
        InetAddress lo;
        try {
            lo = InetAddress.getByName("127.0.0.1");
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
        String dev;
        try {
            dev = Perftest.device(o.side(o.device(), lo.getHostAddress(), o.port()), lo).name();
        } catch (RuntimeException e) {
            return report(e, out, err, "");
        }
        PerftestOptions so = o.side(dev, null, o.port());
        AtomicBoolean serverFailed = new AtomicBoolean();
        AtomicBoolean clientFailed = new AtomicBoolean();
        AtomicReference<Throwable> serverError = new AtomicReference<>();
        CompletableFuture<Integer> listening = new CompletableFuture<>();
        PrintStream discard = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
        Thread server = Thread.ofPlatform().name("jrdma-perf-server").daemon().start(() -> {
            try {
                new Perftest(so, discard, discard, new Watchdog(o.timeoutSec(), clientFailed), listening::complete,
                        false).run();
            } catch (Throwable e) {
                serverError.set(e);
                serverFailed.set(true);
                listening.completeExceptionally(e);
            }
        });
        int port;
        try {
            port = listening.get(o.timeoutSec(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            join(server, o);
            return report(serverError.get(), out, err, " (server)");
        } catch (TimeoutException | InterruptedException e) {
            err.println("jrdma perf: FAILED: the loopback server did not start listening");
            return 1;
        }
        PerftestOptions co = o.side(dev, lo.getHostAddress(), port);
        Throwable clientError = null;
        try {
            new Perftest(co, out, err, new Watchdog(o.timeoutSec(), serverFailed), p -> { }, false).run();
        } catch (Throwable e) {
            clientError = e;
            clientFailed.set(true);
        }
        join(server, o);
        out.flush();
        if (server.isAlive()) {
            err.println("jrdma perf: FAILED: the loopback server thread did not finish");
            return 1;
        }
        Throwable se = serverError.get();
        if (clientError != null) {
            if (se != null) {
                report(se, out, err, " (server)");
            }
            return report(clientError, out, err, "");
        }
        return se == null ? 0 : report(se, out, err, " (server)");
    }

    private static void join(Thread t, PerftestOptions o) {
        try {
            t.join(o.timeoutSec() * 1000L + 5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

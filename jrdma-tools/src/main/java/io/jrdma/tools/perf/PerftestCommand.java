package io.jrdma.tools.perf;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.RdmaException;

import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
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

package io.jrdma.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import io.jrdma.tools.rping.RpingCommand;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ctrl-C (SIGINT) of a command in a JVM of its own: it says what it interrupted and how far it got,
 * runs the command's stop actions (rping's client disconnects) for a bounded time, and exits with 130.
 * The pingpong and perf peers are TCP servers that accept and never answer; rping's is jrdma's rping
 * server in this JVM.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InterruptTest {
    private static Process start(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).start();
    }

    /** Sends SIGINT to {@code p} once its standard output printed a line containing {@code cue}; returns its stderr. */
    private static String interruptAfter(Process p, String cue) throws Exception {
        return interruptAfter(p, cue, () -> null);
    }

    private static String interruptAfter(Process p, String cue, java.util.concurrent.Callable<?> before) throws Exception {
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                return e.toString();
            }
        });
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null && !line.contains(cue)) {
                // skip to the cue
            }
            if (line == null) {
                throw new AssertionError("the command ended before printing '" + cue + "': " + err.get(30, TimeUnit.SECONDS));
            }
            before.call();
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start();
            assertEquals(0, kill.waitFor());
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "no exit after SIGINT");
        } finally {
            p.destroyForcibly();
        }
        return err.get(30, TimeUnit.SECONDS);
    }

    @Test
    void ctrlCOfAPingpongClientSaysWhereItWasAndExits130() throws Exception {
        try (ServerSocket silent = new ServerSocket()) {
            silent.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            CompletableFuture<Socket> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return silent.accept();
                } catch (java.io.IOException e) {
                    return null;
                }
            });
            Process p = start("pingpong", "-d", "roce_lo", "-p", Integer.toString(silent.getLocalPort()), "127.0.0.1");
            String err = interruptAfter(p, "local address:", () -> {
                // the client's 52-byte address arrived: it waits for the server's now
                return accepted.get(10, TimeUnit.SECONDS).getInputStream().readNBytes(52);
            });
            assertEquals(Progress.INTERRUPTED, p.exitValue(), err);
            assertTrue(err.contains("jrdma pingpong: interrupted while "), err);
            assertTrue(err.contains("waiting for the server's address"), err);
            assertTrue(err.contains("127.0.0.1:" + silent.getLocalPort()), err);
            accepted.get(10, TimeUnit.SECONDS).close();
        }
    }

    @Test
    void ctrlCOfAWaitingPerfServerNamesItsPort() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        Process p = start("perf", "write_bw", "-d", "roce_lo", "-p", Integer.toString(port));
        String err = interruptAfter(p, "Waiting for client to connect");
        assertEquals(Progress.INTERRUPTED, p.exitValue(), err);
        assertTrue(err.contains("jrdma perf: interrupted while waiting for a client on TCP port " + port), err);
    }

    /** rping's server in this JVM, with -d: {@code port} completes once it listens. */
    private static CompletableFuture<Integer> rpingServer(String device, CompletableFuture<Integer> port,
                                                          ByteArrayOutputStream err) {
        List<String> args = List.of("-s", "-d", "-D", device, "-a", "127.0.0.1", "-p", "0", "--timeout", "60");
        CompletableFuture<Integer> rc = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("rping -s").start(() -> {
            try {
                rc.complete(RpingCommand.run(args, new PrintStream(new ByteArrayOutputStream(), true,
                        StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), port::complete));
            } catch (Throwable e) {
                rc.completeExceptionally(e);
            }
        });
        rc.thenRun(() -> port.completeExceptionally(new AssertionError("the server ended before listening: "
                + err.toString(StandardCharsets.UTF_8))));
        return rc;
    }

    /**
     * rdma_cm over RoCE has no stream whose end the server would see: an rping client stopped by Ctrl-C halted without
     * a DREQ, and its server, between pings without a deadline, waited for good (found in review). What Ctrl-C runs
     * (the stop actions) now disconnects the client, and the server ends its connection at once: long before its
     * 60 s --timeout, with rdma_cm's DISCONNECTED.
     */
    @Test
    void ctrlCOfAnRpingClientOverRoceDisconnectsAndItsServerEnds() throws Exception {
        ByteArrayOutputStream serverErr = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        CompletableFuture<Integer> server = rpingServer("roce_lo", port, serverErr);
        CountDownLatch pinged = new CountDownLatch(2);
        OutputStream lines = new OutputStream() { // counts the client's "ping data" lines
            @Override
            public void write(int b) {
                if (b == '\n') {
                    pinged.countDown();
                }
            }
        };
        ByteArrayOutputStream clientErr = new ByteArrayOutputStream();
        List<String> args = List.of("-c", "-v", "-D", "roce_lo", "-a", "127.0.0.1", "-p",
                String.valueOf(port.get(20, TimeUnit.SECONDS)), "--timeout", "60");
        CompletableFuture<Integer> client = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("rping -c").start(() -> {
            try {
                client.complete(RpingCommand.run(args, new PrintStream(lines, true, StandardCharsets.UTF_8),
                        new PrintStream(clientErr, true, StandardCharsets.UTF_8)));
            } catch (Throwable e) {
                client.completeExceptionally(e);
            }
        });
        assertTrue(pinged.await(20, TimeUnit.SECONDS), "no pings: " + clientErr + serverErr);
        long t0 = System.nanoTime();
        assertTrue(Progress.runStopActions(Progress.STOP_BOUND), "the stop actions outlasted their bound");
        assertTrue(System.nanoTime() - t0 < Progress.STOP_BOUND.toNanos());
        assertEquals(Progress.INTERRUPTED, client.get(10, TimeUnit.SECONDS), clientErr.toString(StandardCharsets.UTF_8));
        assertEquals("", clientErr.toString(StandardCharsets.UTF_8), "a stopped client reports no error");
        assertEquals(0, server.get(10, TimeUnit.SECONDS), serverErr.toString(StandardCharsets.UTF_8));
        assertTrue(serverErr.toString(StandardCharsets.UTF_8).contains("server DISCONNECT EVENT..."),
                serverErr.toString(StandardCharsets.UTF_8));
    }

    /**
     * SIGINT of an rping client in a JVM of its own: it names the ping it interrupted, disconnects (its stop action,
     * -d says so), reports no error of its own for the disconnect, and exits with 130; the server ends its connection.
     */
    @Test
    void ctrlCOfAnRpingClientDisconnectsThenExits130() throws Exception {
        ByteArrayOutputStream serverErr = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        CompletableFuture<Integer> server = rpingServer("iwarp_lo", port, serverErr);
        Process p = start("rping", "-c", "-d", "-D", "iwarp_lo", "-a", "127.0.0.1", "-p",
                String.valueOf(port.get(20, TimeUnit.SECONDS)), "--timeout", "60");
        StringBuilder err = new StringBuilder();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
            p.getOutputStream().close();
            String line;
            while ((line = in.readLine()) != null && !line.equals("connected")) {
                err.append(line).append('\n');
            }
            if (line == null) {
                throw new AssertionError("the client ended before connecting: " + err);
            }
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start();
            assertEquals(0, kill.waitFor());
            while ((line = in.readLine()) != null) {
                err.append(line).append('\n');
            }
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "no exit after SIGINT");
        } finally {
            p.destroyForcibly();
        }
        assertEquals(Progress.INTERRUPTED, p.exitValue(), err.toString());
        assertTrue(err.toString().contains("jrdma rping: interrupted while ping "), err.toString());
        assertTrue(err.toString().contains("stopping: disconnecting"), err.toString());
        assertFalse(err.toString().contains("the server disconnected"), err.toString());
        assertEquals(0, server.get(10, TimeUnit.SECONDS), serverErr.toString(StandardCharsets.UTF_8));
        assertTrue(serverErr.toString(StandardCharsets.UTF_8).contains("server DISCONNECT EVENT..."),
                serverErr.toString(StandardCharsets.UTF_8));
    }

    /** A stop action that never ends holds Ctrl-C's exit for the bound only; a withdrawn one does not run. */
    @Test
    void theStopActionsAreBoundedAndWithdrawable() {
        CountDownLatch ran = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (Progress.Registration hangs = Progress.onInterrupt(() -> {
            ran.countDown();
            try {
                release.await(); // until the test ends: the JVM would have halted long before
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        })) {
            long t0 = System.nanoTime();
            assertFalse(Progress.runStopActions(Duration.ofMillis(200)));
            long took = System.nanoTime() - t0;
            assertTrue(took >= 200_000_000L && took < 5_000_000_000L, took + " ns");
            assertEquals(0, ran.getCount());
        } finally {
            release.countDown();
        }
        Progress.Registration r = Progress.onInterrupt(() -> {
            throw new AssertionError("withdrawn, yet run");
        });
        r.close();
        assertTrue(Progress.runStopActions(Duration.ofSeconds(1)));
    }

    @Test
    void aNormalEndPrintsNoInterruptLine() {
        Progress.start("jrdma test");
        Progress.step(() -> "step 3");
        assertEquals("jrdma test: interrupted while step 3", Progress.interruptedLine());
        Progress.done();
        assertEquals(null, Progress.interruptedLine());
    }
}

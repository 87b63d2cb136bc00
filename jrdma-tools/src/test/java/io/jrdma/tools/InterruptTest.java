package io.jrdma.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ctrl-C (SIGINT) of a command in a JVM of its own: it says what it interrupted and how far it got,
 * and exits with 130. The peer is a TCP server that accepts and never answers.
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

    @Test
    void aNormalEndPrintsNoInterruptLine() {
        Progress.start("jrdma test");
        Progress.step(() -> "step 3");
        assertEquals("jrdma test: interrupted while step 3", Progress.interruptedLine());
        Progress.done();
        assertEquals(null, Progress.interruptedLine());
    }
}

package io.jrdma.tools.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jrdma perf} over the soft-iWARP device {@code iwarp_lo}: the connection manager (MPA) is
 * implied, every test runs with {@code --verify} (atomics and immediate data through the jrdma
 * extension both ends negotiate), as {@code --loopback} and as a server process plus a client
 * given the host.
 */
class PerfIwarpTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return PerfCommand.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private static List<String> sizeArgs(PerfTest test) {
        return test.isAtomic() ? List.of() : List.of("-s", test.isBw() ? "4096" : "64");
    }

    private static void checkTable(PerfTest test, String text, int iters) {
        assertTrue(text.contains(test.title), text);
        assertTrue(text.contains(" Device         : iwarp_lo"), text);
        assertTrue(text.contains(" Transport      : iWARP (RDMAP/DDP/MPA over TCP)"), text);
        assertTrue(text.contains(Report.columns(test, false)), text);
        assertTrue(text.lines().anyMatch(l -> l.matches(" \\d+ +" + iters + " .*")), "no row in\n" + text);
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    @Timeout(60)
    void everyTestRunsOverIwarpInLoopback(PerfTest test) {
        List<String> args = new ArrayList<>(List.of(test.cliName(), "-d", "iwarp_lo", "--loopback", "--verify",
                "-n", "100", "--no-warmup", "--timeout", "20"));
        args.addAll(sizeArgs(test));
        int rc = run(args.toArray(String[]::new));
        assertEquals(0, rc, () -> out() + err());
        checkTable(test, out(), 100);
        assertTrue(out().contains(" Verify         : ON"), out());
        assertEquals("", err());
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    @Timeout(60)
    void everyTestRunsOverIwarpBetweenAServerAndAClientGivenTheHost(PerfTest test) throws Exception {
        int port = freePort();
        List<String> common = new ArrayList<>(List.of(test.cliName(), "-d", "iwarp_lo", "-p", String.valueOf(port),
                "--verify", "-n", "100", "--no-warmup", "--timeout", "20"));
        common.addAll(sizeArgs(test));
        ByteArrayOutputStream so = new ByteArrayOutputStream();
        ByteArrayOutputStream se = new ByteArrayOutputStream();
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> PerfCommand.run(common,
                new PrintStream(so, true, StandardCharsets.UTF_8), new PrintStream(se, true, StandardCharsets.UTF_8)));
        awaitListening(so, server);
        List<String> client = new ArrayList<>(common);
        client.add("127.0.0.1");
        int crc = run(client.toArray(String[]::new));
        int src = server.get(40, TimeUnit.SECONDS);
        String sout = so.toString(StandardCharsets.UTF_8);
        assertEquals(0, crc, () -> out() + err() + "\n--- server:\n" + sout + se);
        assertEquals(0, src, () -> sout + se);
        checkTable(test, out(), 100);
        assertTrue(sout.contains("(iWARP (RDMAP/DDP/MPA over TCP), engine "), sout);
        assertTrue(sout.contains(test.title), sout);
    }

    @Test
    void perftestOnlyFlagsAreRefusedOnAnIwarpDevice() {
        assertEquals(2, run("write_lat", "-d", "iwarp_lo", "--loopback", "-I", "64"));
        assertTrue(err().contains("option --inline_size belongs to perftest's exchange: add -R to use it over iWARP"
                + " (iwarp_lo is an iWARP device"), err());
        err.reset();
        assertEquals(2, run("write_bw", "-d", "iwarp_lo", "-R", "--jrdma-cm"));
        assertTrue(err().contains("option -R/--rdma_cm is perftest's exchange over rdma_cm: drop --jrdma-cm"), err());
    }

    @Test
    void aRoceDeviceStillDefaultsToPerftestsExchange() throws Exception {
        assertTrue(PerfCommand.isIwarp("iwarp_lo"));
        assertTrue(!PerfCommand.isIwarp("roce_lo"));
        assertTrue(!PerfCommand.isIwarp("no_such_dev"));
        assertTrue(!PerfCommand.isIwarp(null));
        assertEquals("iwarp_lo", PerfCommand.parse("write_bw", "-d", "iwarp_lo").device());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Waits for the server's banner line that says it listens (its output is only read, never synchronized on). */
    private static void awaitListening(ByteArrayOutputStream so, CompletableFuture<Integer> server)
            throws InterruptedException {
        long end = System.nanoTime() + 20_000_000_000L;
        while (!so.toString(StandardCharsets.UTF_8).contains(" Listening on TCP port ")) {
            if (server.isDone() || System.nanoTime() - end > 0) {
                throw new AssertionError("the server did not start listening: " + so.toString(StandardCharsets.UTF_8));
            }
            Thread.sleep(20);
        }
    }
}

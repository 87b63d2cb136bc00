package io.jrdma.tools.perf;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each benchmark end to end: server thread and client over the connection manager on 127.0.0.1. */
class PerfLoopbackTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @AfterEach
    void noCorruption() {
        Server.corruptForTest = false;
        Server.slowReceiverForTest = false;
        Server.noCreditsForTest = false;
        Server.compilingForTest = false;
        Client.quietJitForTest = false;
    }

    private int run(PerfOptions o) {
        return PerfCommand.execute(o, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    void everyTestPassesWithVerifyAtTwoSizes(PerfTest test) throws Exception {
        PerfOptions o = PerfCommand.parse(test.cliName(), "--loopback", "--verify", "-n", "200", "--no-warmup",
                "--timeout", "20");
        if (!test.isAtomic()) {
            o = o.withSizes(List.of(64, 4096));
        }
        int rc = run(o);
        assertEquals(0, rc, () -> out() + err());
        String text = out();
        assertTrue(text.contains(Report.columns(test, false)), text);
        assertTrue(text.contains(test.title), text);
        assertTrue(text.contains(" Verify         : ON"), text);
        assertTrue(text.contains(" remote address: QPN 0x"), text);
        String threading = test.serverPassive() ? "client INVOKER / server DEDICATED" : "client INVOKER / server INVOKER";
        assertTrue(text.contains(threading), text);
        for (int size : o.sizes()) {
            assertTrue(text.lines().anyMatch(l -> l.startsWith(" " + size + " ") && l.contains(" 200 ")),
                    "no row for " + size + " B in\n" + text);
        }
        assertEquals("", err());
    }

    @Test
    void writeBwRunsSeveralSizesOfDashA() throws Exception {
        PerfOptions o = PerfCommand.parse("write_bw", "--loopback", "-a", "--verify", "-n", "20", "--timeout", "20");
        assertEquals(23, o.sizes().size());
        assertEquals(PerfTest.MAX_SIZE, o.maxSize());
        o = o.withSizes(List.of(2, 4096, 65536, 1 << 20));
        assertEquals(0, run(o), () -> out() + err());
        String text = out();
        assertTrue(text.contains(" Warm-up        : runs of 1000 iterations, 0.3-2 s (until the JIT is quiet), not measured"),
                text);
        // 1,000 WRITEs of 2 B take a few milliseconds: the warm-up repeats them for 0.3 s at least (one run before)
        assertTrue(Client.lastWarmUpRuns >= 2, "warm-up runs: " + Client.lastWarmUpRuns);
        long rows = text.lines().filter(l -> l.matches(" \\d+ +20 +[0-9.]+ +[0-9.]+ +[0-9.]+")).count();
        assertEquals(4, rows, text);
    }

    /**
     * The warm-up goes on while the server's JIT still works, as its ACKs say, not only the client's (the server's
     * receive loop is measured too): a server whose every warm-up ACK says so keeps a client whose own JIT is quiet
     * warming up until the bound, 2 s (it stopped at 0.3 s). Over send_bw with --verify, so that the warm-up runs that reuse the server's buffers (the one
     * before left them) are checked to the end as well.
     */
    @Test
    void theWarmUpWaitsForTheServersJitToo() throws Exception {
        Server.compilingForTest = true;
        Client.quietJitForTest = true;
        int rc = run(PerfCommand.parse("send_bw", "--loopback", "--verify", "-s", "64", "-n", "200", "--timeout", "20"));
        assertEquals(0, rc, () -> out() + err());
        assertTrue(Client.lastWarmUpNanos >= Perftest.WARMUP_MAX_NANOS, "warm-up: " + Client.lastWarmUpNanos + " ns");
        assertTrue(Client.lastWarmUpRuns >= 2, "warm-up runs: " + Client.lastWarmUpRuns);
        assertTrue(out().lines().anyMatch(l -> l.startsWith(" 64 ") && l.contains(" 200 ")), out());
    }

    @Test
    void durationModeRunsForTheTimeGiven() throws Exception {
        long t0 = System.nanoTime();
        assertEquals(0, run(PerfCommand.parse("send_bw", "--loopback", "-D", "1", "-s", "1024", "--no-warmup")),
                () -> out() + err());
        assertTrue(System.nanoTime() - t0 >= 1_000_000_000L);
        assertTrue(out().contains(Report.BW_COLUMNS), out());
        assertEquals(0, run(PerfCommand.parse("write_lat", "--loopback", "-D", "1", "--no-warmup")),
                () -> out() + err());
        assertTrue(out().contains(Report.LAT_DUR_COLUMNS), out());
    }

    /**
     * send_bw keeps its messages within the receives the server has posted (its credits), so a receiver slower than
     * the sender loses nothing: over iWARP a SEND that finds no receive ends the connection (there is no RNR), and
     * before the credits this run failed with the QP flushed; on soft-RoCE and shm0 it waited out RNR timers instead.
     */
    @Test
    void sendBwNeverOutrunsTheReceivesOfASlowServer() throws Exception {
        Server.slowReceiverForTest = true;
        for (String dev : List.of("iwarp_lo", "roce_lo", "shm0")) {
            out.reset();
            int rc = run(PerfCommand.parse("send_bw", "--loopback", "-d", dev, "--verify", "-s", "8", "-n", "5000",
                    "--no-warmup", "--timeout", "20"));
            assertEquals(0, rc, () -> dev + "\n" + out() + err());
            assertTrue(out().lines().anyMatch(l -> l.startsWith(" 8 ") && l.contains(" 5000 ")), dev + "\n" + out());
        }
    }

    /**
     * A server that gives no credits (one from before them: its reply's flag is 0) is not waited for: the client
     * sends as before, and a soft-RoCE receiver that falls behind answers with RNR (with the client holding to
     * credits that never come, this run timed out).
     */
    @Test
    void sendBwToAServerWithoutCreditsRunsAsBefore() throws Exception {
        Server.noCreditsForTest = true;
        Server.slowReceiverForTest = true;
        int rc = run(PerfCommand.parse("send_bw", "--loopback", "-d", "roce_lo", "--verify", "-s", "8", "-n", "3000",
                "--no-warmup", "--timeout", "20"));
        assertEquals(0, rc, () -> out() + err());
        assertTrue(out().lines().anyMatch(l -> l.startsWith(" 8 ") && l.contains(" 3000 ")), out());
    }

    @Test
    void verifyCatchesADamagedByte() throws Exception {
        Server.corruptForTest = true;
        int rc = run(PerfCommand.parse("write_bw", "--loopback", "--verify", "-s", "4096", "-n", "50", "--no-warmup"));
        assertEquals(1, rc, () -> out() + err());
        assertTrue(err().contains("FAILED"), err());
        assertTrue(err().contains("write_bw: the server's buffer after 50 writes of 4096 B: byte 1 is"), err());
    }

    @Test
    void aMissingServerFailsClearly() throws Exception {
        int rc = run(PerfCommand.parse("write_bw", "127.0.0.1", "-p", "1", "-d", "roce_lo", "--timeout", "5"));
        assertEquals(1, rc, () -> out() + err());
        assertTrue(err().contains("cannot connect to the server at 127.0.0.1:1"), err());
    }

    @Test
    void badDeviceAndGidIndexAreUsageErrors() throws Exception {
        assertEquals(2, run(PerfCommand.parse("write_bw", "--loopback", "-d", "no_such_dev")));
        assertTrue(err().contains("no RDMA device named no_such_dev"), err());
        assertEquals(2, run(PerfCommand.parse("write_bw", "--loopback", "-x", "99")));
        assertTrue(err().contains("GID index 99 does not exist on roce_lo"), err());
    }

    @Test
    void aServerWithoutDeviceServesTheClientOnTheDeviceItReached() throws Exception {
        // no -d: the server listens on every RoCE device's addresses; a client over 127.0.0.1 gets roce_lo
        ByteArrayOutputStream sOut = new ByteArrayOutputStream();
        ByteArrayOutputStream sErr = new ByteArrayOutputStream();
        PerfOptions so = PerfCommand.parse("write_bw", "-p", "0", "--timeout", "20");
        java.util.concurrent.CompletableFuture<Integer> server = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> PerfCommand.execute(so, new PrintStream(sOut, true, StandardCharsets.UTF_8),
                        new PrintStream(sErr, true, StandardCharsets.UTF_8)));
        java.util.regex.Pattern listening = java.util.regex.Pattern.compile("Listening on TCP port (\\d+), devices ");
        long deadline = System.nanoTime() + 20_000_000_000L;
        String port = null;
        while (port == null && System.nanoTime() < deadline && !server.isDone()) {
            java.util.regex.Matcher m = listening.matcher(sOut.toString(StandardCharsets.UTF_8));
            if (m.find()) {
                port = m.group(1);
            }
            Thread.onSpinWait();
        }
        assertTrue(port != null, () -> "the server did not say where it listens: " + sOut + sErr);
        int rc = run(PerfCommand.parse("write_bw", "-s", "65536", "-n", "200", "-p", port, "--timeout", "20",
                "127.0.0.1"));
        assertEquals(0, rc, () -> out() + err() + sOut + sErr);
        assertEquals(0, server.get(30, java.util.concurrent.TimeUnit.SECONDS), () -> sOut.toString() + sErr);
        String s = sOut.toString(StandardCharsets.UTF_8);
        assertTrue(s.contains(" Client 127.0.0.1 reached device roce_lo"), s);
        assertTrue(out().contains("Device         : roce_lo"), out());
        assertTrue(out().contains("Mtu            : 4096[B]"), out());
    }
}

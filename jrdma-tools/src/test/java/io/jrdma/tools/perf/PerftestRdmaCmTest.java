package io.jrdma.tools.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jrdma against jrdma with {@code -R} over {@code iwarp_lo}: perftest's exchange on an rdma_cm
 * comm QP, the test's QPs connected through the connection manager on the same port, and the
 * output perftest prints with {@code -R} (Transport IW, rdma_cm QPs ON, addresses without keys,
 * the server's "Waiting for client rdma_cm QP to connect").
 */
class PerftestRdmaCmTest {
    static final Pattern ADDRESS = Pattern.compile(" (local|remote) address: LID 0000 QPN 0x[0-9a-f]{4,6}"
            + " PSN 0x[0-9a-f]{1,6}");
    static final String GID = " GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01";

    static PerftestLoopbackTest.Pair run(String test, String... flags) throws Exception {
        List<String> common = new ArrayList<>(List.of(test, "-R", "-d", "iwarp_lo", "--timeout", "20"));
        common.addAll(List.of(flags));
        return PerftestLoopbackTest.runBoth(common);
    }

    /** The -R header perftest would print on this side (jrdma's iWARP MTU is 4096 on both ends here). */
    static String header(PerftestOptions o, boolean client) {
        return PerftestReport.header(new PerftestReport.Info(o.test(), o.cmpSwap(), "iwarp_lo", o.numQps(),
                o.disablePcir(), client, o.txDepth(), o.rxDepth(), o.cqMod(), 4096, 0, o.inlineSize(),
                o.outstandingReads(), true, o.useSrq()));
    }

    /** One side's output, line by line; @return the rows. */
    static List<String> check(String out, PerftestOptions o, boolean client, int expectedRows) {
        return PerftestLoopbackTest.check(out, o, client, expectedRows, header(o, client), GID, (side, line) -> {
            assertTrue(ADDRESS.matcher(line).matches(), line + "\n" + out);
            assertTrue(line.startsWith(" " + side + " address"), line);
        });
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    @Timeout(90)
    void everyTestInBothRoles(PerfTest test) throws Exception {
        String[] flags = test.isBw() && !test.isAtomic() ? new String[] {"-n", "300", "-s", "4096"}
                : new String[] {"-n", "300"};
        PerftestLoopbackTest.Pair r = run(test.cliName(), flags);
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertEquals("", r.serverErr() + r.clientErr(), r.all());
        List<String> args = new ArrayList<>(List.of(test.cliName(), "-R", "-d", "iwarp_lo"));
        args.addAll(List.of(flags));
        PerftestOptions o = PerfCommand.parsePerftest(args.toArray(String[]::new));
        List<String> clientRows = check(r.clientOut(), o, true, 1);
        PerftestLoopbackTest.checkSizes(clientRows, o.sizes(), 300);
        boolean serverRows = test.isBw() || test == PerfTest.WRITE_LAT || test == PerfTest.SEND_LAT;
        List<String> serverRow = check(r.serverOut(), o, false, serverRows ? 1 : 0);
        if (test.isBw() && !test.isSend()) {
            assertEquals(clientRows, serverRow, "the server prints the client's report as it received it");
        }
    }

    /** perftest's -R over roce_lo: rdma_cm through the InfiniBand CM (MADs on QP 1), every test, both roles. */
    @ParameterizedTest
    @EnumSource(PerfTest.class)
    @Timeout(90)
    void everyTestOverRoceThroughTheInfinibandCm(PerfTest test) throws Exception {
        String[] flags = test.isBw() && !test.isAtomic() ? new String[] {"-n", "300", "-s", "4096"}
                : new String[] {"-n", "300"};
        List<String> common = new ArrayList<>(List.of(test.cliName(), "-R", "-d", "roce_lo", "--timeout", "20"));
        common.addAll(List.of(flags));
        PerftestLoopbackTest.Pair r = PerftestLoopbackTest.runBoth(common);
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertEquals("", r.serverErr() + r.clientErr(), r.all());
        assertTrue(r.clientOut().contains(" rdma_cm QPs\t : ON"), r.clientOut());
        assertTrue(r.clientOut().contains("Transport type : IB"), "perftest says IB for RoCE: " + r.clientOut());
        long rows = r.clientOut().lines().filter(l -> l.matches(" *\\d+ +300 .*")).count();
        assertEquals(1, rows, r.clientOut());
    }

    @Test
    @Timeout(120)
    void allSizesAndSeveralQps() throws Exception {
        for (String test : List.of("write_bw", "send_bw", "read_lat")) {
            PerftestLoopbackTest.Pair r = run(test, "-a", "-n", "5");
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
            PerftestOptions o = PerfCommand.parsePerftest(test, "-R", "-d", "iwarp_lo", "-a", "-n", "5");
            PerftestLoopbackTest.checkSizes(check(r.clientOut(), o, true, 23), o.sizes(), 5);
        }
        for (String test : List.of("read_bw", "send_bw")) {
            String[] flags = {"-q", "3", "-n", "100", "-s", "1000", "-t", "16", "-Q", "4", "-r", "10"};
            PerftestLoopbackTest.Pair r = run(test, test.equals("send_bw") ? flags : java.util.Arrays.copyOf(flags, 10));
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
        }
    }

    /** ib_send_bw -R --use-srq (the siw interop case): three QPs on one SRQ, credits per QP the messages came on. */
    @Test
    @Timeout(90)
    void sendTestsOnOneSrq() throws Exception {
        for (String test : List.of("send_bw", "send_lat")) {
            String[] flags = test.equals("send_bw")
                    ? new String[] {"--use-srq", "-q", "3", "-n", "200", "-s", "1000", "-t", "16", "-Q", "4", "-r", "10"}
                    : new String[] {"--use-srq", "-n", "200", "-s", "64"};
            PerftestLoopbackTest.Pair r = run(test, flags);
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
        }
    }

    /**
     * ib_send_bw over iWARP with few receives: the receiver reports its count every rx_depth/3
     * receives by a 4-byte RDMA WRITE into the sender's credit word, and the sender never has
     * more than rx_depth - 1 SENDs beyond it (iWARP has no receiver-not-ready retry: one SEND too
     * many is a TERMINATE). 200 SENDs through 8 receives complete only if both halves work.
     */
    @Test
    @Timeout(60)
    void sendBwWaitsForCredits() throws Exception {
        String[] common = {"send_bw", "-R", "-d", "iwarp_lo", "-r", "8", "-n", "200", "-s", "4096", "--timeout", "20"};
        List<String> s = new ArrayList<>(List.of(common));
        s.addAll(List.of("-p", "0"));
        PerftestOptions so = PerfCommand.parsePerftest(s.toArray(String[]::new));
        assertEquals(8, so.rxDepth());
        ByteArrayOutputStream sOut = new ByteArrayOutputStream();
        ByteArrayOutputStream cOut = new ByteArrayOutputStream();
        Perftest[] sides = PerftestLoopbackTest.runSides(common, sOut, cOut, Perftest::run);
        Perftest server = sides[0];
        Perftest client = sides[1];
        // rcnt % 8 % (8 / 3) == 0: every second receive
        assertEquals(100, server.creditWrites, sOut.toString(StandardCharsets.UTF_8));
        assertEquals(0, client.creditWrites);
        assertTrue(cOut.toString(StandardCharsets.UTF_8).lines().anyMatch(l -> l.startsWith(" 4096       200 ")),
                cOut.toString(StandardCharsets.UTF_8));
    }

    @Test
    void rdmaCmUsageErrors() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc;
        err.reset();
        rc = PerfCommand.run(List.of("write_bw", "-R", "--jrdma-cm", "-d", "iwarp_lo", "--loopback"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, rc);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("drop --jrdma-cm"), err.toString(StandardCharsets.UTF_8));
        err.reset();
        rc = PerfCommand.run(List.of("write_bw", "-R", "-z", "-d", "iwarp_lo", "--loopback"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, rc);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("-z/--comm_rdma_cm is not supported"),
                err.toString(StandardCharsets.UTF_8));
        assertEquals("", out.toString(StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(30)
    void aServerWithoutClientStopsAtItsTimeoutOrWhenInterrupted() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PerftestOptions o = PerfCommand.parsePerftest("write_bw", "-R", "-d", "iwarp_lo", "-p", "0", "--timeout", "1");
        int rc = PerftestCommand.execute(o, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(1, rc);
        assertTrue(err.toString(StandardCharsets.UTF_8).matches("jrdma perf: FAILED: no client connected to port \\d+"
                + " \\(rdma_cm\\) within 1 s\n"), err.toString(StandardCharsets.UTF_8));
        // without --timeout a server waits for ever, as perftest's: an interrupt ends the wait (not a spin)
        PerftestOptions forever = PerfCommand.parsePerftest("write_bw", "-R", "-d", "iwarp_lo", "-p", "0");
        CompletableFuture<Integer> port = new CompletableFuture<>();
        CompletableFuture<Integer> result = new CompletableFuture<>();
        ByteArrayOutputStream err2 = new ByteArrayOutputStream();
        Thread t = Thread.ofPlatform().start(() -> result.complete(PerftestCommand.execute(forever,
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err2, true, StandardCharsets.UTF_8), port::complete)));
        port.get(10, TimeUnit.SECONDS);
        t.interrupt();
        assertEquals(1, result.get(10, TimeUnit.SECONDS));
        assertTrue(err2.toString(StandardCharsets.UTF_8).contains("(rdma_cm)"), err2.toString(StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(60)
    void theCommandLineRunsInOneProcess() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = PerfCommand.run(List.of("write_bw", "-R", "-d", "iwarp_lo", "--loopback", "-s", "65536", "-n", "100"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String o = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, o + err);
        assertTrue(o.contains(" Number of qps   : 1\t\tTransport type : IW\n"), o);
        assertTrue(o.contains(" rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n"), o);
        assertTrue(o.lines().anyMatch(l -> l.startsWith(" 65536      100 ")), o);
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }
}

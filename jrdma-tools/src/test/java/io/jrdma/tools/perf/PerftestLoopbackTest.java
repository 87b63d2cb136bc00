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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jrdma against jrdma through perftest's exchange on 127.0.0.1: the server in a thread with its
 * own output, the client here; both tables are checked line by line against perftest's layout.
 */
class PerftestLoopbackTest {
    static final String L = PerftestReport.RESULT_LINE;
    static final Pattern BW_ROW = Pattern.compile(" (\\d+) +(\\d+) +([0-9.]+) +([0-9.]+) *\t\t   ([0-9.]+) *");
    static final Pattern LAT_ROW = Pattern.compile(" (\\d+) +(\\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +\t +([0-9.]+) +\t"
            + "([0-9.]+) *\t\t([0-9.]+) *\\ \t\t([0-9.]+) *");
    static final Pattern ADDRESS = Pattern.compile(" (local|remote) address: LID (0000|0x[0-9a-f]{4}) QPN 0x[0-9a-f]{4,6}"
            + " PSN 0x[0-9a-f]{1,6}( OUT 0x80)?( RKey 0x[0-9a-f]{6,8} VAddr 0x[0-9a-f]{14})?");
    static final String GID = " GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01";

    record Pair(int serverRc, String serverOut, String serverErr, int clientRc, String clientOut, String clientErr) {
        String all() {
            return "--- server rc " + serverRc + "\n" + serverOut + serverErr + "--- client rc " + clientRc + "\n"
                    + clientOut + clientErr;
        }
    }

    static Pair run(String test, String... flags) throws Exception {
        List<String> common = new ArrayList<>(List.of(test, "-d", "roce_lo", "--timeout", "20"));
        common.addAll(List.of(flags));
        return runBoth(common);
    }

    /** A server (port 0) and a client on 127.0.0.1 with the same {@code common} flags; @return both outcomes */
    static Pair runBoth(List<String> common) throws Exception {
        List<String> s = new ArrayList<>(common);
        s.addAll(List.of("-p", "0"));
        PerftestOptions so = PerfCommand.parsePerftest(s.toArray(String[]::new));
        ByteArrayOutputStream sOut = new ByteArrayOutputStream();
        ByteArrayOutputStream sErr = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        CompletableFuture<Integer> serverRc = CompletableFuture.supplyAsync(() -> {
            int rc = PerftestCommand.execute(so, new PrintStream(sOut, true, StandardCharsets.UTF_8),
                    new PrintStream(sErr, true, StandardCharsets.UTF_8), port::complete);
            port.complete(-1);
            return rc;
        });
        int p = port.get(20, TimeUnit.SECONDS);
        ByteArrayOutputStream cOut = new ByteArrayOutputStream();
        ByteArrayOutputStream cErr = new ByteArrayOutputStream();
        int crc = -2;
        if (p > 0) {
            List<String> c = new ArrayList<>(common);
            c.addAll(List.of("-p", String.valueOf(p), "127.0.0.1"));
            crc = PerftestCommand.execute(PerfCommand.parsePerftest(c.toArray(String[]::new)),
                    new PrintStream(cOut, true, StandardCharsets.UTF_8), new PrintStream(cErr, true, StandardCharsets.UTF_8));
        }
        int src = serverRc.get(40, TimeUnit.SECONDS);
        return new Pair(src, sOut.toString(StandardCharsets.UTF_8), sErr.toString(StandardCharsets.UTF_8), crc,
                cOut.toString(StandardCharsets.UTF_8), cErr.toString(StandardCharsets.UTF_8));
    }

    /** The header perftest would print on this side, from the options both sides ran with. */
    static String header(PerftestOptions o, boolean client) {
        return PerftestReport.header(new PerftestReport.Info(o.test(), o.cmpSwap(), "roce_lo", o.numQps(),
                o.disablePcir(), client, o.txDepth(), o.rxDepth(), o.cqMod(), 4096, 0, o.inlineSize(),
                o.outstandingReads(), false, o.useSrq()));
    }

    /**
     * Checks one side's output: banner (server), header, addresses, then the columns and the
     * rows (one per size, or none), and the closing line; @return the rows.
     */
    static List<String> check(String out, PerftestOptions o, boolean client, int expectedRows) {
        return check(out, o, client, expectedRows, header(o, client), GID, (side, line) -> {
            Matcher m = ADDRESS.matcher(line);
            assertTrue(m.matches(), line + "\n" + out);
            assertEquals(side, m.group(1));
            assertEquals(o.test().opcode == io.jrdma.verbs.WrOpcode.RDMA_READ, m.group(3) != null, line);
            assertEquals(!o.test().isSend() && !o.test().isAtomic(), m.group(4) != null, line);
        });
    }

    /**
     * As {@link #check(String, PerftestOptions, boolean, int)}, with the header and GID line this side
     * must print and a check of each address line ({@code address.accept("local" or "remote", line)}).
     */
    static List<String> check(String out, PerftestOptions o, boolean client, int expectedRows, String header,
                              String gid, java.util.function.BiConsumer<String, String> address) {
        List<String> lines = new ArrayList<>(out.lines().toList());
        int i = 0;
        if (!client) {
            assertEquals(List.of("", "************************************", "* Waiting for client to connect... *",
                    "************************************"), lines.subList(0, 4), out);
            i = 4;
        }
        int h = (int) header.lines().count();
        assertEquals(header, String.join("\n", lines.subList(i, i + h)), out);
        i += h;
        for (String side : List.of("local", "remote")) {
            for (int q = 0; q < o.numQps(); q++) {
                address.accept(side, lines.get(i));
                assertEquals(gid, lines.get(i + 1), out);
                i += 2;
            }
        }
        assertEquals(L, lines.get(i++), out);
        List<String> rows = new ArrayList<>();
        if (expectedRows > 0) {
            assertEquals(o.bw() ? PerftestReport.bwColumns(o.gbits()) : PerftestReport.RESULT_FMT_LAT, lines.get(i++),
                    out);
            for (int r = 0; r < expectedRows; r++) {
                String row = lines.get(i++);
                assertTrue((o.bw() ? BW_ROW : LAT_ROW).matcher(row).matches(), "[" + row + "]\n" + out);
                rows.add(row);
            }
            assertEquals(L, lines.get(i++), out);
        }
        assertEquals(i, lines.size(), out);
        return rows;
    }

    static void checkSizes(List<String> rows, List<Long> sizes, long iters) {
        assertEquals(sizes.size(), rows.size());
        for (int k = 0; k < sizes.size(); k++) {
            assertTrue(rows.get(k).startsWith(" " + sizes.get(k) + " "), rows.get(k));
            assertTrue(rows.get(k).matches(" \\d+ +" + iters + " .*"), rows.get(k));
        }
    }

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    @Timeout(90)
    void everyTestInBothRoles(PerfTest test) throws Exception {
        String[] flags = test.isBw() && !test.isAtomic() ? new String[] {"-n", "300", "-s", "4096"}
                : new String[] {"-n", "300"};
        Pair r = run(test.cliName(), flags);
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertEquals("", io.jrdma.tools.oob.RawPeer.withoutPortWarning(r.serverErr() + r.clientErr()),
                r.all());
        PerftestOptions o = PerfCommand.parsePerftest(test.cliName(), flags[0], flags[1]);
        if (flags.length > 2) {
            o = PerfCommand.parsePerftest(test.cliName(), flags[0], flags[1], flags[2], flags[3]);
        }
        List<String> clientRows = check(r.clientOut(), o, true, 1);
        checkSizes(clientRows, o.sizes(), 300);
        // servers: bw ones print the client's report; write_lat and send_lat measure themselves;
        // read_lat and atomic_lat print no table
        boolean serverRows = test.isBw() || test == PerfTest.WRITE_LAT || test == PerfTest.SEND_LAT;
        List<String> serverRow = check(r.serverOut(), o, false, serverRows ? 1 : 0);
        if (test.isBw() && !test.isSend()) {
            assertEquals(clientRows, serverRow, "the server prints the client's report as it received it");
        }
        if (test == PerfTest.SEND_BW) {
            assertTrue(serverRow.getFirst().matches(" 4096 +300 +0\\.00 .*"), "no peak at the server: " + serverRow);
        }
    }

    /** -c UC (write and send tests) and -c UD (send tests) in both roles, as ib_*_bw/lat -c UC|UD. */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"write_bw,UC,4096", "send_bw,UC,4096", "write_lat,UC,2",
        "send_lat,UC,2", "send_bw,UD,1024", "send_lat,UD,2", "send_lat,UD,4096"})
    @Timeout(90)
    void ucAndUdInBothRoles(String test, String connection, String size) throws Exception {
        String[] flags = {"-c", connection, "-n", "300", "-s", size};
        Pair r = run(test, flags);
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        PerftestOptions o = PerfCommand.parsePerftest(test, flags[0], flags[1], flags[2], flags[3], flags[4], flags[5]);
        assertEquals(io.jrdma.verbs.QpType.valueOf(connection), o.connection());
        String conn = " Connection type : " + connection + "\t";
        List<String> clientRows = check(r.clientOut(), o, true, 1, header(o, true).replace(" Connection type : RC\t",
                conn), GID, (side, line) -> assertTrue(ADDRESS.matcher(line).matches(), line));
        checkSizes(clientRows, List.of(Long.parseLong(size)), 300);
        boolean serverRows = o.bw() || test.equals("write_lat") || test.equals("send_lat");
        check(r.serverOut(), o, false, serverRows ? 1 : 0, header(o, false).replace(" Connection type : RC\t", conn),
                GID, (side, line) -> assertTrue(ADDRESS.matcher(line).matches(), line));
    }

    @Test
    @Timeout(90)
    void udStopsAtTheMtuAndTheUnsupportedCombinationsAreRefused() throws Exception {
        Pair r = run("send_lat", "-c", "UD", "-n", "5", "-s", "8192");
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertTrue(r.clientErr().contains(" Max msg size in UD is MTU 4096\n Changing to this MTU\n"), r.all());
        assertTrue(r.serverErr().contains(" Max msg size in UD is MTU 4096\n Changing to this MTU\n"), r.all());
        assertTrue(r.clientOut().indexOf("Send Latency Test") >= 0, r.all());
        assertTrue(r.clientOut().contains("\n 4096 "), "the row is of 4096 bytes: " + r.all());
        for (String[] bad : new String[][] {{"read_bw", "-c", "UC"}, {"atomic_lat", "-c", "UC"}, {"write_bw", "-c", "UD"},
            {"send_bw", "-c", "XRC"}}) {
            io.jrdma.tools.ArgParser.UsageException e = org.junit.jupiter.api.Assertions.assertThrows(
                    io.jrdma.tools.ArgParser.UsageException.class, () -> PerfCommand.parsePerftest(bad));
            assertTrue(e.getMessage().startsWith("option -c/--connection"), e.getMessage());
        }
    }

    @Test
    @Timeout(120)
    void allSizesRunInOrder() throws Exception {
        for (String test : List.of("write_bw", "send_bw", "read_lat", "send_lat")) {
            Pair r = run(test, "-a", "-n", "5");
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
            PerftestOptions o = PerfCommand.parsePerftest(test, "-a", "-n", "5");
            checkSizes(check(r.clientOut(), o, true, 23), o.sizes(), 5);
        }
    }

    @Test
    @Timeout(90)
    void writeLatAllSizes() throws Exception {
        Pair r = run("write_lat", "-a", "-n", "5");
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        PerftestOptions o = PerfCommand.parsePerftest("write_lat", "-a", "-n", "5");
        checkSizes(check(r.clientOut(), o, true, 23), o.sizes(), 5);
        checkSizes(check(r.serverOut(), o, false, 23), o.sizes(), 5);
    }

    @Test
    @Timeout(90)
    void severalQps() throws Exception {
        for (String test : List.of("write_bw", "read_bw", "send_bw")) {
            Pair r = run(test, "-q", "3", "-n", "100", "-s", "1000", "-t", "16", "-Q", "4");
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
            PerftestOptions o = PerfCommand.parsePerftest(test, "-q", "3", "-n", "100", "-s", "1000", "-t", "16",
                    "-Q", "4");
            checkSizes(check(r.clientOut(), o, true, 1), List.of(1000L), 300);
        }
    }

    @Test
    @Timeout(90)
    void sendTestsTakeTheirReceivesFromOneSrq() throws Exception {
        for (String test : List.of("send_bw", "send_lat")) {
            String[] args = test.equals("send_bw") ? new String[] {"--use-srq", "-q", "3", "-n", "200", "-s", "1000",
                "-t", "16", "-Q", "4"} : new String[] {"--use-srq", "-n", "200", "-s", "64"};
            Pair r = run(test, args);
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
            List<String> all = new ArrayList<>(List.of(test));
            all.addAll(List.of(args));
            PerftestOptions o = PerfCommand.parsePerftest(all.toArray(String[]::new));
            assertTrue(o.useSrq(), "--use-srq parsed");
            assertTrue(r.clientOut().contains("Using SRQ      : ON") && r.serverOut().contains("Using SRQ      : ON"),
                    "perftest's header says so: " + r.all());
            checkSizes(check(r.clientOut(), o, true, 1), List.of(o.size()), test.equals("send_bw") ? 600 : 200);
        }
        io.jrdma.tools.ArgParser.UsageException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.jrdma.tools.ArgParser.UsageException.class,
                () -> PerfCommand.parsePerftest("write_bw", "--use-srq"));
        assertTrue(e.getMessage().contains("--use-srq"), e.getMessage());
    }

    /** Runs a server and a client {@link Perftest} on roce_lo with {@code flags}; @return {server, client} */
    static Perftest[] runSides(String... flags) throws Exception {
        List<String> common = new ArrayList<>(List.of(flags));
        common.addAll(List.of("-d", "roce_lo", "--timeout", "20"));
        return runSides(common.toArray(String[]::new), new ByteArrayOutputStream(), new ByteArrayOutputStream(),
                Perftest::run);
    }

    /** Both sides of one run, and what each printed. */
    record Captured(Perftest[] sides, String server, String client) {
    }

    /** {@link #runSides(String[], ByteArrayOutputStream, ByteArrayOutputStream, java.util.function.Consumer)} with {@link Perftest#run}, its outputs kept. */
    static Captured runCaptured(String... common) throws Exception {
        ByteArrayOutputStream sOut = new ByteArrayOutputStream();
        ByteArrayOutputStream cOut = new ByteArrayOutputStream();
        Perftest[] sides = runSides(common, sOut, cOut, Perftest::run);
        return new Captured(sides, sOut.toString(StandardCharsets.UTF_8), cOut.toString(StandardCharsets.UTF_8));
    }

    /**
     * Runs a server {@link Perftest} with {@code common} on port 0 in a thread, and a client with {@code common}
     * towards it on this thread through {@code runClient}; their outputs go to {@code sOut} and {@code cOut}.
     *
     * @return {server, client}, for the counters a test reads
     */
    static Perftest[] runSides(String[] common, ByteArrayOutputStream sOut, ByteArrayOutputStream cOut,
                               java.util.function.Consumer<Perftest> runClient) throws Exception {
        return runSides(common, common, sOut, cOut, runClient);
    }

    /** {@link #runSides(String[], ByteArrayOutputStream, ByteArrayOutputStream, java.util.function.Consumer)} with each side's own flags. */
    static Perftest[] runSides(String[] serverFlags, String[] clientFlags, ByteArrayOutputStream sOut,
                               ByteArrayOutputStream cOut, java.util.function.Consumer<Perftest> runClient) throws Exception {
        List<String> s = new ArrayList<>(List.of(serverFlags));
        s.add("-p");
        s.add("0");
        PrintStream sPrint = new PrintStream(sOut, true, StandardCharsets.UTF_8);
        PrintStream cPrint = new PrintStream(cOut, true, StandardCharsets.UTF_8);
        java.util.concurrent.atomic.AtomicBoolean serverFailed = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicBoolean clientFailed = new java.util.concurrent.atomic.AtomicBoolean();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Perftest server = new Perftest(PerfCommand.parsePerftest(s.toArray(String[]::new)), sPrint, sPrint,
                new Watchdog(20, clientFailed), port::complete, false);
        CompletableFuture<Void> serverRun = CompletableFuture.runAsync(() -> {
            try {
                server.run();
            } catch (RuntimeException e) {
                serverFailed.set(true);
                port.completeExceptionally(e);
                throw e;
            }
        });
        List<String> c = new ArrayList<>(List.of(clientFlags));
        c.addAll(List.of("-p", String.valueOf(port.get(20, TimeUnit.SECONDS)), "127.0.0.1"));
        Perftest client = new Perftest(PerfCommand.parsePerftest(c.toArray(String[]::new)), cPrint, cPrint,
                new Watchdog(20, serverFailed), p -> { }, false);
        try {
            runClient.accept(client);
        } catch (RuntimeException e) {
            clientFailed.set(true);
            throw new AssertionError(cOut + "\n--- server:\n" + sOut, e);
        }
        serverRun.get(30, TimeUnit.SECONDS);
        return new Perftest[] {server, client};
    }

    /**
     * {@code -e} (perftest's use_event): the send, read and atomic tests run with every wait for a completion asleep on
     * the CQs' completion channel: the sides that wait for completions (the client; in the send tests the server too)
     * woke to CQ events, a passive server took none, and the header says so as perftest's does. The WRITE tests and
     * {@code -D} refuse {@code -e} with perftest's words, and a large message keeps its CQ moderation, as perftest.
     */
    @Test
    @Timeout(180)
    void eventsSleepOnTheCompletionChannelInBothRoles() throws Exception {
        for (String test : List.of("send_bw", "send_lat", "read_bw", "read_lat", "atomic_bw", "atomic_lat")) {
            Captured run = runCaptured(test, "-e", "-n", "200", "-d", "roce_lo", "--timeout", "20");
            Perftest[] sides = run.sides();
            String out = run.client();
            String all = test + "\n" + run.server() + out;
            assertTrue(sides[1].cqEvents > 0 && sides[1].cqEvents <= sides[1].eventWaits,
                    test + ": the client slept on the channel and woke to events: " + sides[1].cqEvents + " of "
                            + sides[1].eventWaits + "\n" + all);
            if (test.startsWith("send")) {
                assertTrue(sides[0].cqEvents > 0, test + ": the server too\n" + all);
            } else {
                assertEquals(0, sides[0].eventWaits, test + ": a passive server waits for no completion\n" + all);
            }
            assertTrue(out.contains("\n Test with events. Using roce_lo_comp0\n"), all);
            assertTrue(out.lines().anyMatch(l -> l.matches(" \\d+ +200 .*")), "a row of 200 iterations\n" + all);
        }
        for (String test : List.of("write_bw", "write_lat")) {
            io.jrdma.tools.ArgParser.UsageException e = org.junit.jupiter.api.Assertions.assertThrows(
                    io.jrdma.tools.ArgParser.UsageException.class, () -> PerfCommand.parsePerftest(test, "-e"));
            assertTrue(e.getMessage().contains("Events feature not available on WRITE verb"), e.getMessage());
        }
        io.jrdma.tools.ArgParser.UsageException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.jrdma.tools.ArgParser.UsageException.class, () -> PerfCommand.parsePerftest("send_bw", "-e", "-D",
                        "4"));
        assertTrue(e.getMessage().contains("Duration mode doesn't work with events"), e.getMessage());
        assertEquals(100, PerfCommand.parsePerftest("send_bw", "-e", "-s", "65536").cqMod());
        assertEquals(1, PerfCommand.parsePerftest("send_bw", "-s", "65536").cqMod());
    }

    /**
     * Between jrdma sides a latency test warms up with rounds of its own loop, not measured, before the measured run:
     * write_lat and send_lat on both sides round for round (they decide each round together over the side channel),
     * read_lat and atomic_lat on the client alone (the server is passive); with -a none. The measured runs report
     * as before (fails when a side skips or adds a round: the other waits for it, or the report is off).
     */
    @Test
    @Timeout(120)
    void latencyTestsWarmUpBetweenJrdmaSides() throws Exception {
        for (String test : List.of("write_lat", "send_lat")) {
            Captured run = runCaptured(test, "-n", "50", "-d", "roce_lo", "--timeout", "20");
            Perftest[] sides = run.sides();
            assertTrue(sides[1].latWarmUpRounds >= 1, test + ": the client warmed up");
            assertEquals(sides[1].latWarmUpRounds, sides[0].latWarmUpRounds, test + ": both sides, round for round");
            String out = run.client();
            assertTrue(out.lines().anyMatch(l -> l.matches(" 2 +50 .*")), test + ": the measured run's row\n" + out);
        }
        for (String test : List.of("read_lat", "atomic_lat")) {
            Perftest[] sides = runSides(test, "-n", "50");
            assertTrue(sides[1].latWarmUpRounds >= 1, test + ": the client warmed up");
            assertEquals(0, sides[0].latWarmUpRounds, test + ": the passive server");
        }
        assertEquals(0, runSides("write_lat", "-a", "-n", "5")[1].latWarmUpRounds, "-a: no warm-up");
    }

    /**
     * send_lat with a receive queue deeper than a warm-up round (-r 8192 against rounds of 4,096): each run posts
     * no more receives than it has messages, so a round leaves none behind, and the next round's fit (a round that
     * posted all 8,192 left 4,096 posted, and the second round's posts failed with ENOMEM); with its own QP's
     * queue and with an SRQ.
     */
    @Test
    @Timeout(120)
    void sendLatWarmsUpWithAReceiveQueueDeeperThanARound() throws Exception {
        for (boolean srq : new boolean[] {false, true}) {
            List<String> args = new ArrayList<>(List.of("send_lat", "-r", "8192", "-n", "10000", "-d", "shm0", "--timeout", "30"));
            if (srq) {
                args.add("--use-srq");
            }
            Captured run = runCaptured(args.toArray(String[]::new));
            Perftest[] sides = run.sides();
            String all = run.client() + "\n--- server:\n" + run.server();
            assertTrue(sides[1].latWarmUpRounds >= 2, "srq=" + srq + ": two warm-up rounds or more\n" + all);
            assertEquals(sides[1].latWarmUpRounds, sides[0].latWarmUpRounds, "srq=" + srq + ": both sides\n" + all);
            assertTrue(run.client().lines().anyMatch(l -> l.matches(" 2 +10000 .*")), "srq=" + srq + ": the measured run's row\n" + all);
        }
    }

    /**
     * send_bw between jrdma sides warms up too, both sides run for run (the server posts its receives for each and
     * they decide each run together), on shm0 and on a socket device; the measured run reports its own messages;
     * with -a there is no warm-up. Fails when a side skips or adds a run (the other waits for it) or when a run
     * leaves receives or completions behind (the measured run's counts would be off, or a QP would overflow).
     */
    @Test
    @Timeout(120)
    void sendBwWarmsUpBetweenJrdmaSides() throws Exception {
        for (String dev : List.of("shm0", "roce_lo")) {
            Captured run = runCaptured("send_bw", "-n", "300", "-s", "64", "-d", dev, "--timeout", "20");
            Perftest[] sides = run.sides();
            String all = run.client() + "\n--- server:\n" + run.server();
            assertTrue(sides[1].bwWarmUpRuns >= 1, dev + ": the client warmed up\n" + all);
            assertEquals(sides[1].bwWarmUpRuns, sides[0].bwWarmUpRuns, dev + ": both sides, run for run\n" + all);
            assertTrue(run.client().lines().anyMatch(l -> l.matches(" 64 +300 .*")),
                    dev + ": the measured run's row\n" + all);
        }
        Perftest[] sides = runSides("send_bw", "-a", "-n", "5");
        assertEquals(0, sides[0].bwWarmUpRuns + sides[1].bwWarmUpRuns, "-a: no warm-up");
        // each side's rx_depth its own (perftest does not ask them to match): the runs' length is agreed on first
        // (with each side's own length the server waited for messages the client never sent)
        String[] client = {"send_bw", "-n", "4096", "-s", "65536", "-d", "shm0", "--timeout", "20"};
        String[] server = {"send_bw", "-n", "4096", "-s", "65536", "-d", "shm0", "--timeout", "20", "-r", "2048"};
        ByteArrayOutputStream sOut = new ByteArrayOutputStream();
        ByteArrayOutputStream cOut = new ByteArrayOutputStream();
        sides = runSides(server, client, sOut, cOut, Perftest::run);
        assertEquals(sides[1].bwWarmUpRuns, sides[0].bwWarmUpRuns, "both sides, run for run\n" + cOut + sOut);
        assertTrue(cOut.toString(StandardCharsets.UTF_8).lines().anyMatch(l -> l.matches(" 65536 +4096 .*")),
                "the measured run's row\n" + cOut + sOut);
    }

    /**
     * --pause: the latency tests' busy waits (on the peer's byte, on CQs) run a PAUSE per turn on both sides (the
     * client alone in read_lat), on shm0 and on a socket device alike; without it, and in a bandwidth test, no wait pauses; with --jrdma-cm it
     * is refused with a clear message.
     */
    @Test
    @Timeout(120)
    void pauseMakesTheLatencyWaitsPause() throws Exception {
        for (String dev : List.of("shm0", "roce_lo")) {
            // on shm0 a READ completes inside its post: read_lat there has no wait to pause
            for (String test : dev.equals("shm0") ? List.of("write_lat", "send_lat") : List.of("write_lat", "send_lat", "read_lat")) {
                Perftest[] sides = runSides(new String[] {test, "-n", "200", "-d", dev, "--timeout", "20", "--pause"},
                        new ByteArrayOutputStream(), new ByteArrayOutputStream(), Perftest::run);
                assertTrue(sides[1].pausedTurns > 0, dev + " " + test + ": the client's waits paused");
                if (!test.equals("read_lat")) { // read_lat's server only serves
                    assertTrue(sides[0].pausedTurns > 0, dev + " " + test + ": the server's waits paused");
                }
                Perftest[] plain = runSides(new String[] {test, "-n", "200", "-d", dev, "--timeout", "20"},
                        new ByteArrayOutputStream(), new ByteArrayOutputStream(), Perftest::run);
                assertEquals(0, plain[0].pausedTurns + plain[1].pausedTurns, dev + " " + test + ": no --pause, no PAUSE");
            }
        }
        assertEquals(0, runSides("write_bw", "--pause", "-n", "50")[1].pausedTurns, "a bandwidth test does not pause");
        io.jrdma.tools.ArgParser.UsageException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.jrdma.tools.ArgParser.UsageException.class,
                () -> PerfCommand.options(PerfCommand.PARSER.parse(List.of("write_lat", "--jrdma-cm", "--pause"))));
        assertTrue(e.getMessage().contains("--pause belongs to perftest's exchange"), e.getMessage());
    }

    /**
     * perftest's --perform_warm_up: a write, read or atomic bw client posts tx_depth requests per QP, and waits for
     * them, before each measured run (every size with -a); a server, and send_bw, take no part, as in perftest.
     */
    @Test
    @Timeout(120)
    void performWarmUpPostsTxDepthRequestsPerQpBeforeEachRun() throws Exception {
        for (String test : List.of("write_bw", "read_bw", "atomic_bw")) {
            Perftest[] sides = runSides(test, "--perform_warm_up", "-q", "2", "-n", "20", "-t", "8");
            assertEquals(0, sides[0].warmUpRequests, test + ": the server warms nothing up");
            assertEquals(2 * 8, sides[1].warmUpRequests, test + ": tx_depth requests on each of the 2 QPs");
            assertEquals(0, runSides(test, "-q", "2", "-n", "20", "-t", "8")[1].warmUpRequests, test + ", no flag");
        }
        assertEquals(23 * 4, runSides("write_bw", "--perform_warm_up", "-a", "-n", "5", "-t", "4")[1].warmUpRequests,
                "-a: before each of the 23 sizes");
        assertEquals(0, runSides("send_bw", "--perform_warm_up", "-n", "20")[1].warmUpRequests,
                "send_bw: accepted and unused (perftest's send_bw.c does not call perform_warm_up)");
        io.jrdma.tools.ArgParser.UsageException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.jrdma.tools.ArgParser.UsageException.class,
                () -> PerfCommand.options(PerfCommand.PARSER.parse(List.of("write_bw", "--jrdma-cm",
                        "--perform_warm_up"))));
        assertTrue(e.getMessage().contains("--perform_warm_up belongs to perftest's exchange"), e.getMessage());
    }

    @Test
    @Timeout(90)
    void compareAndSwapAndGbits() throws Exception {
        for (String test : List.of("atomic_bw", "atomic_lat")) {
            Pair r = run(test, "-A", "CMP_AND_SWAP", "-n", "100");
            assertEquals(0, r.clientRc(), r.all());
            assertTrue(r.clientOut().contains("Atomic CMP_AND_SWAP " + (test.endsWith("bw") ? "BW" : "Latency")
                    + " Test"), r.all());
        }
        Pair g = run("write_bw", "--report_gbits", "-n", "100", "-s", "65536");
        assertEquals(0, g.clientRc(), g.all());
        check(g.clientOut(), PerfCommand.parsePerftest("write_bw", "--report_gbits", "-n", "100", "-s", "65536"), true,
                1);
    }

    @Test
    @Timeout(60)
    void theReadmesFirstCommandRunsInOneProcess() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = PerfCommand.run(List.of("write_bw", "--loopback", "-s", "65536", "-n", "300"),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String o = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, o + err);
        assertTrue(o.startsWith(L + "\n                    RDMA_Write BW Test\n"), o);
        assertTrue(o.lines().anyMatch(l -> l.startsWith(" 65536      300 ")), o);
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(90)
    void ibPortOneRunsInBothRolesOverRcAndUd() throws Exception {
        // -i 1 given: the QPs' INIT, the GID table, the MTU and (UD) the address handles are port 1's, as without -i
        for (String[] flags : new String[][] {{"write_bw", "-i", "1", "-n", "100", "-s", "4096"},
            {"send_bw", "-i", "1", "-c", "UD", "-n", "100", "-s", "1024"}}) {
            String[] rest = java.util.Arrays.copyOfRange(flags, 1, flags.length);
            Pair r = run(flags[0], rest);
            assertEquals(0, r.serverRc(), r.all());
            assertEquals(0, r.clientRc(), r.all());
            PerftestOptions o = PerfCommand.parsePerftest(flags);
            assertEquals(1, o.ibPort());
            String conn = " Connection type : " + o.connection() + "\t";
            checkSizes(check(r.clientOut(), o, true, 1, header(o, true).replace(" Connection type : RC\t", conn), GID,
                    (side, line) -> assertTrue(ADDRESS.matcher(line).matches(), line)), List.of(o.size()), 100);
        }
    }

    @Test
    @Timeout(60)
    void aPortTheDeviceLacksIsRefusedNamingItsPorts() {
        // roce_lo has one port: -i 2 is a bad value (exit 2) on a server, on a client before it connects, and with
        // --loopback, in the words jrdma pingpong -i uses
        for (List<String> args : List.of(List.of("write_bw", "-d", "roce_lo", "-i", "2", "-p", "0", "--timeout", "5"),
                List.of("read_lat", "-d", "roce_lo", "-i", "2", "-p", "1", "--timeout", "5", "127.0.0.1"),
                List.of("send_bw", "-d", "roce_lo", "-c", "UD", "--ib-port", "2", "--loopback", "--timeout", "5"))) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = PerfCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8));
            String e = err.toString(StandardCharsets.UTF_8);
            assertEquals(2, rc, args + ": " + e);
            assertTrue(e.contains("jrdma perf: option -i/--ib-port: port 2 of roce_lo does not exist: valid ports are"
                    + " 1..1 (phys_port_cnt 1)"), args + ": " + e);
            assertTrue(!out.toString(StandardCharsets.UTF_8).contains("Waiting for client"), args + ": refused before"
                    + " listening: " + out);
        }
    }

    @Test
    @Timeout(60)
    void aServerWithoutDeviceAnswersOnTheDeviceTheClientReached() throws Exception {
        // no -d on either side: the client routes 127.0.0.1 to roce_lo; the server, as rdma_cm, must
        // open the device of the address the client came to (not its first non-loopback one)
        Pair p = runBoth(List.of("write_bw", "--timeout", "20", "-s", "65536", "-n", "100"));
        assertEquals(0, p.serverRc(), p.all());
        assertEquals(0, p.clientRc(), p.all());
        PerftestOptions o = PerfCommand.parsePerftest("write_bw", "-s", "65536", "-n", "100");
        check(p.serverOut(), o, false, 1);
        check(p.clientOut(), o, true, 1);
    }
}

package io.jrdma.tools.perf;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.regex.Matcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * perftest's duration mode ({@code -D 3 --margin 1}) between two jrdma sides on the software RoCE device over
 * 127.0.0.1: the client measures the middle second only and reports the iterations that completed in it.
 */
class PerftestDurationLoopbackTest {
    static final String WARNING = PerftestOptions.NO_PEAK_WARNING;

    /** The output with perftest's warning (its first line on each side) checked and taken out. */
    static String withoutWarning(String out, String all) {
        assertTrue(out.startsWith(WARNING + "\n"), "perftest's warning first:\n" + all);
        return out.substring(WARNING.length() + 1);
    }

    /** Runs a loopback pair with {@code -D 3} among {@code flags}: both exit 0, print nothing on stderr, last 3 s. */
    private static PerftestLoopbackTest.Pair runForThreeSeconds(String test, String[] flags) throws Exception {
        long t0 = System.nanoTime();
        PerftestLoopbackTest.Pair r = PerftestLoopbackTest.run(test, flags);
        double wall = (System.nanoTime() - t0) / 1e9;
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertEquals("", io.jrdma.tools.oob.RawPeer.withoutPortWarning(r.serverErr() + r.clientErr()), r.all());
        assertTrue(wall >= 3, "the client ran for -D 3 seconds: " + wall + " s");
        return r;
    }

    @ParameterizedTest
    @ValueSource(strings = {"write_bw", "read_bw", "atomic_bw"})
    @Timeout(90)
    void theClientCountsTheSampledSecondAndThePassiveServerPrintsIt(String test) throws Exception {
        String[] flags = test.equals("atomic_bw") ? new String[] {"-D", "3", "--margin", "1"}
                : new String[] {"-D", "3", "--margin", "1", "-s", "4096"};
        PerftestLoopbackTest.Pair r = runForThreeSeconds(test, flags);
        List<String> args = new java.util.ArrayList<>(List.of(test));
        args.addAll(List.of(flags));
        PerftestOptions o = PerfCommand.parsePerftest(args.toArray(String[]::new));
        List<String> rows = PerftestLoopbackTest.check(withoutWarning(r.clientOut(), r.all()), o, true, 1);
        List<String> serverRows = PerftestLoopbackTest.check(withoutWarning(r.serverOut(), r.all()), o, false, 1);
        assertEquals(rows, serverRows, "the passive server prints the client's report as it received it");
        Matcher m = PerftestLoopbackTest.BW_ROW.matcher(rows.getFirst());
        assertTrue(m.matches(), rows.getFirst());
        long size = Long.parseLong(m.group(1));
        long iters = Long.parseLong(m.group(2));
        double peak = Double.parseDouble(m.group(3));
        double avg = Double.parseDouble(m.group(4));
        double rate = Double.parseDouble(m.group(5));
        assertEquals(o.size(), size, rows.getFirst());
        assertTrue(iters > 0, "iterations were sampled: " + rows.getFirst());
        assertEquals(0, iters % o.cqMod(), "completions count cq_mod iterations each: " + rows.getFirst());
        assertEquals(0.0, peak, "perftest reports no peak with -D");
        // the sampled span (iterations / message rate) is the middle second, read a little late at most
        double span = iters / (rate * 1e6);
        assertTrue(span >= 0.99 && span < 1.6, "span " + span + " s: " + rows.getFirst());
        // the average bandwidth is the same count over the same span
        assertEquals(rate * 1e6 * size / (1 << 20), avg, Math.max(0.01, avg * 1e-3), rows.getFirst());
    }

    /** A report row's numbers: size, iterations, peak, average, message rate. */
    record Row(long size, long iters, double peak, double avg, double rate) {
        static Row of(String row) {
            Matcher m = PerftestLoopbackTest.BW_ROW.matcher(row);
            assertTrue(m.matches(), row);
            return new Row(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Double.parseDouble(m.group(3)),
                    Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)));
        }

        /** @return the span the row's iterations were counted in, from its own rate */
        double span() {
            return iters / (rate * 1e6);
        }
    }

    /**
     * send_bw: the server measures too. Its clock starts at the first message (perftest's set_on_first_rx_packet),
     * it reposts every receive until its own END, and it reports the receives of its middle second.
     */
    @org.junit.jupiter.api.Test
    @Timeout(90)
    void sendBwServerCountsItsOwnMiddleSecond() throws Exception {
        String[] flags = {"-D", "3", "--margin", "1", "-s", "4096"};
        PerftestLoopbackTest.Pair r = PerftestLoopbackTest.run("send_bw", flags);
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        PerftestOptions o = PerfCommand.parsePerftest("send_bw", "-D", "3", "--margin", "1", "-s", "4096");
        Row client = Row.of(PerftestLoopbackTest.check(withoutWarning(r.clientOut(), r.all()), o, true, 1).getFirst());
        Row server = Row.of(PerftestLoopbackTest.check(withoutWarning(r.serverOut(), r.all()), o, false, 1)
                .getFirst());
        for (Row row : List.of(client, server)) {
            assertTrue(row.iters() > 0, r.all());
            assertEquals(0.0, row.peak(), r.all());
            assertTrue(row.span() >= 0.99 && row.span() < 1.6, row.span() + " s\n" + r.all());
        }
        assertEquals(0, client.iters() % o.cqMod(), r.all());
        // the two middle seconds are nearly the same second (the server's starts one message later)
        assertTrue(server.iters() > client.iters() / 2 && server.iters() < client.iters() * 2, r.all());
    }

    /**
     * send_bw -R over iWARP with 8 receives: no receiver-not-ready retry there, so the sender lives on the
     * receiver's credit WRITEs (every second receive); a 3 s run goes through them only if both halves keep working.
     */
    @org.junit.jupiter.api.Test
    @Timeout(90)
    void sendBwOverIwarpKeepsItsCreditsGoing() throws Exception {
        String[] common = {"send_bw", "-R", "-d", "iwarp_lo", "-r", "8", "-D", "3", "--margin", "1", "-s", "4096",
                "--timeout", "20"};
        java.io.ByteArrayOutputStream sOut = new java.io.ByteArrayOutputStream();
        java.io.ByteArrayOutputStream cOut = new java.io.ByteArrayOutputStream();
        Perftest[] sides = PerftestLoopbackTest.runSides(common, sOut, cOut, Perftest::run);
        String all = sOut + "\n--- client:\n" + cOut;
        PerftestOptions o = PerfCommand.parsePerftest(common);
        assertEquals(8, o.rxDepth());
        Row server = Row.of(PerftestRdmaCmTest.check(withoutWarning(sOut.toString(java.nio.charset.StandardCharsets
                .UTF_8), all), o, false, 1).getFirst());
        Row client = Row.of(PerftestRdmaCmTest.check(withoutWarning(cOut.toString(java.nio.charset.StandardCharsets
                .UTF_8), all), o, true, 1).getFirst());
        assertTrue(server.iters() > 0 && client.iters() > 0, all);
        // every second receive gave a credit: at least half of the sampled ones (the margins' receives add more)
        assertTrue(sides[0].creditWrites * 2 >= server.iters(), sides[0].creditWrites + " credits\n" + all);
        assertEquals(0, sides[1].creditWrites);
    }

    /** REPORT_FMT_LAT_DUR's row: size, iterations, t_avg[usec], tps average. */
    static final java.util.regex.Pattern LAT_DUR_ROW = java.util.regex.Pattern.compile(
            " (\\d+) +(\\d+) {12}([0-9.]+) +([0-9.]+) *");

    /**
     * One side's latency output in duration mode: header, addresses, RESULT_FMT_LAT_DUR and one row whose numbers
     * agree (t_avg x tps = 10^6 / rtt_factor: the same count over the same span) and put the count in the middle
     * second; @return the row's iterations
     */
    static long checkLatDuration(String out, PerftestOptions o, boolean client, int rttFactor, String all) {
        List<String> lines = out.lines().toList();
        int cols = lines.indexOf(PerftestReport.RESULT_FMT_LAT_DUR);
        assertTrue(cols > 0, "the duration columns:\n" + all);
        assertEquals(PerftestLoopbackTest.L, lines.get(cols - 1), all);
        assertTrue(out.startsWith((client ? "" : "\n") + (client ? PerftestLoopbackTest.header(o, true).lines()
                .findFirst().orElseThrow() : "************************************")), all);
        Matcher m = LAT_DUR_ROW.matcher(lines.get(cols + 1));
        assertTrue(m.matches(), "[" + lines.get(cols + 1) + "]\n" + all);
        assertEquals(o.size(), Long.parseLong(m.group(1)), all);
        long iters = Long.parseLong(m.group(2));
        double avg = Double.parseDouble(m.group(3));
        double tps = Double.parseDouble(m.group(4));
        assertTrue(iters > 0, all);
        double span = iters / tps;
        assertTrue(span >= 0.99 && span < 1.6, "the middle second: " + span + " s\n" + all);
        assertEquals(1e6 / rttFactor, avg * tps, 1e6 / rttFactor * 0.01, "t_avg x tps\n" + all);
        assertEquals(PerftestLoopbackTest.L, lines.get(cols + 2), all);
        assertEquals(cols + 3, lines.size(), all);
        assertTrue(lines.stream().noneMatch(l -> l.contains("WARNING")), "no peak warning for latency\n" + all);
        return iters;
    }

    /**
     * The latency tests: read_lat and atomic_lat measure at the client (the server is passive, as perftest's);
     * write_lat and send_lat on both sides, each with its own clock, each reporting half the round trip.
     */
    @ParameterizedTest
    @ValueSource(strings = {"read_lat", "atomic_lat", "write_lat", "send_lat"})
    @Timeout(90)
    void latencyTestsReportTheirSampledIterations(String test) throws Exception {
        String[] flags = {"-D", "3", "--margin", "1"};
        PerftestLoopbackTest.Pair r = runForThreeSeconds(test, flags);
        PerftestOptions o = PerfCommand.parsePerftest(test, "-D", "3", "--margin", "1");
        boolean pingPong = test.equals("write_lat") || test.equals("send_lat");
        long client = checkLatDuration(r.clientOut(), o, true, pingPong ? 2 : 1, r.all());
        if (pingPong) {
            long server = checkLatDuration(r.serverOut(), o, false, 2, r.all());
            // a ping-pong: both count nearly the same exchanges (their clocks started within a handshake)
            assertTrue(server > client / 2 && server < client * 2, r.all());
        } else {
            assertTrue(r.serverOut().lines().noneMatch(l -> l.startsWith(PerftestReport.RESULT_FMT_LAT_DUR)),
                    "a passive server prints no table\n" + r.all());
        }
    }

    /**
     * The duration loops allocate nothing per message: the client's thread (which also turns the engine, INVOKER)
     * allocates the same for a 2 s and a 4 s run, whatever the tens of thousands of messages between them.
     */
    @org.junit.jupiter.api.Test
    @Timeout(120)
    void theClientAllocatesNothingPerMessage() throws Exception {
        // com.sun.management.ThreadMXBean, by reflection (this module is compiled without jdk.management)
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        java.lang.reflect.Method current = Class.forName("com.sun.management.ThreadMXBean")
                .getMethod("getCurrentThreadAllocatedBytes");
        long[] bytes = new long[3];
        long[] iters = new long[3];
        for (int i = 0; i < 3; i++) {
            String d = i == 2 ? "4" : "2";
            java.io.ByteArrayOutputStream sOut = new java.io.ByteArrayOutputStream();
            java.io.ByteArrayOutputStream cOut = new java.io.ByteArrayOutputStream();
            long[] allocated = new long[1];
            PerftestLoopbackTest.runSides(new String[] {"write_bw", "-d", "roce_lo", "-D", d, "--margin", "0", "-s",
                    "64", "--timeout", "20"}, sOut, cOut, client -> {
                try {
                    long before = (long) current.invoke(mx);
                    client.run();
                    allocated[0] = (long) current.invoke(mx) - before;
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            });
            String out = cOut.toString(java.nio.charset.StandardCharsets.UTF_8);
            iters[i] = Row.of(out.lines().filter(l -> l.startsWith(" 64 ")).findFirst().orElseThrow()).iters();
            bytes[i] = allocated[0];
        }
        // run 0 warms up; runs 1 and 2 differ by 2 s of messages
        long moreMessages = iters[2] - iters[1];
        long moreBytes = bytes[2] - bytes[1];
        String what = "2 s: " + iters[1] + " messages, " + bytes[1] + " B; 4 s: " + iters[2] + " messages, " + bytes[2]
                + " B";
        assertTrue(moreMessages > 10_000, what);
        System.out.println("allocation, the client's thread: " + what);
        assertTrue(moreBytes < moreMessages / 4, "under 0.25 B per message: " + what);
    }
}

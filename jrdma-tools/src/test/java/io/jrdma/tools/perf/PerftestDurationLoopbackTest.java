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

    @ParameterizedTest
    @ValueSource(strings = {"write_bw", "read_bw", "atomic_bw"})
    @Timeout(90)
    void theClientCountsTheSampledSecondAndThePassiveServerPrintsIt(String test) throws Exception {
        String[] flags = test.equals("atomic_bw") ? new String[] {"-D", "3", "--margin", "1"}
                : new String[] {"-D", "3", "--margin", "1", "-s", "4096"};
        long t0 = System.nanoTime();
        PerftestLoopbackTest.Pair r = PerftestLoopbackTest.run(test, flags);
        double wall = (System.nanoTime() - t0) / 1e9;
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertEquals("", io.jrdma.tools.oob.RawPeer.withoutPortWarning(r.serverErr() + r.clientErr()), r.all());
        assertTrue(wall >= 3, "the client ran for -D 3 seconds: " + wall + " s");
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
}

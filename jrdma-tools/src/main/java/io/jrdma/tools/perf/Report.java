package io.jrdma.tools.perf;

import java.io.PrintStream;
import java.util.Locale;

/** perftest's output: the header block, the column line, one row per size, the closing line. */
final class Report {
    static final String DASHES = "-".repeat(87);
    static final String BW_COLUMNS =
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    static final String LAT_COLUMNS = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
            + "t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
    static final String LAT_DUR_COLUMNS = " #bytes        #iterations       t_avg[usec]    tps average";
    private static final int[] BW_AT = columns(BW_COLUMNS, "#bytes", "#iterations", "BW peak", "BW average", "MsgRate");
    private static final int[] LAT_AT = columns(LAT_COLUMNS, "#bytes", "#iterations", "t_min", "t_max", "t_typical",
            "t_avg", "t_stdev", "99%", "99.9%");
    private static final int[] LAT_DUR_AT = columns(LAT_DUR_COLUMNS, "#bytes", "#iterations", "t_avg", "tps");

    /**
     * What the header shows.
     *
     * @param rxDepth  receive depth to show (0 = none)
     * @param reads    outstanding READ/atomic requests to show (0 = none)
     * @param inline   inline size to show (-1 = none)
     */
    record Header(PerfTest test, String device, String transport, int mtu, int txDepth, int rxDepth, int reads, int inline,
                  String threading, boolean verify, int durationSec, long warmup, String[] addressLines) {
    }

    private Report() {
    }

    /** @return the header's transport: RoCEv2 with the engine's UDP port, or iWARP */
    static String transport(io.jrdma.verbs.DeviceContext ctx) {
        return ctx.device().transport() == io.jrdma.verbs.Transport.IWARP ? "iWARP (RDMAP/DDP/MPA over TCP)"
                : "RoCEv2 (UDP " + ctx.queryPort().udpPort() + ")";
    }

    static void header(PrintStream out, Header h) {
        out.println(DASHES);
        out.println("                    " + h.test().title);
        line(out, "Device", h.device());
        line(out, "Transport", h.transport());
        line(out, "Number of qps", "1");
        line(out, "Connection type", "RC");
        line(out, "Mtu", h.mtu() + "[B]");
        line(out, "TX depth", String.valueOf(h.txDepth()));
        if (h.rxDepth() > 0) {
            line(out, "RX depth", String.valueOf(h.rxDepth()));
        }
        if (h.reads() > 0) {
            line(out, "Outstand reads", String.valueOf(h.reads()));
        }
        if (h.inline() >= 0) {
            line(out, "Max inline data", h.inline() + "[B]");
        }
        line(out, "Threading", h.threading());
        if (h.verify()) {
            line(out, "Verify", "ON (the receiver checks the data pattern)");
        }
        if (h.durationSec() > 0) {
            line(out, "Duration", h.durationSec() + " s per size");
        }
        if (h.warmup() > 0) {
            line(out, "Warm-up", "runs of " + h.warmup() + " iterations, 0.3-2 s (until the JIT is quiet), not measured");
        }
        out.println(DASHES);
        for (String l : h.addressLines()) {
            out.println(l);
        }
        out.println(DASHES);
    }

    private static void line(PrintStream out, String label, String value) {
        StringBuilder sb = new StringBuilder(" ").append(label);
        while (sb.length() < 16) {
            sb.append(' ');
        }
        out.println(sb.append(": ").append(value));
    }

    static String columns(PerfTest test, boolean duration) {
        return test.isBw() ? BW_COLUMNS : duration ? LAT_DUR_COLUMNS : LAT_COLUMNS;
    }

    static String bwRow(int size, long iterations, double peak, double avg, double rate) {
        return row(BW_AT, Long.toString(size), Long.toString(iterations), f2(peak), f2(avg), String.format(Locale.ROOT,
                "%.6f", rate));
    }

    static String latRow(int size, long iterations, LatencyStats s) {
        return row(LAT_AT, Long.toString(size), Long.toString(iterations), lat(s.min()), lat(s.max()),
                lat(s.typical()), lat(s.avg()), lat(s.stdev()), lat(s.p99()), lat(s.p999()));
    }

    static String latDurationRow(int size, long iterations, double avgUsec, double tps) {
        return row(LAT_DUR_AT, Long.toString(size), Long.toString(iterations), f2(avgUsec), f2(tps));
    }

    /** a latency column: perftest's 2 decimals, or {@code -Djrdma.perf.decimals} */
    private static String lat(double v) {
        return String.format(Locale.ROOT, "%." + PerftestReport.LAT_DECIMALS + "f", v);
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    /** Lays values out under their column labels (each starts where its label starts). */
    private static String row(int[] at, String... values) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            if (sb.length() >= at[i]) {
                sb.append(' ');
            }
            while (sb.length() < at[i]) {
                sb.append(' ');
            }
            sb.append(values[i]);
        }
        return sb.toString();
    }

    private static int[] columns(String header, String... labels) {
        int[] at = new int[labels.length];
        int from = 0;
        for (int i = 0; i < labels.length; i++) {
            at[i] = header.indexOf(labels[i], from);
            if (at[i] < 0) {
                throw new IllegalStateException(labels[i]);
            }
            from = at[i] + labels[i].length();
        }
        return at;
    }
}

package io.jrdma.tools;

import io.jrdma.engine.core.StatsFile;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code jrdma stat [--watch [S]] [--pid P] [-d DEV] [--qp] [-a]}: the counters of every open jrdma device
 * context of this user, read from their counters files (as {@code rdma statistic} reads a kernel device's and
 * Aeron's stat tool its CnC file), without disturbing the processes. Files of processes that are gone are
 * removed and skipped.
 */
final class StatCommand {
    static final String USAGE = """
            usage: jrdma stat [--watch [SECONDS]] [--count N] [--pid PID] [-d DEV] [--qp] [-a] [--dir DIR]

            Prints the counters of every open jrdma device context of this user (any process), as
            'rdma statistic show' does for kernel devices: per device packets, bytes, ACKs, NAKs by
            reason, drops by reason (rcvd_icrc_err, rcvd_unknown_qp, rcvd_bad_key, rcvd_out_of_bounds,
            rcvd_no_access, rcvd_malformed, ...), retransmissions and RNR; with --qp per QP as well.
            Each context publishes them in a memory-mapped file that this command only reads; the
            files of processes that are gone are removed.
              --watch [S]   print again every S seconds (default 1) with the change per second, until
                            interrupted (or --count times)
              --count N     with --watch: stop after N prints
              --pid PID     only the contexts of process PID
              -d, --ib-dev DEV  only the contexts of device DEV
              --qp          the per-QP counters too
              -a, --all     counters that are 0 too
              --dir DIR     read the files in DIR (default: the JRDMA_STAT_DIR environment variable,
                            else /dev/shm/jrdma-USER, else the temporary directory's jrdma-USER)
            """;

    private StatCommand() {
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        double watch = 0;
        long count = Long.MAX_VALUE;
        long pid = -1;
        String dev = null;
        boolean qps = false;
        boolean all = false;
        Path dir = StatsFile.directory();
        try {
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                switch (a) {
                    case "-h", "--help" -> {
                        out.print(USAGE);
                        return 0;
                    }
                    case "--watch", "-w" -> {
                        watch = 1;
                        if (i + 1 < args.size() && !args.get(i + 1).startsWith("-")) {
                            watch = Double.parseDouble(args.get(++i));
                            if (!(watch > 0)) {
                                err.println("jrdma stat: --watch needs a positive number of seconds, not " + args.get(i));
                                return 2;
                            }
                        }
                    }
                    case "--count" -> count = Long.parseLong(value(args, ++i, a));
                    case "--pid" -> pid = Long.parseLong(value(args, ++i, a));
                    case "-d", "--ib-dev" -> dev = value(args, ++i, a);
                    case "--qp" -> qps = true;
                    case "-a", "--all" -> all = true;
                    case "--dir" -> dir = Path.of(value(args, ++i, a));
                    default -> {
                        err.println("jrdma stat: unexpected argument '" + a + "'");
                        err.print(USAGE);
                        return 2;
                    }
                }
            }
        } catch (NumberFormatException e) {
            err.println("jrdma stat: a number was expected (" + e.getMessage() + ")");
            return 2;
        } catch (IllegalArgumentException e) {
            err.println("jrdma stat: " + e.getMessage());
            return 2;
        }
        Map<String, Map<String, Long>> previous = new HashMap<>();
        long lastNanos = 0;
        for (long round = 0; round < count; round++) {
            List<StatsFile.Snapshot> snaps;
            try {
                snaps = StatsFile.readAll(dir, pid);
            } catch (IOException e) {
                err.println("jrdma stat: cannot read " + dir + ": " + e);
                return 1;
            }
            long now = System.nanoTime();
            double seconds = lastNanos == 0 ? 0 : (now - lastNanos) / 1e9;
            lastNanos = now;
            int shown = 0;
            for (StatsFile.Snapshot s : snaps) {
                if (dev != null && !dev.equals(s.device())) {
                    continue;
                }
                shown++;
                String key = s.file().getFileName().toString();
                out.println("link " + s.device() + "/1 pid " + s.pid() + " (" + s.transport() + ", opened "
                        + Instant.ofEpochMilli(s.openedMillis()) + ")");
                print(out, "  ", s.deviceCounters(), previous.get(key), seconds, all);
                previous.put(key, s.deviceCounters());
                if (qps) {
                    for (StatsFile.QpSnapshot q : s.qps()) {
                        String qkey = key + "/" + q.qpn();
                        out.println("  qp 0x" + Integer.toHexString(q.qpn()));
                        print(out, "    ", q.counters(), previous.get(qkey), seconds, all);
                        previous.put(qkey, q.counters());
                    }
                }
            }
            if (shown == 0) {
                out.println("no open jrdma device context" + (pid >= 0 ? " of process " + pid : "")
                        + (dev != null ? " on " + dev : "") + " (counters files in " + dir + ")");
            }
            if (watch == 0) {
                return 0;
            }
            if (round + 1 < count) {
                out.println();
                try {
                    Thread.sleep((long) (watch * 1000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return 0;
                }
            }
        }
        return 0;
    }

    private static void print(PrintStream out, String indent, Map<String, Long> now, Map<String, Long> before,
                              double seconds, boolean all) {
        StringBuilder line = new StringBuilder();
        for (Map.Entry<String, Long> e : now.entrySet()) {
            long v = e.getValue();
            if (v == 0 && !all) {
                continue;
            }
            String cell = e.getKey() + " " + v;
            if (before != null && seconds > 0) {
                long d = v - before.getOrDefault(e.getKey(), 0L);
                cell += " (" + (d >= 0 ? "+" : "") + Math.round(d / seconds) + "/s)";
            }
            if (line.length() > 0 && line.length() + cell.length() > 100) {
                out.println(indent + line);
                line.setLength(0);
            }
            line.append(line.length() == 0 ? "" : "  ").append(cell);
        }
        if (line.length() > 0) {
            out.println(indent + line);
        } else {
            out.println(indent + "(all counters 0)");
        }
    }

    private static String value(List<String> args, int i, String option) {
        if (i >= args.size()) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args.get(i);
    }
}

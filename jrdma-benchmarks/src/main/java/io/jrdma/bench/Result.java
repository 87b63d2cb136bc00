package io.jrdma.bench;

import java.util.Arrays;
import java.util.Locale;

/** Latency samples and the one machine-readable line every baseline prints. */
final class Result {
    private Result() {
    }

    /**
     * Prints {@code RESULT <name> size=<size> iters=<n> median_us=.. min_us=.. p99_us=.. avg_us=..}
     * for round-trip samples in nanoseconds, each divided by {@code divisor} (2 for one-way, as perftest).
     */
    static void latency(String name, int size, long[] rttNanos, int n, double divisor) {
        long[] s = Arrays.copyOf(rttNanos, n);
        Arrays.sort(s);
        double sum = 0;
        for (long v : s) {
            sum += v;
        }
        double k = divisor * 1000.0;
        System.out.println(String.format(Locale.ROOT,
                "RESULT %s size=%d iters=%d median_us=%.3f min_us=%.3f p99_us=%.3f p999_us=%.3f avg_us=%.3f",
                name, size, n, s[n / 2] / k, s[0] / k, s[(int) Math.min(n - 1, (long) n * 99 / 100)] / k,
                s[(int) Math.min(n - 1, (long) n * 999 / 1000)] / k, sum / n / k));
        System.out.flush();
    }

    /** Prints {@code RESULT <name> size=<size> gbps=<10^9 B/s> mpps=<10^6 msg/s> ...extra}. */
    static void rate(String name, int size, long bytes, long messages, long nanos, String extra) {
        double sec = nanos / 1e9;
        System.out.println(String.format(Locale.ROOT, "RESULT %s size=%d gbps=%.4f mpps=%.4f bytes=%d msgs=%d secs=%.3f%s",
                name, size, bytes / sec / 1e9, messages / sec / 1e6, bytes, messages, sec,
                extra.isEmpty() ? "" : " " + extra));
        System.out.flush();
    }

    /** Fails the program with a message on stderr (exit code 1). */
    static void fail(String msg) {
        System.err.println("error: " + msg);
        System.err.flush();
        System.exit(1);
    }
}

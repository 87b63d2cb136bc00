package io.jrdma.tools.perf;

import java.util.Arrays;

/** Latency statistics of a run, from nanosecond samples, in microseconds as perftest reports them. */
record LatencyStats(int samples, double min, double max, double typical, double avg, double stdev, double p99,
                    double p999) {

    /**
     * @param samples nanoseconds per operation, {@code n} of them (sorted in place)
     * @param divisor 2 for ping-pong round trips (one-way latency), 1 otherwise
     */
    static LatencyStats of(long[] samples, int n, int divisor) {
        if (n <= 0) {
            return new LatencyStats(0, 0, 0, 0, 0, 0, 0, 0);
        }
        Arrays.sort(samples, 0, n);
        double scale = 1000.0 * divisor;
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += samples[i] / scale;
        }
        double avg = sum / n;
        double var = 0;
        for (int i = 0; i < n; i++) {
            double d = samples[i] / scale - avg;
            var += d * d;
        }
        double median = (n % 2 == 1) ? samples[n / 2] / scale : (samples[n / 2 - 1] + samples[n / 2]) / 2.0 / scale;
        return new LatencyStats(n, samples[0] / scale, samples[n - 1] / scale, median, avg, Math.sqrt(var / n),
                percentile(samples, n, 0.99) / scale, percentile(samples, n, 0.999) / scale);
    }

    private static long percentile(long[] sorted, int n, double p) {
        int idx = (int) Math.ceil(n * p) - 1;
        return sorted[Math.clamp(idx, 0, n - 1)];
    }
}

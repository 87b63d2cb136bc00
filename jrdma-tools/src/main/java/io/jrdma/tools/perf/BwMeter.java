package io.jrdma.tools.perf;

/**
 * Bandwidth bookkeeping of one run: (time, completed count) samples taken at every signaled
 * completion, in preallocated arrays. Average = bytes / (last completion - first post);
 * peak = the best rate over any window of at least a tenth of the run.
 * MB = 2^20 bytes, as perftest counts.
 */
final class BwMeter {
    static final double MB = 1024.0 * 1024.0;
    private final long[] time;
    private final long[] count;
    private int n;

    BwMeter(int capacity) {
        time = new long[Math.max(2, capacity)];
        count = new long[time.length];
    }

    void reset() {
        n = 0;
    }

    /** Records that {@code completed} messages were done at {@code nanos}; beyond the capacity samples are dropped. */
    void add(long nanos, long completed) {
        if (n < time.length) {
            time[n] = nanos;
            count[n] = completed;
            n++;
        } else {
            time[n - 1] = nanos; // keep the end of the run exact
            count[n - 1] = completed;
        }
    }

    int samples() {
        return n;
    }

    long elapsed() {
        return n < 2 ? 0 : time[n - 1] - time[0];
    }

    long completed() {
        return n == 0 ? 0 : count[n - 1];
    }

    /** @return bytes/s over the whole run in MB/s */
    double averageMBps(int size) {
        long t = elapsed();
        return t <= 0 ? 0 : completed() * (double) size / MB / (t / 1e9);
    }

    /** @return the highest rate over any window of at least a tenth of the run, in MB/s (at least the average) */
    double peakMBps(int size) {
        double avg = averageMBps(size);
        long total = elapsed();
        if (total <= 0) {
            return avg;
        }
        long window = Math.max(1, total / 10);
        double best = 0;
        int k = 0;
        for (int j = 1; j < n; j++) {
            while (k + 1 < j && time[j] - time[k + 1] >= window) {
                k++;
            }
            long dt = time[j] - time[k];
            if (dt >= window) {
                best = Math.max(best, (count[j] - count[k]) * (double) size / MB / (dt / 1e9));
            }
        }
        return Math.max(best, avg);
    }

    /** @return millions of messages per second */
    double msgRateMpps() {
        long t = elapsed();
        return t <= 0 ? 0 : completed() / (t / 1e9) / 1e6;
    }
}

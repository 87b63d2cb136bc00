package io.jrdma.tools.perf;

import java.util.List;

/**
 * A parsed {@code jrdma perf} command line, every default resolved.
 *
 * @param test        the benchmark
 * @param sizes       the message sizes to run, in order (one unless {@code -a})
 * @param iterations  iterations per size ({@code -n}); ignored in duration mode
 * @param durationSec {@code -D}: seconds per size, 0 = iteration mode
 * @param txDepth     {@code -t}: outstanding requests (bw) or 1 (lat)
 * @param mtu         {@code -m} in bytes, or 0 for the device's active MTU
 * @param port        {@code -p}: the connection manager's TCP port (0 = any free one)
 * @param device      {@code -d}, or null to choose
 * @param gidIndex    {@code -x}, or -1
 * @param host        the server to connect to, or null to be the server
 * @param loopback    {@code --loopback}: server and client in this process over 127.0.0.1
 * @param verify      {@code --verify}: check the data and fail on a mismatch
 * @param timeoutSec  {@code --timeout}: seconds without progress before a run fails
 * @param warmup      run an unmeasured warm-up before the first size (off with {@code --no-warmup})
 */
public record PerfOptions(PerfTest test, List<Integer> sizes, long iterations, int durationSec, int txDepth, int mtu,
                          int port, String device, int gidIndex, String host, boolean loopback, boolean verify,
                          int timeoutSec, boolean warmup) {
    public PerfOptions {
        sizes = List.copyOf(sizes);
        if (sizes.isEmpty()) {
            throw new IllegalArgumentException("no message size");
        }
    }

    /** @return the largest message size, which the buffers are sized for */
    public int maxSize() {
        int m = 0;
        for (int s : sizes) {
            m = Math.max(m, s);
        }
        return m;
    }

    /** @return these options with other sizes (tests use it to run a few sizes of {@code -a}) */
    public PerfOptions withSizes(List<Integer> newSizes) {
        return new PerfOptions(test, newSizes, iterations, durationSec, txDepth, mtu, port, device, gidIndex, host,
                loopback, verify, timeoutSec, warmup);
    }

    /**
     * @return the iterations of the warm-up run (0 = none): 1000 of the first size, at most 256 MiB,
     *         so that the JIT has compiled the data path of both sides before anything is measured
     */
    public long warmupIterations() {
        if (!warmup) {
            return 0;
        }
        return Math.max(5, Math.min(test.isBw() ? 1000 : 10000, (256L << 20) / sizes.getFirst()));
    }
}

package io.jrdma.bench;

import java.util.Arrays;
import java.util.Locale;

/**
 * A latency run cut into consecutive blocks, each block's median printed in the order the samples were taken:
 * {@code BLOCKS <name> us=m1,m2,...}. One median per run hides a run that changed level part-way (this host moves
 * two processes' one-way time between levels some 60–85 ns apart, within a run as well as between runs, and a JIT
 * recompilation shows the same way); the blocks show where it changed. The ping-pong baselines and
 * {@link SendShape} print it with {@code blocks=N}.
 */
public final class Blocks {
    private Blocks() {
    }

    /**
     * Prints the medians of {@code blocks} equal consecutive blocks of the first {@code n} samples (nanoseconds,
     * each divided by {@code divisor}: 2 for one-way), in µs; samples past the last whole block are left out.
     * Prints nothing for {@code blocks <= 0}.
     *
     * @throws IllegalArgumentException when there are fewer samples than blocks
     */
    public static void print(String name, long[] rttNanos, int n, int blocks, double divisor) {
        if (blocks <= 0) {
            return;
        }
        if (n < blocks) {
            throw new IllegalArgumentException("blocks=" + blocks + " needs at least as many samples (got " + n + ")");
        }
        int per = n / blocks;
        StringBuilder line = new StringBuilder("BLOCKS ").append(name).append(" us=");
        long[] b = new long[per];
        for (int k = 0; k < blocks; k++) {
            System.arraycopy(rttNanos, k * per, b, 0, per);
            Arrays.sort(b);
            line.append(k == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.3f", b[per / 2] / (divisor * 1000.0)));
        }
        System.out.println(line);
        System.out.flush();
    }
}

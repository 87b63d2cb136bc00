package io.jrdma.engine.util;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.function.IntConsumer;

/**
 * Measures what a warmed-up loop allocates on the calling thread: batches of rounds run until one
 * allocates nothing or the time budget is spent. Batches are repeated because "after warm-up" is
 * the JIT's matter, not a count: on a loaded host C2 may still be compiling a path after tens of
 * thousands of rounds, and until it has, code it will optimise allocates (the FFM downcalls' errno
 * capture slices its segment, which only C2's escape analysis removes). A path that allocates in
 * steady state allocates in every batch and fails.
 */
public final class AllocationMeter {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private AllocationMeter() {
    }

    /**
     * @param bytes   the fewest bytes one batch allocated (0: the loop allocates nothing)
     * @param batches how many batches ran
     * @param where   the rounds of the last batch that allocated, and how much (empty when none did)
     */
    public record Result(long bytes, int batches, String where) {
        @Override
        public String toString() {
            return bytes + " B at least in each of " + batches + " batches; in the last:" + where;
        }
    }

    /** Runs batches of {@code rounds} calls of {@code round} (0..rounds-1) until one allocates nothing or {@code budget} is spent. */
    public static Result steadyState(int rounds, Duration budget, IntConsumer round) {
        long[] perRound = new long[rounds];
        long deadline = System.nanoTime() + budget.toNanos();
        long best = Long.MAX_VALUE;
        int batches = 0;
        do {
            long start = THREADS.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < rounds; i++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                round.accept(i);
                perRound[i] = THREADS.getCurrentThreadAllocatedBytes() - before;
            }
            best = Math.min(best, THREADS.getCurrentThreadAllocatedBytes() - start);
            batches++;
        } while (best != 0 && System.nanoTime() < deadline);
        StringBuilder where = new StringBuilder();
        int shown = 0;
        for (int i = 0; i < rounds; i++) {
            if (perRound[i] != 0 && shown++ < 12) {
                where.append(" round ").append(i).append(": ").append(perRound[i]).append(" B;");
            }
        }
        return new Result(best, batches, where.toString());
    }
}

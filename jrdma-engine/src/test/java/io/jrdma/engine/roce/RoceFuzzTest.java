package io.jrdma.engine.roce;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The bounded run of the RoCE fuzzer ({@link RoceFuzz}): 100,000 inputs (random, truncated, mutated golden
 * captures, hostile valid-ICRC headers at the live QP) in seconds; {@code -Djrdma.fuzz.inputs=N} and
 * {@code -Djrdma.fuzz.seed=S} change it (reliability/fuzz.sh runs 10^6 and more).
 */
@Timeout(value = 3, unit = TimeUnit.HOURS) // bounded inside; the scripts run 10^6 inputs
class RoceFuzzTest {
    @Test
    void noCrashNoHangNoByteOutsideTheRegionAndEveryInputCounted() throws Exception {
        long n = Long.getLong("jrdma.fuzz.inputs", 100_000);
        long seed = Long.getLong("jrdma.fuzz.seed", 16);
        long t0 = System.nanoTime();
        RoceFuzz.Result res = RoceFuzz.run(seed, n);
        System.out.println("roce fuzz: seed " + seed + ", " + res.inputs() + " inputs " + res.byKind() + " in "
                + (System.nanoTime() - t0) / 1_000_000 + " ms, reconnects " + res.reconnects() + ", receiver counters "
                + res.countersAtB());
        assertEquals(0, res.unaccounted(), res.firstUnaccounted());
        assertTrue(res.reconnects() > 0, "hostile inputs must have failed the QP at least once: " + res);
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The INVOKER claim on an engine whose transport has a thread fence (shm0's membarrier): biased to the thread that
 * claims it the slow way {@link Engine#BIAS_AFTER} times in a row, which then claims with a plain store and two loads,
 * and exclusive whoever holds it: two threads that claim as fast as they can, each bumping one plain counter under
 * the claim, lose no bump and never find the other inside (a count of holders, watched through the work one claim in
 * 256 does, longer than a fence takes), while the bias moves between them.
 */
class EngineClaimTest {
    private static Device shm0() {
        Device d = Rdma.devices().stream().filter(x -> x.name().equals("shm0")).findFirst().orElse(null);
        assumeTrue(d != null, "no shm0 on this host");
        return d;
    }

    @Test
    void theClaimIsBiasedToTheThreadThatTakesItMost() {
        try (DeviceContext ctx = shm0().open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {
            Engine e = ((Context) ctx).engine;
            assumeTrue(e.biasable(), "no membarrier here: every claim is a CAS");
            Thread me = Thread.currentThread();
            for (int i = 0; i < Engine.BIAS_AFTER + 1 && e.biasedTo() != me; i++) {
                assertTrue(e.tryDrive());
                e.endDrive();
            }
            assertSame(me, e.biasedTo(), "biased to this thread after " + Engine.BIAS_AFTER + " claims in a row");
            assertTrue(e.tryDrive(), "the biased claim");
            assertTrue(e.drivenByCaller());
            e.endDrive();
            assertTrue(!e.drivenByCaller());
        }
    }

    @Test
    void aBiasedClaimNeverOverlapsAnother() {
        try (DeviceContext ctx = shm0().open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {
            Engine e = ((Context) ctx).engine;
            assumeTrue(e.biasable(), "no membarrier here: every claim is a CAS");
            long[] counter = new long[1];
            long[] claims = new long[2];
            long[] biasedClaims = new long[2];
            java.util.concurrent.atomic.AtomicInteger overlaps = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger inside = new java.util.concurrent.atomic.AtomicInteger();
            CountDownLatch start = new CountDownLatch(1);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
            Thread[] ts = new Thread[2];
            for (int k = 0; k < 2; k++) {
                int id = k;
                ts[k] = new Thread(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException ex) {
                        return;
                    }
                    Thread me = Thread.currentThread();
                    while (System.nanoTime() < deadline) {
                        for (int i = 0; i < 256; i++) {
                            boolean biased = e.biasedTo() == me;
                            if (e.tryDrive()) {
                                // one holder at a time: the count of holders is 1 on entry, and stays 1 while this
                                // claim lasts (read in each turn of its work, one claim in 256)
                                if (inside.incrementAndGet() != 1) {
                                    overlaps.incrementAndGet();
                                }
                                long c = counter[0];
                                for (int w = (i & 255) == 0 ? 100_000 : 0; w > 0; w--) {
                                    if (inside.get() != 1) {
                                        overlaps.incrementAndGet();
                                    }
                                    Thread.onSpinWait();
                                }
                                counter[0] = c + 1;
                                claims[id]++;
                                if (biased) {
                                    biasedClaims[id]++;
                                }
                                inside.decrementAndGet();
                                e.endDrive();
                            }
                        }
                    }
                }, "claimer-" + k);
                ts[k].start();
            }
            start.countDown();
            for (Thread t : ts) {
                try {
                    t.join(10_000);
                } catch (InterruptedException ex) {
                    throw new AssertionError(ex);
                }
                assertTrue(!t.isAlive(), t.getName() + " ended");
            }
            // the joins order every write of the claimers before these reads
            assertEquals(0, overlaps.get(), "a claimer found the other inside");
            assertEquals(claims[0] + claims[1], counter[0], "bumps under the claim lost (claims " + claims[0] + " + "
                    + claims[1] + ", biased " + biasedClaims[0] + " + " + biasedClaims[1] + ")");
            assertTrue(claims[0] > 0 && claims[1] > 0, "both claimed: " + claims[0] + ", " + claims[1]);
            assertTrue(biasedClaims[0] + biasedClaims[1] > 0, "some claims were biased ones");
        }
    }
}

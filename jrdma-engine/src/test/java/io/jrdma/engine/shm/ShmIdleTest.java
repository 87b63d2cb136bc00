package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Idler;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.IdleStrategy;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WrOpcode;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An idle shm0 engine parks longer than 1 ms while nothing of it needs the clock (every input wakes its futex), up
 * to its next liveness check; with a request in flight it parks 1 ms at most, as every engine. Driven as the engine
 * thread's loop drives it: a duty cycle, then the idler with what it did.
 */
class ShmIdleTest {
    private static final long DEADLINE_NANOS = 10_000_000_000L;

    @Test
    void withNothingInFlightTheParksGrowPast1msUpToTheLivenessPeriod() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096)) {
            Idler idler = new Idler(IdleStrategy.BACKOFF, ((Context) p.a.ctx).engine);
            long t = 1_000_000_000L;
            assertEquals(Idler.SPIN, idler.idle(p.a.ctx.progress(), t));
            long most = 0;
            long deadline = System.nanoTime() + DEADLINE_NANOS;
            while (most <= Idler.MAX_PARK) {
                long park = idler.idle(p.a.ctx.progress(), t + 600_000); // past the spin and yield phases
                assertTrue(park > 0, "an idle engine 0.6 ms into a gap parks");
                assertTrue(park <= ShmTransport.LIVENESS_NANOS, "never past the liveness period: " + park);
                most = Math.max(most, park);
                assertTrue(System.nanoTime() < deadline, "no park longer than 1 ms within 10 s (the longest " + most + " ns)");
            }
        }
    }

    /**
     * An engine thread asleep on its futex for up to 20 ms is woken by {@code close()}, which then returns at once:
     * 9 contexts, each closed after 30 ms idle (its engine in its long park), at least 7 of them in under 5 ms.
     * Without the wake each close would wait out the rest of the park: under 5 ms about one time in four.
     */
    @Test
    void closeWakesAnEngineInItsLongPark() throws InterruptedException {
        int quick = 0;
        StringBuilder took = new StringBuilder();
        for (int i = 0; i < 9; i++) {
            DeviceContext ctx = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
            Thread.sleep(30);
            long t0 = System.nanoTime();
            ctx.close();
            long ns = System.nanoTime() - t0;
            took.append(ns / 1000).append(" µs; ");
            if (ns < 5_000_000L) {
                quick++;
            }
        }
        assertTrue(quick >= 7, "closes of an idle DEDICATED context: " + took);
    }

    @Test
    void withASendInFlightTheParksStopAt1ms() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096)) {
            // b posts no receive and runs no duty cycle: a's SEND waits for its result, its QP active
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.SEND).wrId(1).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.buf.address(), 8, p.a.mr.lkey());
            assertEquals(0, p.a.qp.postSend(wr));
            Idler idler = new Idler(IdleStrategy.BACKOFF, ((Context) p.a.ctx).engine);
            long t = 1_000_000_000L;
            idler.idle(p.a.ctx.progress(), t);
            long park = 0;
            for (int i = 0; i < 16; i++) { // 1 µs doubled 15 times would be 16 ms
                park = idler.idle(p.a.ctx.progress(), t + 600_000);
                assertTrue(park > 0 && park <= Idler.MAX_PARK, "a park of " + park + " ns with a SEND in flight");
            }
            assertEquals(Idler.MAX_PARK, park, "the parks still double up to 1 ms");
        }
    }
}

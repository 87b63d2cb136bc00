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

import java.util.concurrent.locks.LockSupport;

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
    /** a park with this much left is a long one: without a wake, whatever waits on the engine waits that long */
    private static final long DEEP_NANOS = 18_000_000L;
    /** the median wait of 5 tries stays under this with the wake, even on a host whose two cores are busy */
    private static final long QUICK_NANOS = 12_000_000L;

    /** @return the median of 5 waits, in ns */
    private static long median(long[] ns) {
        long[] c = ns.clone();
        java.util.Arrays.sort(c);
        return c[c.length / 2];
    }

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

    /** Waits (for at most 10 s) until the context's engine sleeps with at least {@code nanos} of its park left. */
    private static void awaitDeepSleep(DeviceContext ctx, long nanos) {
        ShmTransport t = (ShmTransport) ((Context) ctx).engine.transport;
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (t.sleepLeftNanos() < nanos) {
            assertTrue(System.nanoTime() < deadline, "the engine never slept with " + nanos + " ns of its park left");
            LockSupport.parkNanos(100_000);
        }
    }

    /** Polls {@code cq} every 20 µs (the cores left to the engines) until a completion, which must be a success. */
    private static void awaitSuccess(io.jrdma.verbs.CompletionQueue cq, io.jrdma.verbs.WorkCompletion wc, long deadline,
            String what) {
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "no " + what + " completion within 10 s");
            LockSupport.parkNanos(20_000);
        }
        assertEquals(io.jrdma.verbs.WcStatus.SUCCESS, wc.status(), wc.toString());
    }

    /**
     * An engine asleep on its futex with at least 18 ms of its park left is woken by {@code close()}, which then
     * returns at once: the median of 5 closes under 12 ms (without the wake each would wait out the park).
     */
    @Test
    void closeWakesAnEngineInItsLongPark() {
        long[] took = new long[5];
        for (int i = 0; i < took.length; i++) {
            DeviceContext ctx = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
            awaitDeepSleep(ctx, DEEP_NANOS);
            long t0 = System.nanoTime();
            ctx.close();
            took[i] = System.nanoTime() - t0;
        }
        assertTrue(median(took) < QUICK_NANOS, "closes of a context whose engine slept with 18 ms left (ns): "
                + java.util.Arrays.toString(took));
    }

    /**
     * Input wakes an engine in its long park: a's post (its doorbell) and the slot it writes into b's ring (the
     * peer's futex wake) each end a sleep at once. b sleeps with at least 18 ms of its park left when a posts; the
     * median of 5 tries from the post to b's receive completion (placed by b's engine) is under 12 ms. The waits
     * poll every 20 µs, leaving the cores to the engines.
     */
    @Test
    void aSendWakesAReceiverInItsLongPark() {
        try (ShmPair p = new ShmPair(ThreadingMode.DEDICATED, 4096)) {
            io.jrdma.verbs.RecvWorkRequest rwr = new io.jrdma.verbs.RecvWorkRequest();
            SendWorkRequest wr = new SendWorkRequest();
            io.jrdma.verbs.WorkCompletion wc = new io.jrdma.verbs.WorkCompletion();
            long[] took = new long[5];
            for (int i = 0; i < took.length; i++) {
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(i).sge(0, p.b.buf.address() + 64, 64, p.b.mr.lkey())));
                awaitDeepSleep(p.b.ctx, DEEP_NANOS);
                long t0 = System.nanoTime();
                assertEquals(0, p.a.qp.postSend(wr.reset().opcode(WrOpcode.SEND).wrId(i).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.buf.address(), 8, p.a.mr.lkey())));
                awaitSuccess(p.b.cq, wc, t0 + DEADLINE_NANOS, "receive");
                took[i] = System.nanoTime() - t0;
                awaitSuccess(p.a.cq, wc, t0 + DEADLINE_NANOS, "send"); // the SEND's own, before the next try
            }
            assertTrue(median(took) < QUICK_NANOS, "SENDs into a receiver whose engine slept with 18 ms left, to its "
                    + "completion (ns): " + java.util.Arrays.toString(took));
        }
    }

    /** The limit itself: 1 s with no peer (nothing to check), the liveness period at most with one. */
    @Test
    void anEngineWithNoPeerMaySleepASecondOneWithPeersTheLivenessPeriod() {
        try (DeviceContext alone = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {
            assertEquals(ShmTransport.NO_PEER_PARK_NANOS, ((Context) alone).engine.transport.maxParkNanos());
        }
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096)) {
            p.a.ctx.progress(); // a duty cycle: the liveness check's clock read
            long limit = ((Context) p.a.ctx).engine.transport.maxParkNanos();
            assertTrue(limit >= Idler.MAX_PARK && limit <= ShmTransport.LIVENESS_NANOS, "with a peer: " + limit);
        }
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

package io.jrdma.rdmacore;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link InUse}, the guard that keeps a QP's, CQ's or SRQ's close from freeing native memory a post or a poll on
 * another thread is using (found in review: each checked a volatile flag, then called the provider). No device: the
 * native object is a segment of a shared arena, which the "close" frees.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InUseTest {
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(20);

    /** A close waits, parked, for the call inside; a call after the close began is refused; the last out wakes it. */
    @Test
    void aCloseWaitsForTheCallInsideAndRefusesLaterOnes() throws Exception {
        InUse g = new InUse();
        CountDownLatch inside = new CountDownLatch(1), leave = new CountDownLatch(1);
        Thread caller = Thread.ofPlatform().start(() -> {
            assertTrue(g.enter());
            inside.countDown();
            try {
                leave.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                g.exit();
            }
        });
        assertTrue(inside.await(10, TimeUnit.SECONDS));
        AtomicBoolean closed = new AtomicBoolean();
        Thread closer = Thread.ofPlatform().start(() -> closed.set(g.close()));
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (!g.closing() || closer.getState() != Thread.State.WAITING) {
            assertTrue(System.nanoTime() < deadline, "the closer did not park behind the call inside");
            Thread.onSpinWait();
        }
        assertFalse(closed.get(), "close returned while a call was inside");
        assertFalse(g.enter(), "a call after the close began must be refused");
        assertEquals(1, g.inside(), "a refused call leaves nothing counted");
        leave.countDown();
        closer.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(closer.isAlive(), "the last call out must wake the closer");
        assertTrue(closed.get());
        caller.join();
        assertEquals(0, g.inside());
        assertFalse(g.close(), "a second close finds it closed");
    }

    /** A close whose destroy failed reopens: calls enter again and a later close works. */
    @Test
    void aReopenedGuardLetsCallsInAgain() {
        InUse g = new InUse();
        assertTrue(g.close());
        assertFalse(g.enter());
        g.reopen();
        assertFalse(g.closing());
        assertTrue(g.enter());
        g.exit();
        assertTrue(g.close());
    }

    /** An interrupt does not end a close's wait, and the interrupt status is kept for the caller. */
    @Test
    void anInterruptedCloseStillWaitsAndKeepsTheStatus() throws Exception {
        InUse g = new InUse();
        assertTrue(g.enter());
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        Thread closer = Thread.ofPlatform().start(() -> {
            g.close();
            interruptedAfter.set(Thread.currentThread().isInterrupted());
        });
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (closer.getState() != Thread.State.WAITING) {
            assertTrue(System.nanoTime() < deadline, "the closer did not park");
            Thread.onSpinWait();
        }
        closer.interrupt();
        while (closer.getState() != Thread.State.WAITING && closer.isAlive()) { // parked again after the interrupt
            assertTrue(System.nanoTime() < deadline, "the closer did not park again");
            Thread.onSpinWait();
        }
        assertTrue(closer.isAlive(), "an interrupt must not end the wait while a call is inside");
        g.exit();
        closer.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(closer.isAlive());
        assertTrue(interruptedAfter.get());
    }

    /**
     * Threads read a native segment inside the guard in a loop while another closes the guard and then frees the
     * segment (its arena), as a QP's close destroys the QP: no read inside the guard may find the memory freed. Many
     * rounds, each with the readers running when the close comes. Without the close's wait, a reader inside finds the
     * arena closed (IllegalStateException) within a few rounds.
     */
    @Test
    void aCloseRacingCallsFreesNothingACallUses() throws Exception {
        int readers = 2;
        for (int round = 0; round < 300; round++) {
            InUse g = new InUse();
            Arena arena = Arena.ofShared();
            MemorySegment object = arena.allocate(64, 8);
            object.set(JAVA_LONG, 0, 42);
            AtomicLong calls = new AtomicLong();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] t = new Thread[readers];
            for (int i = 0; i < readers; i++) {
                t[i] = Thread.ofPlatform().start(() -> {
                    try {
                        while (g.enter()) {
                            try {
                                long a = object.get(JAVA_LONG, 0);
                                for (int k = 0; k < 50; k++) {
                                    Thread.onSpinWait(); // the call's time in the provider
                                }
                                long b = object.get(JAVA_LONG, 0);
                                if (a != 42 || b != 42) {
                                    throw new AssertionError("read " + a + ", " + b);
                                }
                            } finally {
                                g.exit();
                            }
                            calls.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
            }
            long deadline = System.nanoTime() + DEADLINE_NANOS;
            while (calls.get() < 200 * readers) {
                assertTrue(System.nanoTime() < deadline, "the readers made no calls");
                Thread.onSpinWait();
            }
            assertTrue(g.close());
            arena.close(); // what the destroy verb does to the native object
            for (Thread r : t) {
                r.join(TimeUnit.SECONDS.toMillis(10));
                assertFalse(r.isAlive(), "a reader did not see the close");
            }
            if (failure.get() != null) {
                fail("round " + round + ": a call inside the guard found the object freed", failure.get());
            }
            assertNull(failure.get());
        }
    }
}

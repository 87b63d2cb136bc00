package io.jrdma.rdmacore;

import io.jrdma.verbs.RdmaException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link FdWait}, the wait in {@code poll(2)} that a completion channel's, a context's and an rdma_cm listener's close
 * end (found in review: a close waited out the wait's timeout, or freed what the wait used, and an interrupt did not
 * end it). No device: the descriptor waited on is an eventfd that nothing else writes. Each wait here would last a
 * minute if nothing ended it; the checks allow ten seconds.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FdWaitTest {
    private static final long MINUTE = TimeUnit.MINUTES.toNanos(1);
    private final Libc libc = Libc.get();
    private int fd = -1;

    @BeforeEach
    void openQuietDescriptor() {
        try (Arena a = Arena.ofConfined()) {
            fd = libc.eventfd(IbvVerbs.callState(a), 0, Libc.EFD_NONBLOCK | Libc.EFD_CLOEXEC);
        }
        assertTrue(fd >= 0);
    }

    @AfterEach
    void closeIt() {
        try (Arena a = Arena.ofConfined()) {
            libc.close(IbvVerbs.callState(a), fd);
        }
    }

    private void makeReadable() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment one = a.allocate(JAVA_LONG);
            one.set(JAVA_LONG, 0, 1L);
            assertEquals(8, libc.write(IbvVerbs.callState(a), fd, one, 8));
        }
    }

    /** A waiting thread, its result (an Integer or the Throwable it threw). */
    private Thread waiter(FdWait w, AtomicReference<Object> result) {
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                result.set(w.await(fd, System.nanoTime() + MINUTE));
            } catch (Throwable e) {
                result.set(e);
            }
        });
        awaitBlocked(w);
        return t;
    }

    /** Waits until the waiter has made the eventfd, i.e. is in (or right before) its poll. */
    private static void awaitBlocked(FdWait w) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (w.eventFd() < 0) {
            assertTrue(System.nanoTime() < deadline, "the waiter did not start waiting");
            Thread.onSpinWait();
        }
    }

    private static void joined(Thread t) throws InterruptedException {
        t.join(TimeUnit.SECONDS.toMillis(10));
        assertFalse(t.isAlive(), "the wait did not end within 10 s (it would have lasted a minute)");
    }

    /** A close's wake ends a wait in progress at once, and every later wait. */
    @Test
    void aWakeEndsTheWaitInProgress() throws Exception {
        FdWait w = new FdWait("a test descriptor");
        AtomicReference<Object> result = new AtomicReference<>();
        Thread t = waiter(w, result);
        w.wake();
        joined(t);
        assertEquals(FdWait.WOKEN, result.get());
        assertEquals(FdWait.WOKEN, w.await(fd, System.nanoTime() + MINUTE), "a wait after the wake ends at once");
        w.close();
        assertEquals(FdWait.WOKEN, w.await(fd, System.nanoTime() + MINUTE), "and after the close");
    }

    /** An interrupt ends a wait in progress within a slice, with EINTR, the interrupt status set again. */
    @Test
    void anInterruptEndsTheWaitWithEintr() throws Exception {
        FdWait w = new FdWait("a test descriptor");
        AtomicReference<Object> result = new AtomicReference<>();
        AtomicReference<Boolean> interrupted = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                result.set(w.await(fd, System.nanoTime() + MINUTE));
            } catch (Throwable e) {
                result.set(e);
            }
            interrupted.set(Thread.currentThread().isInterrupted());
        });
        awaitBlocked(w);
        t.interrupt();
        joined(t);
        RdmaException e = assertInstanceOf(RdmaException.class, result.get());
        assertEquals(RdmaException.Errno.EINTR, e.errno());
        assertTrue(interrupted.get(), "the interrupt status is set again");
        w.close();
    }

    /** A signal ends the wait with SIGNALED and is taken: the next wait blocks (here: times out). */
    @Test
    void aSignalEndsTheWaitOnce() throws Exception {
        FdWait w = new FdWait("a test descriptor");
        AtomicReference<Object> result = new AtomicReference<>();
        Thread t = waiter(w, result);
        w.signal();
        joined(t);
        assertEquals(FdWait.SIGNALED, result.get());
        assertEquals(FdWait.TIMEOUT, w.await(fd, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50)));
        w.close();
    }

    /** The descriptor readable is READY; nothing before the deadline is TIMEOUT; a rearm takes a wake back. */
    @Test
    void readyTimeoutAndRearm() {
        FdWait w = new FdWait("a test descriptor");
        assertEquals(FdWait.TIMEOUT, w.await(fd, System.nanoTime()), "no wait: no eventfd made");
        assertEquals(-1, w.eventFd());
        assertEquals(FdWait.TIMEOUT, w.await(fd, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(150)));
        w.wake();
        w.rearm();
        assertEquals(FdWait.TIMEOUT, w.await(fd, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50)),
                "a rearmed wait blocks again");
        makeReadable();
        assertEquals(FdWait.READY, w.await(fd, System.nanoTime() + MINUTE));
        w.close();
        assertEquals(-1, w.eventFd(), "the close closes the eventfd");
    }
}

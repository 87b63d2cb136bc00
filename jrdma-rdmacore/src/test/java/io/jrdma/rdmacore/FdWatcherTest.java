package io.jrdma.rdmacore;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rdma_cm connection manager's watcher thread ({@link FdWatcher}) on any Linux host: eventfds stand in for the
 * rdma_cm event channels (both are descriptors that poll(2) reports readable). A readable source is called on the
 * watcher's thread and nothing else happens while nothing is readable (no spinning); a source that answers false,
 * throws or whose descriptor is closed is dropped; closing ends the thread and closes its eventfd, and a hundred
 * watchers made and closed leave no thread and no descriptor behind.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FdWatcherTest {
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);
    private final Libc libc = Libc.get();
    private final Arena arena = Arena.ofShared();
    private final MemorySegment state = IbvVerbs.callState(arena);
    private final MemorySegment word = arena.allocate(JAVA_LONG);
    private final List<Integer> fds = new ArrayList<>();
    private final List<FdWatcher> watchers = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        watchers.forEach(FdWatcher::close);
        for (int fd : fds) {
            libc.close(state, fd);
        }
        arena.close();
    }

    private FdWatcher watcher() {
        FdWatcher w = new FdWatcher("jrdma-test-watcher");
        watchers.add(w);
        return w;
    }

    /** A non-blocking eventfd, closed after the test unless the test closes it. */
    private int eventfd() {
        int fd = libc.eventfd(state, 0, Libc.EFD_NONBLOCK | Libc.EFD_CLOEXEC);
        assertTrue(fd >= 0, "eventfd: errno " + IbvVerbs.errno(state));
        fds.add(fd);
        return fd;
    }

    private void signal(int fd) {
        word.set(JAVA_LONG, 0, 1L);
        assertEquals(8, libc.write(state, fd, word, 8), "write to the eventfd");
    }

    /** {@return true when something was there to read} */
    private boolean consume(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(JAVA_LONG);
            return libc.read(IbvVerbs.callState(a), fd, buf, 8) == 8;
        }
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "not within 10 s: " + what);
            Thread.onSpinWait();
        }
    }

    /** A source over {@code fd} that reads it and counts its calls; {@code keep} answers whether to stay. */
    private static final class Counting implements FdWatcher.Source {
        final int fd;
        final FdWatcherTest test;
        final AtomicInteger calls = new AtomicInteger();
        final AtomicReference<Thread> caller = new AtomicReference<>();
        volatile boolean keep = true;

        Counting(FdWatcherTest test, int fd) {
            this.test = test;
            this.fd = fd;
        }

        @Override
        public int fd() {
            return fd;
        }

        @Override
        public boolean readable() {
            caller.set(Thread.currentThread());
            test.consume(fd);
            calls.incrementAndGet();
            return keep;
        }
    }

    @Test
    void aReadableDescriptorIsHandledOnTheWatchersThreadAndNothingTurnsWhileNoneIs() {
        FdWatcher w = watcher();
        Counting a = new Counting(this, eventfd());
        Counting b = new Counting(this, eventfd());
        w.add(a);
        w.add(b);
        await(() -> w.turns() >= 1, "the watcher's first turn");
        signal(a.fd);
        await(() -> a.calls.get() == 1, "a handled");
        assertSame(w.thread(), a.caller.get(), "called on the watcher's thread");
        assertEquals(0, b.calls.get(), "b was not readable");
        signal(b.fd);
        signal(a.fd);
        await(() -> a.calls.get() == 2 && b.calls.get() == 1, "both handled");
        // idle: the thread sleeps in poll(2) with no timeout; a spinning loop would count turns here
        long turns = w.turns();
        long cpu0 = threadCpu(w.thread());
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300));
        assertEquals(turns, w.turns(), "poll(2) returned while no descriptor was readable");
        long cpuMs = (threadCpu(w.thread()) - cpu0) / 1_000_000;
        assertTrue(cpuMs < 50, "the idle watcher used " + cpuMs + " ms of CPU in 300 ms");
        assertEquals(2, a.calls.get());
        assertEquals(1, b.calls.get());
    }

    private static long threadCpu(Thread t) {
        return java.lang.management.ManagementFactory.getThreadMXBean().getThreadCpuTime(t.threadId());
    }

    @Test
    void aSourceThatAnswersFalseOrThrowsOrWhoseDescriptorClosedIsDroppedWithoutSpinning() {
        FdWatcher w = watcher();
        Counting done = new Counting(this, eventfd());
        done.keep = false;
        int throwingFd = eventfd();
        AtomicInteger thrown = new AtomicInteger();
        FdWatcher.Source throwing = new FdWatcher.Source() {
            @Override
            public int fd() {
                return throwingFd;
            }

            @Override
            public boolean readable() {
                thrown.incrementAndGet();
                throw new IllegalStateException("a handler that fails (expected in this test)");
            }
        };
        int closedFd = libc.eventfd(state, 0, Libc.EFD_NONBLOCK | Libc.EFD_CLOEXEC);
        Counting closed = new Counting(this, closedFd);
        Counting stays = new Counting(this, eventfd());
        w.add(done);
        w.add(throwing);
        w.add(stays);
        signal(done.fd);
        signal(throwingFd); // never read: it stays readable, which must not make the loop spin
        await(() -> done.calls.get() == 1 && thrown.get() == 1 && w.watched() == 1, "both dropped");
        w.add(closed);
        await(() -> w.watched() == 2, "added");
        assertEquals(0, libc.close(state, closedFd), "close the descriptor under the watcher");
        signal(stays.fd); // a turn: poll(2) reports the closed descriptor POLLNVAL
        await(() -> stays.calls.get() == 1 && w.watched() == 1, "the closed descriptor dropped");
        long turns = w.turns();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300));
        assertEquals(turns, w.turns(), "the watcher turned while only dropped descriptors were readable");
        assertEquals(1, done.calls.get());
        assertEquals(1, thrown.get());
        assertEquals(0, closed.calls.get());
        signal(stays.fd);
        await(() -> stays.calls.get() == 2, "the remaining source still served");
        w.remove(stays);
        await(() -> w.watched() == 0, "removed");
    }

    @Test
    void closingEndsTheThreadAndClosesItsEventfdAndAHundredWatchersLeaveNothingBehind() throws IOException {
        long eventfds0 = eventfds();
        long threads0 = watcherThreads();
        for (int i = 0; i < 100; i++) {
            FdWatcher w = new FdWatcher("jrdma-test-watcher");
            Counting c = new Counting(this, eventfd());
            w.add(c);
            signal(c.fd);
            await(() -> c.calls.get() == 1, "handled");
            w.close();
            assertFalse(w.thread().isAlive(), "the thread ended at close");
            w.close(); // idempotent
            libc.close(state, c.fd);
            fds.remove(Integer.valueOf(c.fd));
        }
        assertEquals(eventfds0, eventfds(), "eventfds open before and after 100 watchers");
        assertEquals(threads0, watcherThreads(), "watcher threads alive before and after");
        FdWatcher w = watcher();
        w.close();
        assertTrue(assertThrowsRdma(() -> w.add(new Counting(this, eventfd()))).contains("closed"));
    }

    @Test
    void aWatcherClosedFromItsOwnHandlerEnds() {
        FdWatcher w = watcher();
        CountDownLatch closedIt = new CountDownLatch(1);
        int fd = eventfd();
        w.add(new FdWatcher.Source() {
            @Override
            public int fd() {
                return fd;
            }

            @Override
            public boolean readable() {
                consume(fd);
                w.close();
                closedIt.countDown();
                return true;
            }
        });
        signal(fd);
        await(() -> closedIt.getCount() == 0 && !w.thread().isAlive(), "the thread ended after its handler closed it");
    }

    private static String assertThrowsRdma(Runnable r) {
        try {
            r.run();
        } catch (io.jrdma.verbs.RdmaException e) {
            return e.getMessage();
        }
        throw new AssertionError("no RdmaException");
    }

    /** {@return the eventfds this process has open (/proc/self/fd links to anon_inode:[eventfd])} */
    static long eventfds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.filter(p -> {
                try {
                    return Files.readSymbolicLink(p).toString().contains("eventfd");
                } catch (IOException e) {
                    return false; // closed meanwhile (the listing's own descriptor)
                }
            }).count();
        }
    }

    private static long watcherThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("jrdma-test-watcher"))
                .count();
    }
}

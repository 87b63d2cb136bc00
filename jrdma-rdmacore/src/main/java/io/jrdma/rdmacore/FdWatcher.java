package io.jrdma.rdmacore;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * One thread that sleeps in {@code poll(2)} on a set of descriptors and calls each {@link Source} whose descriptor
 * became readable: the rdma_cm connection manager's watcher of its established connections' event channels
 * ({@link RdmaCoreCm}), so that a peer's disconnect flushes the QP of an application that only polls its CQ.
 *
 * <p>Besides the sources' descriptors the thread polls an {@code eventfd(2)} of its own: {@link #add},
 * {@link #remove} and {@link #close} write to it, and the thread then reads it and rebuilds its descriptor array
 * from the set. The timeout of {@code poll} is infinite: the thread runs only when a descriptor is readable or it
 * is woken, and nothing spins. A source is dropped when its {@code readable()} answers false or throws, or when
 * its descriptor is not open ({@code POLLNVAL}), so a source that cannot be read does not make the loop spin.
 * {@link #close} ends the thread and closes the eventfd: a closed watcher holds no thread and no descriptor.
 *
 * <p>A source's descriptor must stay open while it is in the set; a source closes its descriptor only from
 * within its own {@code readable()} (on this thread, which then drops it before it polls again) or after the
 * watcher is closed.
 */
final class FdWatcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(FdWatcher.class.getName());

    /** A descriptor to watch and what to do when it is readable. */
    interface Source {
        /** {@return the descriptor} */
        int fd();

        /**
         * Called on the watcher's thread when {@link #fd()} is readable (or in error): must read what is there, so
         * that the descriptor is not readable again for the same reason.
         *
         * @return true to go on watching, false to be dropped
         */
        boolean readable();
    }

    private final Libc libc;
    private final String name;
    private final Set<Source> sources = ConcurrentHashMap.newKeySet();
    private final Thread thread;
    private final AtomicLong turns = new AtomicLong();
    private final Object fdLock = new Object();
    private final int wakeFd;
    private boolean wakeFdClosed; // under fdLock
    private volatile boolean stopping;

    /**
     * Creates the eventfd and starts the thread (a daemon thread named {@code name}).
     *
     * @throws RdmaException when the eventfd cannot be made (EMFILE: too many open files)
     */
    FdWatcher(String name) {
        this.libc = Libc.get();
        this.name = name;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = IbvVerbs.callState(a);
            int fd = libc.eventfd(s, 0, Libc.EFD_NONBLOCK | Libc.EFD_CLOEXEC);
            if (fd < 0) {
                int e = IbvVerbs.errno(s);
                throw new RdmaException(Errno.of(e), name + ": eventfd(2) failed (errno " + e + ")"
                        + (e == 24 ? ": too many open files (ulimit -n)" : ""));
            }
            wakeFd = fd;
        }
        thread = Thread.ofPlatform().daemon().name(name).unstarted(this::run);
        thread.start();
    }

    /** Watches {@code s} from the thread's next turn on. */
    void add(Source s) {
        if (stopping) {
            throw new RdmaException(Errno.EINVAL, name + " is closed: nothing more can be watched");
        }
        sources.add(s);
        wake();
    }

    /** Stops watching {@code s} (at the thread's next turn; it may still be called once if it is readable now). */
    void remove(Source s) {
        if (sources.remove(s)) {
            wake();
        }
    }

    /** {@return how many sources are watched} */
    int watched() {
        return sources.size();
    }

    /** {@return how many times {@code poll(2)} returned (each wake-up and each readable turn): for tests} */
    long turns() {
        return turns.get();
    }

    /** {@return the eventfd that wakes the thread: for tests} */
    int wakeFd() {
        return wakeFd;
    }

    /** {@return the watcher's thread: for tests} */
    Thread thread() {
        return thread;
    }

    private void wake() {
        synchronized (fdLock) {
            if (wakeFdClosed) {
                return;
            }
            try (Arena a = Arena.ofConfined()) {
                MemorySegment one = a.allocate(JAVA_LONG);
                one.set(JAVA_LONG, 0, 1L);
                MemorySegment s = IbvVerbs.callState(a);
                if (libc.write(s, wakeFd, one, 8) != 8 && IbvVerbs.errno(s) != Libc.EAGAIN) { // EAGAIN: already set
                    LOG.log(System.Logger.Level.WARNING, name + ": writing its eventfd failed (errno "
                            + IbvVerbs.errno(s) + ")");
                }
            }
        }
    }

    private void run() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = IbvVerbs.callState(arena);
            MemorySegment counter = arena.allocate(JAVA_LONG);
            int capacity = 16;
            MemorySegment fds = arena.allocate(Structs.POLLFD, capacity);
            while (!stopping) {
                Source[] current = sources.toArray(new Source[0]); // a turn allocates: not a data path
                int n = current.length;
                if (n + 1 > capacity) {
                    capacity = Math.max(capacity * 2, n + 1);
                    fds = arena.allocate(Structs.POLLFD, capacity);
                }
                set(fds, 0, wakeFd);
                for (int i = 0; i < n; i++) {
                    set(fds, i + 1, current[i].fd());
                }
                int ready = libc.poll(state, fds, n + 1, -1);
                turns.incrementAndGet();
                if (ready < 0) {
                    int e = IbvVerbs.errno(state);
                    if (e == Libc.EINTR) {
                        continue;
                    }
                    LOG.log(System.Logger.Level.ERROR, name + ": poll(2) failed (errno " + e + "); the watcher stops");
                    return;
                }
                if ((revents(fds, 0) & Libc.POLLIN) != 0) {
                    libc.read(state, wakeFd, counter, 8); // non-blocking: clears the count
                }
                for (int i = 0; i < n && !stopping; i++) {
                    short r = revents(fds, i + 1);
                    if (r == 0) {
                        continue;
                    }
                    Source s = current[i];
                    if ((r & Libc.POLLNVAL) != 0) {
                        LOG.log(System.Logger.Level.WARNING, name + ": descriptor " + fds.get(JAVA_INT, (i + 1) * 8L)
                                + " is not open: dropped");
                        sources.remove(s);
                        continue;
                    }
                    if (!sources.contains(s)) {
                        continue; // removed meanwhile
                    }
                    boolean keep;
                    try {
                        keep = s.readable();
                    } catch (RuntimeException | Error e) {
                        LOG.log(System.Logger.Level.WARNING, name + ": a watched descriptor's handler failed: "
                                + e + "; it is no longer watched", e);
                        keep = false;
                    }
                    if (!keep) {
                        sources.remove(s);
                    }
                }
            }
        } finally {
            synchronized (fdLock) {
                wakeFdClosed = true;
                try (Arena a = Arena.ofConfined()) {
                    libc.close(IbvVerbs.callState(a), wakeFd);
                }
            }
        }
    }

    private static void set(MemorySegment fds, int i, int fd) {
        long at = i * 8L;
        fds.set(JAVA_INT, at, fd);
        fds.set(JAVA_SHORT, at + 4, Libc.POLLIN);
        fds.set(JAVA_SHORT, at + 6, (short) 0);
    }

    private static short revents(MemorySegment fds, int i) {
        return fds.get(JAVA_SHORT, i * 8L + 6);
    }

    /**
     * Ends the thread (waking it) and, once it has ended, its eventfd is closed; the sources are forgotten. Waits
     * for the thread at most 10 s (it ends at once unless a source's {@code readable()} is blocked). Idempotent.
     */
    @Override
    public void close() {
        stopping = true;
        sources.clear();
        wake();
        if (Thread.currentThread() == thread) {
            return; // from a source's handler: the loop ends after it
        }
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.log(System.Logger.Level.WARNING, name + ": the watcher thread did not end within 10 s (a handler is"
                    + " blocked); it ends when the handler returns");
        }
    }
}

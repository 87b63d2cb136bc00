package io.jrdma.rdmacore;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A blocking wait in {@code poll(2)} for one descriptor (a completion channel's, a context's {@code async_fd}, an
 * rdma_cm event channel's) that another thread can end: the close of the object waited on calls {@link #wake}, which
 * writes an {@code eventfd(2)} polled beside the descriptor, and the waiter returns {@link #WOKEN} at once. The closer
 * then waits for the waiter to leave (the owner's lock) before it frees what the wait used, and then {@link #close}s
 * this. Before, such a close waited out the wait's whole timeout, or freed the native object under it (found in
 * review).
 *
 * <p>The wait polls in slices of at most {@value #SLICE_MS} ms, between which it checks the thread's interrupt
 * status: an interrupt ends it within a slice, with EINTR (and the status set again), where a thread in a native
 * {@code poll(2)} does not see Java's interrupts at all.
 *
 * <p>{@link #signal} wakes a waiter without closing: it returns {@link #SIGNALED} and the owner looks at what it was
 * signaled for (a completion channel: events of CQs this provider completes itself). The eventfd is made on the first
 * wait that blocks (or the first signal), so objects nobody waits on cost no descriptor. One thread waits at a time
 * (the owner's lock); the segments the poll uses are this object's, laid out once: a wait allocates nothing.
 */
final class FdWait {
    /** What {@link #await} saw: the descriptor readable, the timeout passed, {@link #wake}, {@link #signal}. */
    static final int READY = 1, TIMEOUT = 0, WOKEN = -1, SIGNALED = 2;
    /** The longest single {@code poll(2)}: an interrupt ends a wait within this. */
    static final int SLICE_MS = 100;

    private final Libc libc = Libc.get();
    private final String what;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment state = IbvVerbs.callState(arena);
    private final MemorySegment fds = arena.allocate(Structs.POLLFD, 2);
    private final MemorySegment counter = arena.allocate(JAVA_LONG);
    private final Object lock = new Object();
    /** The eventfd, -1 before the first blocking wait; under {@link #lock}. */
    private int wakeFd = -1;
    private volatile boolean woken;
    private boolean closed; // under lock

    /** @param what what is waited on, for messages ("the completion channel of rxe0") */
    FdWait(String what) {
        this.what = what;
    }

    /**
     * Waits until {@code fd} is readable, {@code deadline} ({@link System#nanoTime()}) passes, or {@link #wake} or
     * {@link #signal} is called. The caller is the only waiter (it holds its owner's lock).
     *
     * @return {@link #READY}, {@link #TIMEOUT}, {@link #WOKEN} (also when woken before the call) or {@link #SIGNALED}
     * @throws RdmaException EINTR when the thread is interrupted (its interrupt status is set again); the errno of
     *                       {@code poll(2)} or {@code eventfd(2)} if they fail
     */
    int await(int fd, long deadline) {
        int wake = -1;
        if (deadline - System.nanoTime() > 0) {
            wake = wakeFd(); // a wait that blocks needs the eventfd (made now, once)
        }
        while (true) {
            if (woken) {
                return WOKEN;
            }
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new RdmaException(Errno.EINTR, "interrupted while waiting on " + what);
            }
            long left = deadline - System.nanoTime();
            int ms = left <= 0 ? 0 : (int) Math.min(SLICE_MS, (left + 999_999) / 1_000_000L);
            set(0, fd);
            int n = 1;
            if (wake >= 0) {
                set(1, wake);
                n = 2;
            }
            int ready = libc.poll(state, fds, n, ms);
            if (ready < 0) {
                int e = IbvVerbs.errno(state);
                if (e == Libc.EINTR) {
                    continue;
                }
                throw new RdmaException(Errno.of(e), "poll(2) on " + what + " failed (errno " + e + ")");
            }
            if (woken) {
                return WOKEN;
            }
            if (n == 2 && revents(1) != 0) {
                libc.read(state, wake, counter, 8); // non-blocking: clears the count a signal left
                return SIGNALED;
            }
            if (revents(0) != 0) {
                return READY; // readable, or in error (POLLERR/POLLHUP/POLLNVAL): the read that follows says which
            }
            if (left <= 0) {
                return TIMEOUT;
            }
        }
    }

    /** The eventfd, made on the first call. */
    private int wakeFd() {
        synchronized (lock) {
            if (closed) {
                return -1; // closed: woken is set, the wait returns WOKEN
            }
            if (wakeFd < 0) {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment s = IbvVerbs.callState(a);
                    int f = libc.eventfd(s, 0, Libc.EFD_NONBLOCK | Libc.EFD_CLOEXEC);
                    if (f < 0) {
                        int e = IbvVerbs.errno(s);
                        throw new RdmaException(Errno.of(e), "eventfd(2) for the wait on " + what + " failed (errno "
                                + e + ")" + (e == 24 ? ": too many open files (ulimit -n)" : ""));
                    }
                    wakeFd = f;
                }
            }
            return wakeFd;
        }
    }

    /**
     * Ends a wait in progress, and every later one, with {@link #WOKEN}: the owner is closing. The caller then waits
     * for the waiter to leave (its owner's lock) before it frees anything the wait uses.
     */
    void wake() {
        synchronized (lock) {
            woken = true;
            write();
        }
    }

    /** Takes back a {@link #wake} whose close then failed: waits block again. */
    void rearm() {
        synchronized (lock) {
            woken = false;
            if (wakeFd >= 0 && !closed) {
                try (Arena a = Arena.ofConfined()) {
                    libc.read(IbvVerbs.callState(a), wakeFd, a.allocate(JAVA_LONG), 8);
                }
            }
        }
    }

    /**
     * Closes the eventfd while nothing blocks here (the owner's lock held): an rdma_cm id whose connection is
     * established is read by a watcher without blocking, so it need not keep a descriptor for a wait. A later wait
     * that blocks makes it again; a {@link #wake} is kept.
     */
    void idle() {
        synchronized (lock) {
            if (wakeFd >= 0 && !closed) {
                try (Arena a = Arena.ofConfined()) {
                    libc.close(IbvVerbs.callState(a), wakeFd);
                }
                wakeFd = -1;
            }
        }
    }

    /** Ends a wait in progress with {@link #SIGNALED} (or the next wait, when none is in progress). */
    void signal() {
        wakeFd(); // so that a wait that begins now sees the count
        synchronized (lock) {
            write();
        }
    }

    /** {@return true once {@link #wake} was called (and not taken back)} */
    boolean woken() {
        return woken;
    }

    private void write() { // under lock
        if (wakeFd < 0 || closed) {
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment one = a.allocate(JAVA_LONG);
            one.set(JAVA_LONG, 0, 1L);
            libc.write(IbvVerbs.callState(a), wakeFd, one, 8); // EAGAIN: the count is already set, which is enough
        }
    }

    /** Closes the eventfd and frees the segments; call it once no thread waits (the owner's lock held). Idempotent. */
    void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            woken = true;
            if (wakeFd >= 0) {
                try (Arena a = Arena.ofConfined()) {
                    libc.close(IbvVerbs.callState(a), wakeFd);
                }
                wakeFd = -1;
            }
        }
        arena.close();
    }

    /** {@return the eventfd, -1 before the first blocking wait: for tests} */
    int eventFd() {
        synchronized (lock) {
            return wakeFd;
        }
    }

    private void set(int i, int fd) {
        long at = i * 8L;
        fds.set(JAVA_INT, at, fd);
        fds.set(JAVA_SHORT, at + 4, Libc.POLLIN);
        fds.set(JAVA_SHORT, at + 6, (short) 0);
    }

    private short revents(int i) {
        return fds.get(JAVA_SHORT, i * 8L + 6);
    }
}

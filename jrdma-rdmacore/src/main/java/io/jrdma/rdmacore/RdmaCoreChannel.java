package io.jrdma.rdmacore;

import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.RdmaException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A completion channel of an rdma-core device ({@code ibv_create_comp_channel}). {@link #await} blocks in
 * {@code poll(2)} on the channel's file descriptor (no spinning thread; {@link FdWait}), then reads the event with
 * {@code ibv_get_cq_event} and acknowledges it at once with {@code ibv_ack_cq_events}. One thread awaits
 * a channel at a time; {@link #close} ends an await in progress (it throws EINVAL) and an interrupt ends it within
 * {@value FdWait#SLICE_MS} ms (EINTR).
 */
final class RdmaCoreChannel implements CompletionChannel {
    /** How long {@link #close} waits for a woken await to leave before it gives up (EBUSY): it leaves at once. */
    static final long CLOSE_WAIT_SECONDS = 10;

    private final RdmaCoreContext context;
    final MemorySegment channel;
    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment state = IbvVerbs.callState(arena);
    private final MemorySegment cqOut = arena.allocate(ADDRESS);
    private final MemorySegment ctxOut = arena.allocate(ADDRESS);
    private final FdWait wait;
    /**
     * Held by the one thread in {@link #await}, and by {@link #close} once it has woken that thread: not the channel's
     * monitor, which a close takes first, so that an await in progress does not keep a close out (found in review).
     */
    private final ReentrantLock awaitLock = new ReentrantLock();
    private volatile boolean closed;
    /**
     * CQs fired by this provider ({@link #fire}: flushes it owes on iWARP, which the kernel does not know of), taken by
     * {@link #await} before it waits; guarded by itself, {@link #fired} its size for the await's check without a lock.
     */
    private final java.util.ArrayDeque<RdmaCoreCq> firedCqs = new java.util.ArrayDeque<>();
    private volatile int fired;

    RdmaCoreChannel(RdmaCoreContext context, MemorySegment channel) {
        this.context = context;
        this.channel = channel.reinterpret(Structs.IBV_COMP_CHANNEL.byteSize());
        this.fd = this.channel.get(JAVA_INT, Structs.CHANNEL_FD);
        this.wait = new FdWait("the completion channel of " + context.device().name());
    }

    /** {@return the channel's file descriptor, which poll(2) and epoll can wait on} */
    int fd() {
        return fd;
    }

    /**
     * Waits for the next CQ event: {@code poll(2)} on the channel's fd for at most {@code timeout}, then
     * {@code ibv_get_cq_event} and {@code ibv_ack_cq_events(cq, 1)}.
     *
     * @return the CQ that fired, or null when the timeout passed first
     * @throws RdmaException EINVAL when closed, or closed while waiting; EINTR when the thread is interrupted (its
     *                       interrupt status set again); the errno of poll or ibv_get_cq_event
     */
    @Override
    public CompletionQueue await(Duration timeout) {
        long deadline = System.nanoTime() + Math.min(Math.max(0, timeout.toNanos()), Long.MAX_VALUE / 4);
        try {
            awaitLock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RdmaException(RdmaException.Errno.EINTR, "interrupted while waiting to await the completion"
                    + " channel (another thread awaits it)");
        }
        try {
            if (closed) {
                throw closedChannel("is closed");
            }
            while (true) {
                RdmaCoreCq f = takeFired();
                if (f != null) {
                    return f;
                }
                int r = wait.await(fd, deadline);
                if (r == FdWait.WOKEN) {
                    throw closedChannel("was closed while this thread waited on it");
                }
                if (r == FdWait.READY) {
                    return take();
                }
                if (r == FdWait.TIMEOUT) {
                    return takeFired();
                }
                // SIGNALED: a CQ was fired here, taken at the top
            }
        } finally {
            awaitLock.unlock();
        }
    }

    /**
     * Fires {@code cq} on this channel from the provider itself (an armed iWARP CQ that got a flush completion the
     * provider owes): the next {@link #await} returns it, and one in progress is woken. An error path: it allocates.
     */
    void fire(RdmaCoreCq cq) {
        synchronized (firedCqs) {
            if (!firedCqs.contains(cq)) {
                firedCqs.add(cq);
                fired = firedCqs.size();
            }
        }
        wait.signal();
    }

    private RdmaCoreCq takeFired() {
        if (fired == 0) {
            return null;
        }
        synchronized (firedCqs) {
            RdmaCoreCq cq = firedCqs.poll();
            fired = firedCqs.size();
            return cq;
        }
    }

    private RdmaException closedChannel(String what) {
        return new RdmaException(RdmaException.Errno.EINVAL, "the completion channel of " + context.device().name()
                + " " + what);
    }

    /** Reads and acknowledges the event the channel's fd has. */
    private CompletionQueue take() {
        int rc = context.verbs().getCqEvent(state, channel, cqOut, ctxOut);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_get_cq_event failed (errno " + rc + ")");
        }
        MemorySegment cq = cqOut.get(ADDRESS, 0);
        context.verbs().ackCqEvents(state, cq, 1);
        RdmaCoreCq owner = context.cqOf(cq.address());
        if (owner == null) {
            throw new RdmaException(RdmaException.Errno.EIO, "ibv_get_cq_event named a CQ (0x"
                    + Long.toHexString(cq.address()) + ") that is no CQ of this context");
        }
        return owner;
    }

    /**
     * Destroys the channel ({@code ibv_destroy_comp_channel}); a second close does nothing. A thread in
     * {@link #await} is woken (its await throws EINVAL) and waited for, then the channel is destroyed.
     *
     * @throws RdmaException EBUSY while a CQ uses it (close the CQ first), or when a woken await did not leave within
     *                       {@value #CLOSE_WAIT_SECONDS} s (the channel then stays open)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (context.cqUsing(this)) {
            throw new RdmaException(RdmaException.Errno.EBUSY, "ibv_destroy_comp_channel would fail (EBUSY): a CQ uses"
                    + " the channel; close the CQ first");
        }
        closed = true; // an await that begins from now on throws
        wait.wake(); // an await in progress returns at once
        boolean locked;
        try {
            locked = awaitLock.tryLock(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            locked = false;
        }
        if (!locked) {
            closed = false;
            wait.rearm();
            throw new RdmaException(RdmaException.Errno.EBUSY, "the thread awaiting the completion channel of "
                    + context.device().name() + " did not leave within " + CLOSE_WAIT_SECONDS + " s of being woken"
                    + " (or this close was interrupted): the channel stays open");
        }
        try {
            int rc = context.verbs().destroyCompChannel(channel);
            if (rc != 0) {
                closed = false;
                wait.rearm();
                throw new RdmaException(RdmaException.Errno.of(rc), "ibv_destroy_comp_channel failed (errno " + rc + ")"
                        + (rc == 16 ? ": a CQ uses it; close the CQ first" : ""));
            }
            context.forget(this);
            wait.close();
            arena.close();
        } finally {
            awaitLock.unlock();
        }
    }
}

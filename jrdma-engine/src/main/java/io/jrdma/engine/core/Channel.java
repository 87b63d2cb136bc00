package io.jrdma.engine.core;

import io.jrdma.engine.util.MpscQueue;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * A completion channel: the engine queues the CQ that fired (an armed CQ fires once) and
 * unparks the waiting thread; no locks, no allocation on the signalling side.
 */
public final class Channel implements CompletionChannel {
    private final Context context;
    private final MpscQueue<Cq> events = new MpscQueue<>(1024);
    private volatile Thread waiter;
    public int users;
    private boolean closed;

    public Channel(Context context) {
        this.context = context;
    }

    /** Engine thread: a CQ fired. */
    public void signal(Cq cq) {
        events.offer(cq); // a CQ is queued at most once per arming; 1024 slots bound the distinct CQs
        Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    @Override
    public CompletionQueue await(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Thread me = Thread.currentThread();
        while (true) {
            Cq cq = events.poll();
            if (cq != null) {
                return cq;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            if (context.invoker) {
                if (context.progress() == 0) {
                    Thread.onSpinWait();
                }
                continue;
            }
            waiter = me;
            if (events.isEmpty()) {
                LockSupport.parkNanos(this, Math.min(left, 10_000_000L));
            }
            waiter = null;
            if (Thread.interrupted()) {
                throw new RdmaException(Errno.EIO, "interrupted while waiting for a completion event");
            }
        }
    }

    @Override
    public void close() {
        synchronized (context) {
            if (closed) {
                return;
            }
            if (users > 0) {
                throw new RdmaException(Errno.EBUSY, "the channel is still used by " + users + " CQs; close them first");
            }
            closed = true;
            context.release(this);
        }
    }
}

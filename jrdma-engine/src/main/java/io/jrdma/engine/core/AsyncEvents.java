package io.jrdma.engine.core;

import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.SharedReceiveQueue;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * A context's asynchronous event queue ({@code ibv_get_async_event}'s source): a bounded ring
 * written by the engine thread only, never blocking it (a full ring drops the event and counts
 * {@code async_event_overflow}), read by application threads under this object's monitor
 * (control path). Port events are not queued: a reader compares the interface's state (asked at
 * most every 10 ms) with the one it last reported and answers {@code PORT_ACTIVE}/{@code PORT_ERR}
 * when it changed, first.
 */
public final class AsyncEvents {
    private static final VarHandle TAIL;
    private static final VarHandle HEAD;
    private static final AsyncEvent.Type[] TYPES = AsyncEvent.Type.values();
    /** Events the ring holds before it drops (and counts) new ones. */
    public static final int CAPACITY = 1024;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(AsyncEvents.class, "tail", long.class);
            HEAD = l.findVarHandle(AsyncEvents.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Context context;
    private final byte[] types = new byte[CAPACITY];
    private final Object[] objects = new Object[CAPACITY];
    private long tail;
    private long head;
    private volatile Thread waiter;
    /** The port state the last reader saw, and the interface's as last asked (guarded by this). */
    private boolean portUp;
    private boolean portNow;
    private long portCheckedAt;
    /** How often a reader asks the interface whether it is up. */
    static final long PORT_CHECK_NANOS = 10_000_000L;

    AsyncEvents(Context context) {
        this.context = context;
        this.portUp = context.device.isUp();
        this.portNow = portUp;
        this.portCheckedAt = System.nanoTime();
    }

    /**
     * Engine thread: queues an event about a QP, CQ or SRQ. Allocation-free and lock-free; a full
     * queue drops the event and counts {@code async_event_overflow}.
     *
     * @param type   the event
     * @param object the QP, CQ or SRQ it concerns, as its {@link AsyncEvent.Type#element()} says
     */
    public void raise(AsyncEvent.Type type, Object object) {
        long t = tail;
        if (t - (long) HEAD.getAcquire(this) >= CAPACITY) { // release partner: poll
            context.counters.increment(Counter.ASYNC_EVENT_OVERFLOW);
            return;
        }
        int i = (int) (t & (CAPACITY - 1));
        types[i] = (byte) type.ordinal();
        objects[i] = object;
        TAIL.setRelease(this, t + 1); // acquire partner: poll
        context.counters.increment(Counter.ASYNC_EVENTS);
        Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    /** Any thread: fills {@code e} with the oldest event. @return false when there is none */
    synchronized boolean poll(AsyncEvent e) {
        long now = System.nanoTime();
        if (now - portCheckedAt >= PORT_CHECK_NANOS) { // asking the interface costs a system call or more
            portCheckedAt = now;
            portNow = context.device.isUp();
        }
        boolean up = portNow;
        if (up != portUp) {
            portUp = up;
            e.setPort(up ? AsyncEvent.Type.PORT_ACTIVE : AsyncEvent.Type.PORT_ERR, 1);
            return true;
        }
        long h = head;
        if (h == (long) TAIL.getAcquire(this)) { // release partner: raise
            return false;
        }
        int i = (int) (h & (CAPACITY - 1));
        AsyncEvent.Type type = TYPES[types[i]];
        Object o = objects[i];
        objects[i] = null;
        switch (type.element()) {
            case QP -> e.setQp(type, (QueuePair) o);
            case CQ -> e.setCq(type, (CompletionQueue) o);
            case SRQ -> e.setSrq(type, (SharedReceiveQueue) o);
            default -> e.setPort(type, 1);
        }
        HEAD.setRelease(this, h + 1); // acquire partner: raise's full check
        return true;
    }

    /** Any thread: waits for an event at most {@code timeout}, driving the engine of an INVOKER context. */
    boolean await(AsyncEvent e, Duration timeout) {
        long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
        Thread me = Thread.currentThread();
        while (true) {
            if (poll(e)) {
                return true;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            if (context.invoker) {
                if (context.progress() == 0) {
                    LockSupport.parkNanos(Math.min(left, 50_000L));
                }
            } else {
                waiter = me;
                if (head == (long) TAIL.getAcquire(this)) {
                    // bounded: the port state is not signalled, so it is looked at every 10 ms at least
                    LockSupport.parkNanos(this, Math.min(left, 10_000_000L));
                }
                waiter = null;
            }
            if (Thread.interrupted()) {
                me.interrupt();
                throw new RdmaException(Errno.EINTR, "interrupted while waiting for an asynchronous event");
            }
        }
    }
}

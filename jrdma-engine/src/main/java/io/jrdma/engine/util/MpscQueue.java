package io.jrdma.engine.util;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A bounded many-producer, single-consumer queue of references over an array: producers claim
 * a slot by CAS on the tail and publish the element with a release store; the consumer takes
 * elements in order with acquire loads. No allocation after construction.
 */
public final class MpscQueue<E> {
    private static final VarHandle TAIL;
    private static final VarHandle HEAD;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TAIL = l.findVarHandle(MpscQueue.class, "tail", long.class);
            HEAD = l.findVarHandle(MpscQueue.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Object[] slots;
    private final int mask;
    @SuppressWarnings("unused")
    private long p0, p1, p2, p3, p4, p5, p6;
    private volatile long tail;
    @SuppressWarnings("unused")
    private long q0, q1, q2, q3, q4, q5, q6;
    private volatile long head;

    public MpscQueue(int capacity) {
        int cap = Integer.highestOneBit(Math.max(2, capacity - 1)) << 1;
        slots = new Object[cap];
        mask = cap - 1;
    }

    /** @return false when full */
    public boolean offer(E e) {
        long t;
        do {
            t = (long) TAIL.getVolatile(this);
            long h = (long) HEAD.getAcquire(this);
            if (t - h >= slots.length) {
                return false;
            }
        } while (!TAIL.compareAndSet(this, t, t + 1));
        SLOT.setRelease(slots, (int) (t & mask), e); // acquire partner: poll()
        return true;
    }

    /** Consumer only: @return the oldest element, or null when empty (or the next one is not yet published) */
    @SuppressWarnings("unchecked")
    public E poll() {
        long h = (long) HEAD.getOpaque(this);
        int i = (int) (h & mask);
        Object e = SLOT.getAcquire(slots, i); // release partner: offer()
        if (e == null) {
            return null;
        }
        SLOT.setOpaque(slots, i, null);
        HEAD.setRelease(this, h + 1); // acquire partner: offer()'s capacity check
        return (E) e;
    }

    public boolean isEmpty() {
        return (long) HEAD.getAcquire(this) == (long) TAIL.getAcquire(this);
    }
}

package io.jrdma.rdmacore;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The calls inside the provider on one native object (a QP's posts and binds, a CQ's polls and arms, an SRQ's posts)
 * and whether the object is closing, in one atomic word, so that its {@code close()} destroys the native object only
 * once no such call is inside: rdma-core's destroy verbs free the object and unmap its queues (rxe), and a post or a
 * poll that checked a {@code closed} flag just before would otherwise run on freed memory (found in review).
 *
 * <p>A call {@link #enter}s (one atomic add) and, if that answered true, {@link #exit}s when it is out of the provider
 * (one atomic subtract): no lock, no allocation, and no other shared write; the word is the object's own, so threads
 * posting to different QPs do not share it. {@link #close} sets the closing bit, after which every {@code enter}
 * answers false (the caller fails as on a closed object), and waits, parked, until the calls inside have left: the
 * last one out unparks it. Posts and polls do not block in the provider (a poll reads the completion ring; a post
 * writes the queue and rings a doorbell with one system call), so the wait is as long as one such call.
 *
 * <p>Closes of one object are serialized by the object's own lock (its synchronized {@code close}); a close whose
 * destroy verb then fails calls {@link #reopen} and the object is usable again.
 */
final class InUse {
    /** The closing bit; the bits below it count the calls inside. */
    static final int CLOSING = 1 << 30;
    private static final VarHandle WORD;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(InUse.class, "word", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through WORD
    private volatile int word;
    /** The thread in {@link #close}, which the last call out unparks; written before the closing bit is set. */
    private volatile Thread closer;

    /**
     * Enters a call: one atomic add.
     *
     * @return true when the object is open (then call {@link #exit} once the call is out of the provider), false when
     *         it is closing or closed (nothing to exit)
     */
    boolean enter() {
        int w = (int) WORD.getAndAdd(this, 1);
        if ((w & CLOSING) != 0) {
            exit();
            return false;
        }
        return true;
    }

    /** Leaves a call that {@link #enter} let in: one atomic subtract; the last one out of a closing object unparks its closer. */
    void exit() {
        int w = (int) WORD.getAndAdd(this, -1);
        if (w == CLOSING + 1) {
            LockSupport.unpark(closer);
        }
    }

    /**
     * Sets the closing bit (from now on {@link #enter} answers false) and waits until every call inside has left.
     * An interrupt does not end the wait (the calls inside are short); the thread's interrupt status is kept.
     *
     * @return false when the bit was set already (closed before, and not {@link #reopen}ed)
     */
    boolean close() {
        closer = Thread.currentThread();
        int w;
        do {
            w = (int) WORD.getVolatile(this);
            if ((w & CLOSING) != 0) {
                return false;
            }
        } while (!WORD.compareAndSet(this, w, w | CLOSING));
        boolean interrupted = false;
        while (((int) WORD.getVolatile(this) & ~CLOSING) != 0) {
            LockSupport.park(this);
            if (Thread.interrupted()) {
                interrupted = true; // else park would return at once again: keep it for the caller
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return true;
    }

    /** Clears the closing bit: the close's destroy verb failed, and the object stays open. */
    void reopen() {
        WORD.getAndAdd(this, -CLOSING);
    }

    /** {@return true once {@link #close} has set the closing bit (and no {@link #reopen} cleared it)} */
    boolean closing() {
        return ((int) WORD.getVolatile(this) & CLOSING) != 0;
    }

    /** {@return the calls inside now: for tests} */
    int inside() {
        return (int) WORD.getVolatile(this) & ~CLOSING;
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqAttr;
import io.jrdma.verbs.SrqInitAttr;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A shared receive queue, transport-neutral: a ring of receive entries filled by the posting
 * thread (published with a release store of {@code producer}, one poster at a time, as a QP's
 * receive queue) and taken by the engine thread for whichever of its QPs a message arrives on.
 * A QP copies the entry it takes ({@link Qp#takeRecv()}), so the slot is free at once, as rxe's
 * responder copies an SRQ entry into its QP. The limit ({@code srq_limit}) belongs to the engine
 * thread: armed by {@link #modify} (control path), checked on each take, disarmed when its
 * {@link AsyncEvent.Type#SRQ_LIMIT_REACHED} is raised.
 *
 * <p>A resize ({@link #modify} with {@link SrqAttr#MAX_WR}, rxe's {@code rxe_queue_resize}) runs on the engine
 * thread, so the consumer is still; the caller stands in for the poster (the queue is single-producer, so no
 * post runs meanwhile). It moves the posted entries, in order, into a ring of the new size at the same
 * positions: {@code producer} and {@code consumer} keep counting, and the receives survive in posted order.
 */
public final class Srq implements SharedReceiveQueue {
    private static final VarHandle PRODUCER;
    private static final VarHandle CONSUMER;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PRODUCER = l.findVarHandle(Srq.class, "producer", long.class);
            CONSUMER = l.findVarHandle(Srq.class, "consumer", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public final Context context;
    public final Pd pd;
    /**
     * the depth: receives it holds at most. Written by a resize on the engine thread while the poster waits for
     * it (the control hand-off publishes it), read by the poster and the engine thread.
     */
    private int maxWr;
    public final int maxSge;
    /** the entries and their index mask (a power of two at least {@link #maxWr}); replaced by a resize */
    private RecvWqe[] ring;
    private int mask;
    @SuppressWarnings("unused")
    private long padA0, padA1, padA2, padA3, padA4, padA5, padA6;
    private long producer;
    @SuppressWarnings("unused")
    private long padB0, padB1, padB2, padB3, padB4, padB5, padB6;
    private long consumer;
    /** the armed limit, 0 when disarmed (engine thread) */
    private int limit;
    /** QPs that take from it (guarded by the PD's monitor) */
    int users;
    private volatile boolean closed;

    Srq(Pd pd, SrqInitAttr attr) {
        this.context = pd.context;
        this.pd = pd;
        this.maxWr = attr.maxWr();
        this.maxSge = attr.maxSge();
        int slots = slots(maxWr);
        ring = new RecvWqe[slots];
        mask = slots - 1;
        for (int i = 0; i < slots; i++) {
            ring[i] = new RecvWqe(maxSge);
        }
        limit = attr.srqLimit();
    }

    /** @return the ring size for a depth: the smallest power of two not below it (1 for 0) */
    private static int slots(int depth) {
        int slots = Integer.highestOneBit(Math.max(1, depth) * 2 - 1);
        return slots < depth ? slots << 1 : slots;
    }

    /** SRQs per context (only memory bounds them). */
    public static final int MAX_SRQ = 1 << 16;

    /**
     * {@return {@code base} with shared receive queues declared: the core's SRQ (receives as deep and
     * as wide as a QP's own queue, resizable: SRQ_RESIZE); for a transport whose responder takes receives through
     * {@link Qp#takeRecv()}}
     *
     * @param b    the device attributes so far
     */
    public static io.jrdma.verbs.DeviceAttr declare(io.jrdma.verbs.DeviceAttr b) {
        return new io.jrdma.verbs.DeviceAttr(b.fwVer(), b.nodeGuid(), b.sysImageGuid(), b.maxMrSize(), b.pageSizeCap(),
                b.vendorId(), b.vendorPartId(), b.hwVer(), b.maxQp(), b.maxQpWr(),
                b.deviceCapFlags() | io.jrdma.verbs.DeviceCap.SRQ_RESIZE, b.maxSge(),
                b.maxSgeRd(), b.maxCq(), b.maxCqe(), b.maxMr(), b.maxPd(), b.maxQpRdAtom(), b.maxResRdAtom(),
                b.maxQpInitRdAtom(), b.atomicCap(), b.maxMw(), b.maxAh(), MAX_SRQ, Context.MAX_QP_WR, Context.MAX_SGE,
                b.maxPkeys(), b.physPortCnt(), b.qpTypes());
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public int postRecv(RecvWorkRequest wr) {
        if (closed) {
            return Errno.EINVAL.value();
        }
        int numSge = wr.numSge();
        if (numSge > maxSge || Qp.negativeLength(wr)) {
            return Errno.EINVAL.value();
        }
        long p = producer;
        if (p - (long) CONSUMER.getAcquire(this) >= maxWr) { // release partner: take
            return Errno.ENOMEM.value();
        }
        RecvWqe r = ring[(int) (p & mask)];
        r.fill(wr);
        PRODUCER.setRelease(this, p + 1); // acquire partner: peek
        return 0;
    }

    /** Engine thread: the oldest receive, left in place; null when the queue is empty. */
    RecvWqe peek() {
        long c = consumer;
        return c == (long) PRODUCER.getAcquire(this) ? null : ring[(int) (c & mask)]; // release partner: postRecv
    }

    /**
     * Engine thread: takes the oldest receive into {@code into} (which has room for {@link #maxSge}
     * entries), frees its slot, and raises the limit's event when fewer than the armed limit remain.
     *
     * @return false when the queue is empty
     */
    boolean take(RecvWqe into) {
        long c = consumer;
        long p = (long) PRODUCER.getAcquire(this); // release partner: postRecv
        if (c == p) {
            return false;
        }
        RecvWqe r = ring[(int) (c & mask)];
        into.wrId = r.wrId;
        into.numSge = r.numSge;
        into.capacity = r.capacity;
        for (int i = 0; i < r.numSge; i++) {
            into.sgeAddr[i] = r.sgeAddr[i];
            into.sgeLength[i] = r.sgeLength[i];
            into.sgeLkey[i] = r.sgeLkey[i];
        }
        CONSUMER.setRelease(this, c + 1); // acquire partner: postRecv's full check
        if (limit != 0 && (long) PRODUCER.getAcquire(this) - (c + 1) < limit) { // what is left now, fresh posts counted
            limit = 0; // fires once, then disarmed until modify arms it again
            context.events.raise(AsyncEvent.Type.SRQ_LIMIT_REACHED, this);
        }
        return true;
    }

    /**
     * {@code ibv_modify_srq} as rxe checks it ({@code rxe_srq_chk_attr}, {@code rxe_queue_resize}): MAX_WR resizes
     * to 1..max_srq_wr receives, not below the receives posted now nor below the armed limit; LIMIT arms a limit not
     * above the depth (the new one when both are given). A failed modify changes nothing.
     */
    @Override
    public void modify(SrqAttr attr, int attrMask) {
        java.util.Objects.requireNonNull(attr, "attr");
        if ((attrMask & ~(SrqAttr.MAX_WR | SrqAttr.LIMIT)) != 0) {
            throw new RdmaException(Errno.EINVAL, "unknown SRQ attribute mask bits 0x"
                    + Integer.toHexString(attrMask & ~(SrqAttr.MAX_WR | SrqAttr.LIMIT)) + "; use SrqAttr.MAX_WR and SrqAttr.LIMIT");
        }
        boolean resize = (attrMask & SrqAttr.MAX_WR) != 0;
        boolean arm = (attrMask & SrqAttr.LIMIT) != 0;
        checkOpen();
        if (resize) {
            int most = context.queryDevice().maxSrqWr();
            if (attr.maxWr() < 1 || attr.maxWr() > most) {
                throw new RdmaException(Errno.EINVAL, "an SRQ holds 1.." + most + " receives (queryDevice: max_srq_wr), not "
                        + attr.maxWr());
            }
        }
        context.control(() -> {
            checkOpen();
            int depth = resize ? attr.maxWr() : maxWr;
            if (arm && attr.srqLimit() > depth) {
                throw new RdmaException(Errno.EINVAL, "SRQ limit " + attr.srqLimit() + " above the queue's depth of " + depth);
            }
            if (resize) {
                if (!arm && limit > depth) {
                    throw new RdmaException(Errno.EINVAL, "cannot resize the SRQ to " + depth + " receives: its armed limit is "
                            + limit + " (lower the limit in the same modify, with SrqAttr.LIMIT, or first)");
                }
                long posted = (long) PRODUCER.getAcquire(this) - consumer;
                if (depth < posted) {
                    throw new RdmaException(Errno.EINVAL, "cannot resize the SRQ to " + depth + " receives: " + posted
                            + " are posted and not yet taken (as rxe, a resize keeps them all); let messages take them first");
                }
                resize(depth);
            }
            if (arm) {
                limit = attr.srqLimit();
            }
        });
    }

    /**
     * Engine thread (the poster waits in {@link #modify}): moves the posted entries into a ring of {@code depth},
     * each to the slot of its own position, so producer and consumer keep their values.
     */
    private void resize(int depth) {
        int slots = slots(depth);
        if (slots != ring.length) {
            RecvWqe[] old = ring;
            RecvWqe[] next = new RecvWqe[slots];
            int newMask = slots - 1;
            long p = (long) PRODUCER.getAcquire(this);
            for (long i = consumer; i < p; i++) {
                next[(int) (i & newMask)] = old[(int) (i & mask)]; // the posted entries, by reference
            }
            for (int i = 0; i < slots; i++) {
                if (next[i] == null) {
                    next[i] = new RecvWqe(maxSge);
                }
            }
            ring = next;
            mask = newMask;
        }
        maxWr = depth;
    }

    @Override
    public SrqAttr query() {
        checkOpen();
        int[] l = new int[2];
        context.control(() -> {
            l[0] = limit;
            l[1] = maxWr;
        });
        return new SrqAttr(l[1], maxSge, l[0]);
    }

    boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new RdmaException(Errno.EINVAL, "the SRQ is destroyed");
        }
    }

    @Override
    public void close() {
        synchronized (pd) {
            if (closed) {
                return;
            }
            if (users > 0) {
                throw new RdmaException(Errno.EBUSY, "the SRQ is still used by " + users
                        + " queue pairs; close them first (as ibv_destroy_srq)");
            }
            closed = true;
        }
        pd.release(this);
    }

    @Override
    public String toString() {
        return "SRQ of " + maxWr + " receives";
    }
}

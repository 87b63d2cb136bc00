package io.jrdma.rdmacore;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqAttr;
import io.jrdma.verbs.SrqInitAttr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static io.jrdma.rdmacore.Structs.IBV_SRQ_ATTR;
import static io.jrdma.rdmacore.Structs.IBV_SRQ_INIT_ATTR;
import static io.jrdma.rdmacore.Structs.off;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A shared receive queue of an rdma-core device ({@code ibv_create_srq}); {@link #postRecv} calls the
 * context's {@code ops.post_srq_recv} with a native {@code ibv_recv_wr} laid out once.
 */
final class RdmaCoreSrq implements SharedReceiveQueue {
    private static final int EINVAL = 22, EOPNOTSUPP = 95;
    private final RdmaCorePd pd;
    final MemorySegment srq;
    private final Arena arena;
    private final MemorySegment recvWr, sges, badWr;
    private final int maxSge;
    private final MethodHandle post;
    private volatile boolean closed;
    /** The posts inside the provider, which {@link #close} waits out before it destroys the SRQ. */
    private final InUse inUse = new InUse();

    /** @return true once destroyed: its native {@code ibv_srq} is freed */
    boolean closed() {
        return closed;
    }
    /**
     * What the SRQ was made with and last modified to (depth, SGEs, limit), for devices whose rdma-core provider has
     * no {@code query_srq} (Linux siw: {@code ibv_query_srq} is EOPNOTSUPP): {@link #query} answers from these. The
     * limit goes back to 0 when its SRQ_LIMIT_REACHED event is read ({@link #limitReached}), as the IBA disarms it.
     */
    private int knownMaxWr, knownMaxSge, knownLimit;

    private RdmaCoreSrq(RdmaCorePd pd, MemorySegment srq, Arena arena, int maxSge) {
        this.pd = pd;
        this.srq = srq;
        this.arena = arena;
        this.maxSge = maxSge;
        this.recvWr = arena.allocate(Structs.IBV_RECV_WR);
        this.sges = arena.allocate(Structs.IBV_SGE.byteSize() * maxSge, 8);
        this.badWr = arena.allocate(ADDRESS);
        recvWr.set(ADDRESS, Structs.RWR_SG_LIST, sges);
        this.post = pd.context().ops().postSrqRecv;
    }

    static RdmaCoreSrq create(RdmaCorePd pd, SrqInitAttr attr) {
        if (pd.context().ops().postSrqRecv == null) {
            throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, pd.context().device().name()
                    + "'s provider has no post_srq_recv: it has no SRQs");
        }
        Arena arena = Arena.ofShared();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment init = a.allocate(IBV_SRQ_INIT_ATTR);
            init.set(JAVA_INT, off(IBV_SRQ_INIT_ATTR, "attr.max_wr"), attr.maxWr());
            init.set(JAVA_INT, off(IBV_SRQ_INIT_ATTR, "attr.max_sge"), attr.maxSge());
            init.set(JAVA_INT, off(IBV_SRQ_INIT_ATTR, "attr.srq_limit"), attr.srqLimit());
            MemorySegment srq = pd.context().verbs().createSrq(pd.pd, init).reinterpret(128);
            RdmaCoreSrq s = new RdmaCoreSrq(pd, srq, arena, attr.maxSge());
            // ibv_create_srq writes back the depth and SGEs the device made (siw: the depth rounded up to 2^n)
            s.knownMaxWr = Math.max(attr.maxWr(), init.get(JAVA_INT, off(IBV_SRQ_INIT_ATTR, "attr.max_wr")));
            s.knownMaxSge = Math.max(attr.maxSge(), init.get(JAVA_INT, off(IBV_SRQ_INIT_ATTR, "attr.max_sge")));
            s.knownLimit = attr.srqLimit();
            pd.context().remember(s);
            return s;
        } catch (LibIbverbs.NativeCallException e) {
            arena.close();
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    @Override
    public RdmaCorePd pd() {
        return pd;
    }

    /**
     * {@code ibv_modify_srq}: {@link SrqAttr#MAX_WR} and {@link SrqAttr#LIMIT} are {@code IBV_SRQ_MAX_WR} and
     * {@code IBV_SRQ_LIMIT}.
     */
    @Override
    public synchronized void modify(SrqAttr attr, int mask) {
        requireOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(IBV_SRQ_ATTR);
            s.set(JAVA_INT, off(IBV_SRQ_ATTR, "max_wr"), attr.maxWr());
            s.set(JAVA_INT, off(IBV_SRQ_ATTR, "max_sge"), attr.maxSge());
            s.set(JAVA_INT, off(IBV_SRQ_ATTR, "srq_limit"), attr.srqLimit());
            int rc = pd.context().verbs().modifySrq(srq, s, mask);
            if (rc == EOPNOTSUPP && (mask & SrqAttr.MAX_WR) != 0) {
                throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "SharedReceiveQueue.modify with MAX_WR (a"
                        + " resize, ibv_modify_srq with IBV_SRQ_MAX_WR) on " + pd.context().device().name()
                        + " failed (EOPNOTSUPP): the device cannot resize an SRQ (queryDevice() declares no SRQ_RESIZE)");
            }
            if (rc != 0) {
                throw new RdmaException(RdmaException.Errno.of(rc), "ibv_modify_srq (mask " + mask + ", " + attr
                        + ") failed (errno " + rc + ")");
            }
            if ((mask & SrqAttr.MAX_WR) != 0) {
                knownMaxWr = attr.maxWr();
            }
            if ((mask & SrqAttr.LIMIT) != 0) {
                knownLimit = attr.srqLimit();
            }
        }
    }

    /** Its SRQ_LIMIT_REACHED event was read: the limit is disarmed (0), as the device did. */
    synchronized void limitReached() {
        knownLimit = 0;
    }

    @Override
    public synchronized SrqAttr query() {
        requireOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(IBV_SRQ_ATTR);
            int rc = pd.context().verbs().querySrq(srq, s);
            if (rc == EOPNOTSUPP) {
                // the device's rdma-core provider has no query_srq (Linux siw): what it was made with and modified to
                return new SrqAttr(knownMaxWr, knownMaxSge, knownLimit);
            }
            if (rc != 0) {
                throw new RdmaException(RdmaException.Errno.of(rc), "ibv_query_srq failed (errno " + rc + ")");
            }
            return new SrqAttr(s.get(JAVA_INT, 0), s.get(JAVA_INT, 4), s.get(JAVA_INT, 8));
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the SRQ is destroyed");
        }
    }

    /**
     * Writes {@code wr} into the SRQ's native {@code ibv_recv_wr} and calls {@code ops.post_srq_recv}.
     *
     * @return 0, or the provider's errno; EINVAL for more SGEs than the SRQ was created with, or a destroyed SRQ
     */
    @Override
    public int postRecv(RecvWorkRequest wr) {
        int n = wr.numSge();
        if (n > maxSge || !inUse.enter()) {
            return EINVAL; // too many SGEs; closing or closed
        }
        try {
            RdmaCoreQp.writeRecv(wr, recvWr, sges, n);
            int rc;
            try {
                rc = (int) post.invokeExact(srq, recvWr, badWr);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            return rc < 0 ? -rc : rc;
        } finally {
            inUse.exit();
        }
    }

    /**
     * Destroys it ({@code ibv_destroy_srq}); a second close does nothing. A post on another thread that is inside the
     * provider is waited out first; one that comes later returns EINVAL ({@link InUse}).
     *
     * @throws RdmaException EBUSY while a QP uses it (before anything is done: a post meanwhile goes on)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (pd.context().qpUsing(this)) {
            throw new RdmaException(RdmaException.Errno.EBUSY, "ibv_destroy_srq would fail (EBUSY): a QP uses the"
                    + " SRQ; close the QP first");
        }
        inUse.close(); // posts from now on return EINVAL; those inside the provider have left
        int rc = pd.context().verbs().destroySrq(srq);
        if (rc != 0) {
            inUse.reopen();
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_destroy_srq failed (errno " + rc + ")"
                    + (rc == 16 ? ": a QP uses it; close the QP first" : ""));
        }
        closed = true;
        pd.context().forget(this);
        arena.close();
    }
}

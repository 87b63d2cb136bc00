package io.jrdma.rdmacore;

import io.jrdma.verbs.MemoryWindow;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.RdmaException;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A memory window of an rdma-core device ({@code ibv_alloc_mw} through the context's {@code ops.alloc_mw}).
 * Its rkey is the native {@code struct ibv_mw}'s: a type 1 bind ({@code ops.bind_mw}) writes the next key
 * there itself; a type 2 bind (a BIND_MW work request) names its key in the request, and this provider
 * writes it there once the request is posted (rxe's provider reads {@code mw->rkey} as the window's current
 * key when it builds the next bind), putting the old one back if the bind completes in error.
 */
final class RdmaCoreMw implements MemoryWindow {
    private final RdmaCorePd pd;
    final MemorySegment mw;
    private final MwType type;
    private volatile boolean closed;
    private int keyAtClose;

    RdmaCoreMw(RdmaCorePd pd, MemorySegment mw, MwType type) {
        this.pd = pd;
        this.mw = mw.reinterpret(Structs.IBV_MW.byteSize());
        this.type = type;
    }

    @Override
    public RdmaCorePd pd() {
        return pd;
    }

    @Override
    public MwType type() {
        return type;
    }

    @Override
    public int rkey() {
        return closed ? keyAtClose : mw.get(JAVA_INT, Structs.MW_RKEY);
    }

    boolean closed() {
        return closed;
    }

    /** After a type 2 bind is posted: the window's key becomes {@code next}. */
    void setKey(int next) {
        mw.set(JAVA_INT, Structs.MW_RKEY, next);
    }

    /** After a type 2 bind to {@code next} completed in error: the key goes back to {@code prev}, unless it moved on. */
    void restoreKey(int next, int prev) {
        if (!closed && mw.get(JAVA_INT, Structs.MW_RKEY) == next) {
            mw.set(JAVA_INT, Structs.MW_RKEY, prev);
        }
    }

    /**
     * Deallocates the window ({@code ops.dealloc_mw}, verbs.h's {@code ibv_dealloc_mw}): its key stops working.
     *
     * @throws RdmaException EINVAL if it is already closed; the errno of dealloc_mw if the device refuses
     */
    @Override
    public synchronized void close() {
        if (closed) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the memory window is already closed");
        }
        int key = mw.get(JAVA_INT, Structs.MW_RKEY);
        int rc;
        try {
            rc = (int) pd.context().ops().deallocMw.invokeExact(mw);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (rc != 0) {
            int e = Math.abs(rc);
            throw new RdmaException(RdmaException.Errno.of(e), "ibv_dealloc_mw failed (errno " + e + ")");
        }
        keyAtClose = key;
        closed = true;
    }

    @Override
    public String toString() {
        return "RdmaCoreMw{" + type + ", rkey=0x" + Integer.toHexString(rkey()) + '}';
    }
}

package io.jrdma.rdmacore;

import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.RdmaException;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/** A memory region of an rdma-core device ({@code ibv_reg_mr} over a native segment). */
final class RdmaCoreMr implements MemoryRegion {
    private final RdmaCorePd pd;
    private final MemorySegment segment;
    /** The native {@code struct ibv_mr}. */
    final MemorySegment mr;
    private final int access;
    private final int lkey;
    private final int rkey;
    private volatile boolean closed;

    /** @return true once deregistered: its native {@code ibv_mr} is freed, no request may name it */
    boolean closed() {
        return closed;
    }

    RdmaCoreMr(RdmaCorePd pd, MemorySegment segment, MemorySegment mr, int access) {
        this.pd = pd;
        this.segment = segment;
        this.mr = mr;
        this.access = access;
        this.lkey = mr.get(JAVA_INT, Structs.MR_LKEY);
        this.rkey = mr.get(JAVA_INT, Structs.MR_RKEY);
    }

    @Override
    public RdmaCorePd pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return segment.address();
    }

    @Override
    public long length() {
        return segment.byteSize();
    }

    @Override
    public int lkey() {
        return lkey;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public int access() {
        return access;
    }

    /** Deregisters ({@code ibv_dereg_mr}); a second close does nothing. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        int rc = pd.context().verbs().deregMr(mr);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_dereg_mr failed (errno " + rc + ")"
                    + (rc == 16 ? ": a memory window is bound to it; invalidate or free it first" : ""));
        }
        closed = true;
    }

    @Override
    public String toString() {
        return "RdmaCoreMr{addr=0x" + Long.toHexString(address()) + ", length=" + length() + ", lkey=0x"
                + Integer.toHexString(lkey) + ", rkey=0x" + Integer.toHexString(rkey) + '}';
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;

import java.lang.foreign.MemorySegment;

/** A registered memory region: the segment, its virtual address range, one key for lkey and rkey (as rxe). */
public final class Mr implements MemoryRegion {
    public final Pd pd;
    public final MemorySegment segment;
    public final long address;
    public final long length;
    public final int key;
    public final int access;
    /**
     * Set by the engine thread when a peer's SEND_WITH_INV invalidates the key (only with
     * {@code Access.REMOTE_INVALIDATE}); from then on every access is refused. Plain: the engine,
     * which makes every remote check and the last local one (the gather or scatter), wrote it.
     */
    public boolean invalidated;
    /** soft-iWARP zero-copy views of this region, made by the engine thread on first need ({@link RegionViews}) */
    public RegionViews views;
    private volatile boolean closed;

    public Mr(Pd pd, MemorySegment segment, int key, int access) {
        this.pd = pd;
        this.segment = segment;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.key = key;
        this.access = access;
    }

    /**
     * The check every access makes before touching memory (rxe_mr.c {@code mr_check_range}
     * and the key/PD/access checks of {@code lookup_mr}): same PD, all {@code needed} access
     * bits, and [va, va + len) inside the region, overflow-safe.
     */
    public boolean permits(Pd requester, int needed, long va, long len) {
        return requester == pd && !invalidated && (access & needed) == needed && len >= 0 && va >= address
                && va - address <= length - len;
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        pd.context.keys.remove(this);
        pd.release(this);
    }

    /**
     * Engine thread: a peer's SEND_WITH_INV names this key. As rxe and siw, the region must belong
     * to the receiving QP's PD; it must also have been registered with {@code REMOTE_INVALIDATE}
     * (jrdma's stand-in for a fast-registration region). Invalidating an invalid key again is allowed
     * (siw_invalidate_stag: "an STag may already be in invalid state").
     *
     * @return true when the key is now invalid
     */
    public boolean invalidateFor(Pd receiver) {
        if (receiver != pd || (access & io.jrdma.verbs.Access.REMOTE_INVALIDATE) == 0 || closed) {
            return false;
        }
        invalidated = true;
        return true;
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "MemoryRegion{addr=0x" + Long.toHexString(address) + ", length=" + length + ", key=0x"
                + Integer.toHexString(key) + ", access=" + io.jrdma.verbs.Access.toString(access) + '}';
    }
}

package io.jrdma.engine;

import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;

import java.lang.foreign.MemorySegment;

/** A registered memory region: the segment, its virtual address range, one key for lkey and rkey (as rxe). */
final class Mr implements MemoryRegion {
    final Pd pd;
    final MemorySegment segment;
    final long address;
    final long length;
    final int key;
    final int access;
    /** soft-iWARP zero-copy views of this region, made by the engine thread on first need ({@link RegionViews}) */
    RegionViews views;
    private volatile boolean closed;

    Mr(Pd pd, MemorySegment segment, int key, int access) {
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
    boolean permits(Pd requester, int needed, long va, long len) {
        return requester == pd && (access & needed) == needed && len >= 0 && va >= address
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

    boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "MemoryRegion{addr=0x" + Long.toHexString(address) + ", length=" + length + ", key=0x"
                + Integer.toHexString(key) + ", access=" + io.jrdma.verbs.Access.toString(access) + '}';
    }
}

package io.jrdma.engine.core;

import io.jrdma.engine.link.NativeTcp;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Direct {@link ByteBuffer} views of one registered region, for the soft-iWARP engine's zero-copy
 * path: FPDU payloads are written to the socket straight from the region and read from it straight
 * into the region (docs/iwarp-design.md, "Zero copy"). A view is an object with its own position and
 * limit, so every payload queued for the socket needs one of its own; they are made on first need
 * ({@link MemorySegment#asByteBuffer()}: tied to the region's memory session, so NIO keeps the
 * memory alive during each system call and refuses it once freed) and kept in this pool, so the
 * data path allocates nothing once a region has been used.
 *
 * <p>The views are used with NIO's single-buffer {@code read} and {@code write} (its scattering
 * and gathering variants allocate two objects per call for every buffer that carries a memory
 * session, as these do), or their positions give the addresses of {@link NativeTcp}'s
 * {@code writev}/{@code readv} entries, which keep the region's memory alive themselves.
 *
 * <p>A pool is of one mapping: the memory its region had when the pool was made (its segment and base
 * address are kept here). A fast registration onto other memory gives the region a new pool
 * ({@code LocalOps}), and a view already queued stays a view of the memory it was made of: its
 * position is an offset into {@link #segment()}, whose first byte is at {@link #base()}, whatever the
 * region maps now.
 *
 * <p>Engine thread only (a region belongs to one context). Regions larger than 2 GiB, which one
 * {@link ByteBuffer} cannot cover, have no views: their FPDUs take the copying path.
 */
public final class RegionViews {
    /** Views of one region in use at once at most (across the engine's streams); beyond it FPDUs are copied. */
    static final int MAX_VIEWS = 64;

    private final Mr mr;
    /** the memory the region mapped when this pool was made: every view here is of it */
    private final MemorySegment segment;
    private final long base;
    private final ByteBuffer[] free = new ByteBuffer[MAX_VIEWS];
    private int freeCount;
    private int made;
    /** the view reads use: a read is over when the call returns, so one serves every stream */
    private ByteBuffer readView;

    private RegionViews(Mr mr) {
        this.mr = mr;
        this.segment = mr.segment;
        this.base = mr.address;
    }

    /** @return the views of {@code mr} (made on first call), or null if it cannot have any */
    public static RegionViews of(Mr mr) {
        RegionViews v = mr.views;
        if (v == null && mr.length <= Integer.MAX_VALUE) {
            v = new RegionViews(mr);
            mr.views = v;
        }
        return v;
    }

    /**
     * A view whose position..limit is {@code [va, va + len)} of the region, or null when the pool
     * is exhausted or the region's memory is gone (the caller copies instead, which then reports it).
     */
    public ByteBuffer acquire(long va, int len) {
        if (!segment.scope().isAlive()) {
            return null;
        }
        ByteBuffer b;
        if (freeCount > 0) {
            b = free[--freeCount];
        } else if (made < MAX_VIEWS) {
            b = segment.asByteBuffer();
            made++;
        } else {
            return null;
        }
        int at = (int) (va - base);
        b.clear().position(at).limit(at + len);
        return b;
    }

    /**
     * The view a socket read places payload bytes through, its position..limit set to
     * {@code [va, va + len)}; valid until the next call.
     *
     * @throws IllegalStateException if the region's memory is gone (the stream is then terminated)
     */
    public ByteBuffer acquireForRead(long va, int len) {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the memory of region 0x" + Integer.toHexString(mr.key) + " was freed");
        }
        ByteBuffer b = readView;
        if (b == null) {
            b = segment.asByteBuffer();
            readView = b;
        }
        int at = (int) (va - base);
        b.clear().position(at).limit(at + len);
        return b;
    }

    /** @return the region these views are of */
    public Mr mr() {
        return mr;
    }

    /** @return the memory these views are of (the region's when they were made; it may map other memory since) */
    public MemorySegment segment() {
        return segment;
    }

    /** @return the address of {@link #segment()}'s first byte: a view's position {@code p} is the byte at {@code base() + p} */
    public long base() {
        return base;
    }

    /** @return the views of this pool handed out by {@link #acquire} and not given back yet (tests look) */
    public int inUse() {
        return made - freeCount;
    }

    /** Gives back a view from {@link #acquire}. */
    public void release(ByteBuffer b) {
        free[freeCount++] = b;
    }
}

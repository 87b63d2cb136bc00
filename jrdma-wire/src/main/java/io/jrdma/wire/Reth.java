package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RDMA Extended Transport Header (RETH), 16 bytes: carried by RDMA WRITE First/Only
 * (with or without immediate) and RDMA READ Request, right after the BTH.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                  Virtual Address (bits 63-32)                 |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                  Virtual Address (bits 31-0)                  |  bytes 4-7
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                             R_Key                             |  bytes 8-11
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                           DMA Length                          |  bytes 12-15
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>All fields big-endian. The DMA length is the length of the whole message (not of this
 * packet), an unsigned 32-bit value returned as a Java {@code int}; use
 * {@link Integer#toUnsignedLong(int)} when it may exceed 2^31 - 1.
 * Source: IBA Vol 1 §9.3 (extended transport headers, RETH); Linux {@code rxe_hdr.h}
 * ({@code struct rxe_reth { __be64 va; __be32 rkey; __be32 len; }}); jrdma spec D3.
 */
public final class Reth {
    private Reth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 16;

    /** Remote virtual address. */
    public static long va(MemorySegment s, long off) {
        return s.get(BE64, off);
    }

    /** Remote key. */
    public static int rkey(MemorySegment s, long off) {
        return s.get(BE32, off + 8);
    }

    /** DMA length of the whole message (unsigned 32 bits, as an int). */
    public static int dmaLength(MemorySegment s, long off) {
        return s.get(BE32, off + 12);
    }

    /** Writes all 16 bytes. */
    public static void write(MemorySegment s, long off, long va, int rkey, int dmaLength) {
        s.set(BE64, off, va);
        s.set(BE32, off + 8, rkey);
        s.set(BE32, off + 12, dmaLength);
    }
}

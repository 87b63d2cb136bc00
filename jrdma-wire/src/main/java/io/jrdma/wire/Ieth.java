package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE32;

import java.lang.foreign.MemorySegment;

/**
 * Invalidate Extended Transport Header (IETH), 4 bytes, carried by SEND Last/Only with
 * Invalidate (RC only).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                      R_Key to invalidate                      |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>Source: IBA Vol 1 §9.3 (IETH); Linux {@code rxe_hdr.h} ({@code struct rxe_ieth { __be32 rkey; }});
 * jrdma spec D3.
 */
public final class Ieth {
    private Ieth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 4;

    /** The R_Key to invalidate. */
    public static int rkey(MemorySegment s, long off) {
        return s.get(BE32, off);
    }

    /** Writes the R_Key to invalidate. */
    public static void write(MemorySegment s, long off, int rkey) {
        s.set(BE32, off, rkey);
    }
}

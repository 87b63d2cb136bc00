package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE32;

import java.lang.foreign.MemorySegment;

/**
 * Immediate Data Extended Transport Header (ImmDt), 4 bytes, carried by the
 * *_WITH_IMMEDIATE opcodes (after the RETH on RDMA WRITE Only with immediate, after the DETH
 * on UD).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                         Immediate Data                        |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>The 32 bits are opaque; the verbs API keeps them in network order end-to-end
 * ({@code ibv_wc.imm_data} is {@code __be32}). This codec returns the big-endian value of the
 * four wire bytes, i.e. wire bytes {@code 01 02 03 04} give {@code 0x01020304}.
 * Source: IBA Vol 1 §9.3 (ImmDt); Linux {@code rxe_hdr.h} ({@code struct rxe_immdt { __be32 imm; }});
 * jrdma spec D3.
 */
public final class ImmDt {
    private ImmDt() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 4;

    /** The immediate data as the big-endian value of its four wire bytes. */
    public static int imm(MemorySegment s, long off) {
        return s.get(BE32, off);
    }

    /** Writes the immediate data (big-endian). */
    public static void write(MemorySegment s, long off, int imm) {
        s.set(BE32, off, imm);
    }
}

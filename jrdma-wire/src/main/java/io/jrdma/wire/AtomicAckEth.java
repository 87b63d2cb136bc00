package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * Atomic Acknowledge Extended Transport Header (AtomicAckETH), 8 bytes, carried by ATOMIC
 * ACKNOWLEDGE after the AETH.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |               Original Remote Data (bits 63-32)               |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                Original Remote Data (bits 31-0)               |  bytes 4-7
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>The value of the remote 64-bit word before the atomic operation. Source: IBA Vol 1
 * §9.3 (AtomicAckETH); Linux {@code rxe_hdr.h} ({@code struct rxe_atmack { __be64 orig; }});
 * jrdma spec D3.
 */
public final class AtomicAckEth {
    private AtomicAckEth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 8;

    /** Original remote data. */
    public static long originalData(MemorySegment s, long off) {
        return s.get(BE64, off);
    }

    /** Writes all 8 bytes. */
    public static void write(MemorySegment s, long off, long originalData) {
        s.set(BE64, off, originalData);
    }
}

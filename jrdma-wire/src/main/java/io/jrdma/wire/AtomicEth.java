package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * Atomic Extended Transport Header (AtomicETH), 28 bytes (packed: the 64-bit fields after
 * the R_Key are not 8-byte aligned), carried by COMPARE SWAP and FETCH ADD requests.
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
 * |                Swap (or Add) Data (bits 63-32)                |  bytes 12-15
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                 Swap (or Add) Data (bits 31-0)                |  bytes 16-19
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                   Compare Data (bits 63-32)                   |  bytes 20-23
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                    Compare Data (bits 31-0)                   |  bytes 24-27
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>For FETCH ADD, "Swap (or Add) Data" is the addend and Compare Data is ignored (rxe and
 * perftest send 0). Source: IBA Vol 1 §9.3 (AtomicETH); Linux {@code rxe_hdr.h}
 * ({@code struct rxe_atmeth { __be64 va; __be32 rkey; __be64 swap_add; __be64 comp; } __packed});
 * jrdma spec D3.
 */
public final class AtomicEth {
    private AtomicEth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 28;

    /** Remote virtual address (must be 8-byte aligned for the operation to be valid). */
    public static long va(MemorySegment s, long off) {
        return s.get(BE64, off);
    }

    /** Remote key. */
    public static int rkey(MemorySegment s, long off) {
        return s.get(BE32, off + 8);
    }

    /** Swap data (COMPARE SWAP) or add data (FETCH ADD). */
    public static long swapAdd(MemorySegment s, long off) {
        return s.get(BE64, off + 12);
    }

    /** Compare data (COMPARE SWAP). */
    public static long compare(MemorySegment s, long off) {
        return s.get(BE64, off + 20);
    }

    /** Writes all 28 bytes. */
    public static void write(MemorySegment s, long off, long va, int rkey, long swapAdd,
            long compare) {
        s.set(BE64, off, va);
        s.set(BE32, off + 8, rkey);
        s.set(BE64, off + 12, swapAdd);
        s.set(BE64, off + 20, compare);
    }
}

package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RFC 7306 Atomic Request header, 52 bytes after the untagged DDP header of an
 * ATOMIC_REQUEST message.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                   Reserved (28 bits)                  |AOpCode|  bytes 0-3
 * |                     Request Identifier                        |  bytes 4-7
 * |                        Remote STag                            |  bytes 8-11
 * |                  Remote Tagged Offset (64)                    |  bytes 12-19
 * |                 Add or Swap Data (64)                         |  bytes 20-27
 * |                 Add or Swap Mask (64)                         |  bytes 28-35
 * |                   Compare Data (64)                           |  bytes 36-43
 * |                   Compare Mask (64)                           |  bytes 44-51
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>Layout and atomic opcodes as in RFC 7306 to our recollection and in Wireshark's
 * dissector (FetchAdd 0, CmpSwap 2, same field order); not checked against a capture.
 */
public final class AtomicRequest {
    private AtomicRequest() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 52;

    /** Atomic opcode: Fetch and Add. */
    public static final int FETCH_ADD = 0;
    /** Atomic opcode: Swap. */
    public static final int SWAP = 1;
    /** Atomic opcode: Compare and Swap. */
    public static final int COMPARE_SWAP = 2;

    /** AOpCode, the low 4 bits of the first word. */
    public static int atomicOpcode(MemorySegment s, long off) {
        return s.get(BE32, off) & 0x0F;
    }

    /** Request identifier, echoed by the Atomic Response. */
    public static int requestId(MemorySegment s, long off) {
        return s.get(BE32, off + 4);
    }

    /** STag of the remote (target) buffer. */
    public static int remoteStag(MemorySegment s, long off) {
        return s.get(BE32, off + 8);
    }

    /** Tagged offset of the 8-byte target. */
    public static long remoteTaggedOffset(MemorySegment s, long off) {
        return s.get(BE64, off + 12);
    }

    /** Add data (FetchAdd) or swap data (Swap, CompareSwap). */
    public static long addOrSwapData(MemorySegment s, long off) {
        return s.get(BE64, off + 20);
    }

    /** Add or swap mask. */
    public static long addOrSwapMask(MemorySegment s, long off) {
        return s.get(BE64, off + 28);
    }

    /** Compare data (CompareSwap). */
    public static long compareData(MemorySegment s, long off) {
        return s.get(BE64, off + 36);
    }

    /** Compare mask (CompareSwap). */
    public static long compareMask(MemorySegment s, long off) {
        return s.get(BE64, off + 44);
    }

    /** Writes all 52 bytes; reserved bits zero. */
    public static void write(MemorySegment s, long off, int atomicOpcode, int requestId,
            int remoteStag, long remoteTaggedOffset, long addOrSwapData, long addOrSwapMask,
            long compareData, long compareMask) {
        s.set(BE32, off, atomicOpcode & 0x0F);
        s.set(BE32, off + 4, requestId);
        s.set(BE32, off + 8, remoteStag);
        s.set(BE64, off + 12, remoteTaggedOffset);
        s.set(BE64, off + 20, addOrSwapData);
        s.set(BE64, off + 28, addOrSwapMask);
        s.set(BE64, off + 36, compareData);
        s.set(BE64, off + 44, compareMask);
    }
}

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
 * <p>Carried in an untagged, single-segment DDP message on queue 1, the RDMA Read Request queue,
 * taking the next MSN of that queue (an Atomic Request and a READ Request share the MSN sequence
 * and the IRD/ORD resources); answered by an {@link AtomicResponse} on queue 3.
 *
 * <p>Masks: FetchAdd adds the Add Data to the 64-bit target; a bit set in the Add Mask stops the
 * carry out of that bit (field boundaries), so a plain 64-bit add sends an Add Mask of 0 (all ones
 * would make it a XOR). CompareSwap compares the bits set in the Compare Mask and, when they are
 * equal, replaces the bits set in the Swap Mask; a plain 64-bit compare-and-swap sends both masks
 * as all ones. Swap replaces the bits set in the Swap Mask. Compare Data and Compare Mask are
 * unused (zero) for FetchAdd and Swap.
 *
 * <p>Checked: field order and sizes, the opcode in the low 4 bits of the first word and the
 * values FetchAdd 0 and CompareSwap 2 agree with Wireshark's dissector
 * ({@code packet-iwarp-ddp-rdmap.c}, {@code dissect_iwarp_atomic}, {@code rdma_atomic_opcode_names})
 * and tshark 4.0.17 decodes jrdma's requests with the values sent (the repository's
 * {@code testdata/pcaps/jrdma-iwarp-rfc7306.pcap}). Queue 1 and the mask semantics agree with urdma's
 * RFC 7306 atomics ({@code zrlio/urdma}, "masked FetchAdd/CmpSwap ... follows the pseudocode
 * specified in RFC 7306"). From RFC 7306 as recalled, not read here: Swap = 1 (Wireshark names
 * only 0 and 2; urdma, which has no Swap, sends CmpSwap as 1 and would not interoperate).
 * docs/iwarp-wire.md has the details.
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

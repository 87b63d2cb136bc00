package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RFC 7306 Atomic Response header, 12 bytes after the untagged DDP header of an
 * ATOMIC_RESPONSE message: {@code Original Request Identifier (32) | Original Remote Data
 * Value (64)}, nothing after it. Sent as one DDP segment on queue 3 (the queue RFC 7306 adds for
 * Atomic Responses), whose MSNs start at 1 and count Atomic Responses only.
 *
 * <p>Checked: the layout is Wireshark's ({@code dissect_iwarp_atomic}) and urdma's
 * ({@code struct rdmap_atomicresp_packet}); tshark 4.0.17 decodes jrdma's responses with the
 * identifier and value sent; queue 3 is urdma's. See docs/iwarp-wire.md.
 */
public final class AtomicResponse {
    private AtomicResponse() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 12;

    /** The request identifier of the Atomic Request this answers. */
    public static int originalRequestId(MemorySegment s, long off) {
        return s.get(BE32, off);
    }

    /** The 8-byte target's value before the operation. */
    public static long originalValue(MemorySegment s, long off) {
        return s.get(BE64, off + 4);
    }

    /** Writes all 12 bytes. */
    public static void write(MemorySegment s, long off, int originalRequestId,
            long originalValue) {
        s.set(BE32, off, originalRequestId);
        s.set(BE64, off + 4, originalValue);
    }
}

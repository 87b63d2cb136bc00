package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RFC 7306 Atomic Response header, 12 bytes after the untagged DDP header of an
 * ATOMIC_RESPONSE message: {@code Original Request Identifier (32) | Original Remote Data
 * Value (64)}. As recalled from RFC 7306 and as Wireshark reads it; not checked against a
 * capture.
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

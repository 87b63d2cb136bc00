package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RFC 7306 Immediate Data header: 8 bytes of immediate data after the untagged DDP header
 * of an IMMEDIATE_DATA or IMMEDIATE_DATA_SE message (queue number 0), which carries no
 * other payload. Layout recalled from RFC 7306, not checked against a capture (siw does not
 * implement RFC 7306).
 */
public final class ImmediateData {
    private ImmediateData() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 8;

    /** The 8 bytes of immediate data as a big-endian long. */
    public static long value(MemorySegment s, long off) {
        return s.get(BE64, off);
    }

    /** Writes the 8 bytes of immediate data (big-endian). */
    public static void write(MemorySegment s, long off, long value) {
        s.set(BE64, off, value);
    }
}

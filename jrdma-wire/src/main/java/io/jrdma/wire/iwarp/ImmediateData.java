package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RFC 7306 Immediate Data header: 8 bytes of immediate data after the untagged DDP header
 * of an IMMEDIATE_DATA or IMMEDIATE_DATA_SE message (opcodes 8 and 9, queue 0, the Send
 * queue's MSNs). An RFC 7306 Immediate Data message is these 8 bytes alone; jrdma's
 * SEND_WITH_IMM appends its payload after them, an extension used only between jrdma peers
 * (docs/iwarp-design.md).
 *
 * <p>Not checked against an independent source: Wireshark (4.0.17 and its current dissector)
 * shows opcodes 8 and 9 as "Unknown" and decodes only their DDP header, urdma names the opcodes
 * but never sends them, Linux siw has no RFC 7306. Opcodes, queue and layout are RFC 7306 as
 * recalled; see docs/iwarp-wire.md.
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

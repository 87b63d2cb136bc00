package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;

import java.lang.foreign.MemorySegment;

/**
 * RDMA Read Request header (RFC 5040 §4), 28 bytes after the untagged DDP header of an
 * RDMAP READ_REQUEST (queue number 1); also the "terminated RDMAP header" of a TERMINATE.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                       Data Sink STag                          |  bytes 0-3
 * |                  Data Sink Tagged Offset (64)                 |  bytes 4-11
 * |                   RDMA Read Message Size                      |  bytes 12-15
 * |                      Data Source STag                         |  bytes 16-19
 * |                 Data Source Tagged Offset (64)                |  bytes 20-27
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>The responder answers with READ_RESPONSE segments tagged with the sink STag and sink
 * TO (advancing), reading from the source STag/TO. The message size is unsigned 32 bits.
 * Source: RFC 5040 §4; Linux siw {@code struct iwarp_rdma_rreq}.
 */
public final class ReadRequest {
    private ReadRequest() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 28;

    /** Data sink STag (the requester's buffer, target of the READ_RESPONSE). */
    public static int sinkStag(MemorySegment s, long off) {
        return s.get(BE32, off);
    }

    /** Data sink tagged offset. */
    public static long sinkTaggedOffset(MemorySegment s, long off) {
        return s.get(BE64, off + 4);
    }

    /** RDMA Read message size in bytes (unsigned 32 bits, as an int). */
    public static int messageSize(MemorySegment s, long off) {
        return s.get(BE32, off + 12);
    }

    /** Data source STag (the responder's buffer). */
    public static int sourceStag(MemorySegment s, long off) {
        return s.get(BE32, off + 16);
    }

    /** Data source tagged offset. */
    public static long sourceTaggedOffset(MemorySegment s, long off) {
        return s.get(BE64, off + 20);
    }

    /** Writes all 28 bytes. */
    public static void write(MemorySegment s, long off, int sinkStag, long sinkTaggedOffset,
            int messageSize, int sourceStag, long sourceTaggedOffset) {
        s.set(BE32, off, sinkStag);
        s.set(BE64, off + 4, sinkTaggedOffset);
        s.set(BE32, off + 12, messageSize);
        s.set(BE32, off + 16, sourceStag);
        s.set(BE64, off + 20, sourceTaggedOffset);
    }
}

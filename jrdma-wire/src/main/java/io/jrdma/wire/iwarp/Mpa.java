package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE16;
import static io.jrdma.wire.internal.Layouts.BE64;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * MPA Request and Reply frames (RFC 5044 §7.1, RFC 6581): the first bytes each side
 * sends on the TCP connection, before any FPDU ({@link Fpdu}).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |   Key: "MPA ID Req Frame" (Request) or "MPA ID Rep Frame"     |  bytes 0-15
 * |   (4D 50 41 20 49 44 20 52 65 71|70 20 46 72 61 6D 65)        |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |M|C|R|H| Res   |     Rev       |          PD_Length            |  bytes 16-19
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |          Private Data (PD_Length bytes, at most 512)          |  bytes 20-
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>M = the sender wants to receive markers (jrdma refuses them: {@link #check} reports
 * {@link IwarpError#MPA_MARKERS_UNSUPPORTED}); C = CRC wanted (in use if either side sets
 * it); R = reject (Reply only); H (0x10) = enhanced connection establishment, set with
 * Rev 2 by Linux siw ({@code MPA_RR_FLAG_ENHANCED}) and cxgb4
 * ({@code MPA_ENHANCED_RDMA_CONN}) — kept as a named flag, not required on decode; the low
 * nibble is reserved (sent zero, not checked). Rev 1 = RFC 5044, Rev 2 = RFC 6581, whose
 * private data starts with the 4-byte IRD/ORD block ({@link MpaEnhanced}). siw limits the
 * private data it accepts to 256 bytes ({@code MPA_MAX_PRIVDATA}); jrdma's application part
 * is limited to {@link #MAX_APPLICATION_DATA}.
 * Source: RFC 5044 §7.1; RFC 6581; Linux siw {@code iwarp.h}
 * ({@code struct mpa_rr}, {@code MPA_RR_FLAG_*}, {@code MPA_RR_MASK_REVISION}); the siw
 * captures (flags 0x10, Rev 2, PD_Length 4 in every frame).
 *
 * <p>All methods are static, take the offset of the frame and never allocate.
 */
public final class Mpa {
    private Mpa() {
    }

    /** Length of the key. */
    public static final int KEY_LENGTH = 16;
    /** Offset of the flags byte. */
    public static final int FLAGS_OFFSET = 16;
    /** Offset of the revision byte. */
    public static final int REVISION_OFFSET = 17;
    /** Offset of PD_Length. */
    public static final int PD_LENGTH_OFFSET = 18;
    /** Offset of the private data; also the frame length without private data. */
    public static final int PRIVATE_DATA_OFFSET = 20;
    /** Frame length without private data. */
    public static final int HEADER_LENGTH = 20;

    /** Flag: markers wanted. */
    public static final int FLAG_MARKERS = 0x80;
    /** Flag: CRC wanted. */
    public static final int FLAG_CRC = 0x40;
    /** Flag: connection rejected (Reply). */
    public static final int FLAG_REJECT = 0x20;
    /** Flag: enhanced connection establishment (Linux siw/cxgb4 with revision 2). */
    public static final int FLAG_ENHANCED = 0x10;
    /** Reserved flag bits. */
    public static final int FLAGS_RESERVED = 0x0F;

    /** Revision of RFC 5044. */
    public static final int REVISION_1 = 1;
    /** Revision of RFC 6581 (enhanced connection establishment). */
    public static final int REVISION_2 = 2;
    /** Largest PD_Length RFC 5044 allows. */
    public static final int MAX_PRIVATE_DATA = 512;
    /** Largest application private data jrdma sends (after the RFC 6581 block). */
    public static final int MAX_APPLICATION_DATA = 256;

    /** "MPA ID R", the first 8 key bytes of both frames, as a big-endian long. */
    private static final long KEY_HEAD = 0x4D50_4120_4944_2052L;
    /** "eq Frame". */
    private static final long KEY_TAIL_REQUEST = 0x6571_2046_7261_6D65L;
    /** "ep Frame". */
    private static final long KEY_TAIL_REPLY = 0x6570_2046_7261_6D65L;

    /** True if the 16 bytes at {@code off} are "MPA ID Req Frame". */
    public static boolean isRequestKey(MemorySegment s, long off) {
        return s.get(BE64, off) == KEY_HEAD && s.get(BE64, off + 8) == KEY_TAIL_REQUEST;
    }

    /** True if the 16 bytes at {@code off} are "MPA ID Rep Frame". */
    public static boolean isReplyKey(MemorySegment s, long off) {
        return s.get(BE64, off) == KEY_HEAD && s.get(BE64, off + 8) == KEY_TAIL_REPLY;
    }

    /** The flags byte (M, C, R, H, reserved). */
    public static int flags(MemorySegment s, long off) {
        return s.get(U8, off + FLAGS_OFFSET) & 0xFF;
    }

    /** M: markers wanted. */
    public static boolean markers(MemorySegment s, long off) {
        return (flags(s, off) & FLAG_MARKERS) != 0;
    }

    /** C: CRC wanted. */
    public static boolean crc(MemorySegment s, long off) {
        return (flags(s, off) & FLAG_CRC) != 0;
    }

    /** R: rejected. */
    public static boolean reject(MemorySegment s, long off) {
        return (flags(s, off) & FLAG_REJECT) != 0;
    }

    /** Rev. */
    public static int revision(MemorySegment s, long off) {
        return s.get(U8, off + REVISION_OFFSET) & 0xFF;
    }

    /** PD_Length. */
    public static int privateDataLength(MemorySegment s, long off) {
        return s.get(BE16, off + PD_LENGTH_OFFSET) & 0xFFFF;
    }

    /** Writes key, flags, revision and PD_Length (20 bytes); the private data follows. */
    public static void writeHeader(MemorySegment s, long off, boolean reply, int flags,
            int revision, int privateDataLength) {
        s.set(BE64, off, KEY_HEAD);
        s.set(BE64, off + 8, reply ? KEY_TAIL_REPLY : KEY_TAIL_REQUEST);
        s.set(U8, off + FLAGS_OFFSET, (byte) flags);
        s.set(U8, off + REVISION_OFFSET, (byte) revision);
        s.set(BE16, off + PD_LENGTH_OFFSET, (short) privateDataLength);
    }

    /**
     * Checks the Request ({@code reply == false}) or Reply frame at {@code off}, of which
     * {@code available} bytes are in the segment: returns the frame length
     * ({@code 20 + PD_Length}) when it is complete and valid, 0 when more bytes are needed,
     * or a negative {@link IwarpError} result: {@link IwarpError#MPA_BAD_KEY},
     * {@link IwarpError#MPA_WRONG_KEY}, {@link IwarpError#MPA_BAD_REVISION},
     * {@link IwarpError#MPA_MARKERS_UNSUPPORTED},
     * {@link IwarpError#MPA_PRIVATE_DATA_TOO_LONG},
     * {@link IwarpError#MPA_ENHANCED_DATA_MISSING}. The key is checked as soon as 16 bytes
     * are there, so a peer that speaks something else is rejected early.
     */
    public static int check(MemorySegment s, long off, long available, boolean reply) {
        if (available < KEY_LENGTH) {
            return 0;
        }
        if (reply ? !isReplyKey(s, off) : !isRequestKey(s, off)) {
            boolean other = reply ? isRequestKey(s, off) : isReplyKey(s, off);
            return other ? IwarpError.MPA_WRONG_KEY.result() : IwarpError.MPA_BAD_KEY.result();
        }
        if (available < HEADER_LENGTH) {
            return 0;
        }
        int rev = revision(s, off);
        if (rev != REVISION_1 && rev != REVISION_2) {
            return IwarpError.MPA_BAD_REVISION.result();
        }
        if (markers(s, off)) {
            return IwarpError.MPA_MARKERS_UNSUPPORTED.result();
        }
        int pd = privateDataLength(s, off);
        if (pd > MAX_PRIVATE_DATA) {
            return IwarpError.MPA_PRIVATE_DATA_TOO_LONG.result();
        }
        if (rev == REVISION_2 && pd < MpaEnhanced.LENGTH) {
            return IwarpError.MPA_ENHANCED_DATA_MISSING.result();
        }
        int total = HEADER_LENGTH + pd;
        return available >= total ? total : 0;
    }
}

package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE16;
import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * RDMAP TERMINATE header (RFC 5040 §4.8), carried after the untagged DDP header of a
 * TERMINATE message (opcode 7, queue number 2), and the error constants of RFC 5040 §7
 * (RDMAP), RFC 5041 §7 (DDP) and RFC 5044 / RFC 6581 (MPA, the LLP), as registered by
 * RFC 6580.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * | Layer | EType |  Error Code   |M|D|R|        Reserved         |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  DDP Segment Length (if D)    |                               |  bytes 4-5
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
 * |   Terminated DDP header, 14 (tagged) or 18 (untagged) bytes   |  if D
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |   Terminated RDMAP header: the 28-byte READ Request header    |  if R
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>HdrCt bits: M = the DDP Segment Length is valid, D = the terminated DDP header is
 * included, R = the terminated RDMAP header is included. The segment length field is
 * present exactly when D is set (Linux siw {@code siw_send_terminate}, which copies the
 * failed frame's header from its MPA length field on and overwrites that field with the
 * segment length, and Wireshark both lay it out so); whether the copied DDP header is 14 or
 * 18 bytes follows from its own T bit. siw sets M and D together and sends MSN 1, MO 0.
 * Source: RFC 5040 §4.8; Linux {@code iwarp.h} ({@code struct iwarp_terminate},
 * {@code TERM_MASK_LAYER 0xf0000000}, {@code TERM_FLAG_M 0x8000} ...; enums
 * {@code term_elayer}, {@code rdmap_etype}, {@code rdmap_ecode}, {@code ddp_etype},
 * {@code ddp_ecode}, {@code llp_ecode}).
 */
public final class Terminate {
    private Terminate() {
    }

    /** Length of the fixed part (the control word). */
    public static final int CONTROL_LENGTH = 4;
    /** Offset of the DDP Segment Length field (present if D). */
    public static final int SEGMENT_LENGTH_OFFSET = 4;
    /** Offset of the terminated DDP header (present if D). */
    public static final int DDP_HEADER_OFFSET = 6;
    /** Length of the terminated RDMAP header (present if R): a READ Request header. */
    public static final int RDMAP_HEADER_LENGTH = ReadRequest.LENGTH;

    /** HdrCt bit in byte 2: DDP Segment Length valid. */
    public static final int FLAG_M = 0x80;
    /** HdrCt bit in byte 2: terminated DDP header included. */
    public static final int FLAG_D = 0x40;
    /** HdrCt bit in byte 2: terminated RDMAP header included. */
    public static final int FLAG_R = 0x20;

    /** Layer: RDMAP. */
    public static final int LAYER_RDMAP = 0;
    /** Layer: DDP. */
    public static final int LAYER_DDP = 1;
    /** Layer: the lower layer protocol, i.e. MPA over TCP. */
    public static final int LAYER_LLP = 2;

    /** RDMAP error type: local catastrophic error (error code 0 / unspecified). */
    public static final int RDMAP_ETYPE_LOCAL_CATASTROPHIC = 0;
    /** RDMAP error type: remote protection error. */
    public static final int RDMAP_ETYPE_REMOTE_PROTECTION = 1;
    /** RDMAP error type: remote operation error. */
    public static final int RDMAP_ETYPE_REMOTE_OPERATION = 2;

    /** RDMAP error code: invalid STag. */
    public static final int RDMAP_INVALID_STAG = 0x00;
    /** RDMAP error code: base or bounds violation. */
    public static final int RDMAP_BASE_BOUNDS = 0x01;
    /** RDMAP error code: access rights violation. */
    public static final int RDMAP_ACCESS_RIGHTS = 0x02;
    /** RDMAP error code: STag not associated with the RDMAP stream. */
    public static final int RDMAP_STAG_NOT_ASSOCIATED = 0x03;
    /** RDMAP error code: tagged offset wrap. */
    public static final int RDMAP_TO_WRAP = 0x04;
    /** RDMAP error code: invalid RDMAP version. */
    public static final int RDMAP_INVALID_VERSION = 0x05;
    /** RDMAP error code: unexpected opcode. */
    public static final int RDMAP_UNEXPECTED_OPCODE = 0x06;
    /** RDMAP error code: catastrophic error, localized to the RDMAP stream. */
    public static final int RDMAP_CATASTROPHIC_STREAM = 0x07;
    /** RDMAP error code: catastrophic error, global. */
    public static final int RDMAP_CATASTROPHIC_GLOBAL = 0x08;
    /** RDMAP error code: STag cannot be invalidated. */
    public static final int RDMAP_STAG_CANNOT_INVALIDATE = 0x09;
    /** RDMAP error code: unspecified error. */
    public static final int RDMAP_UNSPECIFIED = 0xFF;

    /** DDP error type: local catastrophic error. */
    public static final int DDP_ETYPE_CATASTROPHIC = 0;
    /** DDP error type: tagged buffer error. */
    public static final int DDP_ETYPE_TAGGED = 1;
    /** DDP error type: untagged buffer error. */
    public static final int DDP_ETYPE_UNTAGGED = 2;
    /** DDP error type 3: reserved for the LLP. */
    public static final int DDP_ETYPE_RESERVED_LLP = 3;

    /** DDP tagged error code: invalid STag. */
    public static final int DDP_TAGGED_INVALID_STAG = 0x00;
    /** DDP tagged error code: base or bounds violation. */
    public static final int DDP_TAGGED_BASE_BOUNDS = 0x01;
    /** DDP tagged error code: STag not associated with the DDP stream. */
    public static final int DDP_TAGGED_STAG_NOT_ASSOCIATED = 0x02;
    /** DDP tagged error code: tagged offset wrap. */
    public static final int DDP_TAGGED_TO_WRAP = 0x03;
    /** DDP tagged error code: invalid DDP version. */
    public static final int DDP_TAGGED_INVALID_VERSION = 0x04;

    /** DDP untagged error code: invalid queue number. */
    public static final int DDP_UNTAGGED_INVALID_QN = 0x01;
    /** DDP untagged error code: invalid MSN, no buffer available. */
    public static final int DDP_UNTAGGED_INVALID_MSN_NO_BUFFER = 0x02;
    /** DDP untagged error code: invalid MSN, MSN range is not valid. */
    public static final int DDP_UNTAGGED_INVALID_MSN_RANGE = 0x03;
    /** DDP untagged error code: invalid message offset. */
    public static final int DDP_UNTAGGED_INVALID_MO = 0x04;
    /** DDP untagged error code: DDP message too long for the available buffer. */
    public static final int DDP_UNTAGGED_MESSAGE_TOO_LONG = 0x05;
    /** DDP untagged error code: invalid DDP version. */
    public static final int DDP_UNTAGGED_INVALID_VERSION = 0x06;

    /** LLP error type: MPA. */
    public static final int LLP_ETYPE_MPA = 0;
    /** MPA error code: TCP connection closed, terminated or lost. */
    public static final int LLP_TCP_LOST = 0x01;
    /** MPA error code: received MPA CRC does not match. */
    public static final int LLP_CRC_ERROR = 0x02;
    /** MPA error code: marker and ULPDU_Length mismatch (jrdma: any invalid ULPDU_Length). */
    public static final int LLP_ULPDU_LENGTH = 0x03;
    /** MPA error code: invalid MPA Request or Reply frame. */
    public static final int LLP_INVALID_REQUEST_REPLY = 0x04;
    /** MPA error code (RFC 6581, enhanced connection setup only): local catastrophic error. */
    public static final int LLP_LOCAL_CATASTROPHIC = 0x05;
    /** MPA error code (RFC 6581): insufficient IRD resources. */
    public static final int LLP_INSUFFICIENT_IRD = 0x06;
    /** MPA error code (RFC 6581): no matching RTR option. */
    public static final int LLP_NO_MATCHING_RTR = 0x07;

    /** Layer, 4 bits. */
    public static int layer(MemorySegment s, long off) {
        return (s.get(U8, off) & 0xF0) >>> 4;
    }

    /** Error type (EType), 4 bits. */
    public static int errorType(MemorySegment s, long off) {
        return s.get(U8, off) & 0x0F;
    }

    /** Error code, 8 bits. */
    public static int errorCode(MemorySegment s, long off) {
        return s.get(U8, off + 1) & 0xFF;
    }

    /** HdrCt bits as found in byte 2 ({@link #FLAG_M}, {@link #FLAG_D}, {@link #FLAG_R}). */
    public static int headerControl(MemorySegment s, long off) {
        return s.get(U8, off + 2) & (FLAG_M | FLAG_D | FLAG_R);
    }

    /** The 13 reserved bits. */
    public static int reserved(MemorySegment s, long off) {
        return s.get(BE16, off + 2) & 0x1FFF;
    }

    /** DDP Segment Length (valid if M; present only if D). */
    public static int segmentLength(MemorySegment s, long off) {
        return s.get(BE16, off + SEGMENT_LENGTH_OFFSET) & 0xFFFF;
    }

    /**
     * Length of the whole TERMINATE header at {@code off} as its HdrCt bits lay it out, or a
     * negative {@link IwarpError} result if fewer than {@code available} bytes hold it
     * ({@link IwarpError#ULPDU_TOO_SHORT}).
     */
    public static int length(MemorySegment s, long off, int available) {
        if (available < CONTROL_LENGTH) {
            return IwarpError.ULPDU_TOO_SHORT.result();
        }
        int hdrct = headerControl(s, off);
        int len = CONTROL_LENGTH;
        if ((hdrct & FLAG_D) != 0) {
            if (available < DDP_HEADER_OFFSET + 1) {
                return IwarpError.ULPDU_TOO_SHORT.result();
            }
            boolean tagged = (s.get(U8, off + DDP_HEADER_OFFSET) & Ddp.FLAG_TAGGED) != 0;
            len = DDP_HEADER_OFFSET
                    + (tagged ? Ddp.TAGGED_HEADER_LENGTH : Ddp.UNTAGGED_HEADER_LENGTH);
        }
        if ((hdrct & FLAG_R) != 0) {
            len += RDMAP_HEADER_LENGTH;
        }
        return len <= available ? len : IwarpError.ULPDU_TOO_SHORT.result();
    }

    /**
     * Writes the control word (reserved bits zero). The optional parts are the caller's:
     * {@link #segmentLength(MemorySegment, long, int)}, then the copied headers at
     * {@link #DDP_HEADER_OFFSET}.
     */
    public static void write(MemorySegment s, long off, int layer, int errorType, int errorCode,
            int headerControl) {
        s.set(BE32, off, ((layer & 0xF) << 28) | ((errorType & 0xF) << 24)
                | ((errorCode & 0xFF) << 16) | ((headerControl & 0xE0) << 8));
    }

    /** Writes the DDP Segment Length field. */
    public static void segmentLength(MemorySegment s, long off, int length) {
        s.set(BE16, off + SEGMENT_LENGTH_OFFSET, (short) length);
    }
}

package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.BE64;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * DDP segment header (RFC 5041 §4), the start of every ULPDU (right after the 2-byte MPA
 * ULPDU_Length). All offsets are relative to the first byte of this header.
 *
 * <pre>
 * Tagged buffer model (T = 1), 14 bytes:
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |T|L| Rsvd  | DV|   RsvdULP     |        STag (bits 31-16)      |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |       STag (bits 15-0)        |   Tagged Offset (bits 63-48)  |  bytes 4-7
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                  Tagged Offset (bits 47-16)                   |  bytes 8-11
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  Tagged Offset (bits 15-0)    |                                  bytes 12-13
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * Untagged buffer model (T = 0), 18 bytes:
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |T|L| Rsvd  | DV|   RsvdULP (40 bits): byte 1 = RDMAP control,  |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |  bytes 2-5 = Invalidate STag for SEND with Invalidate, else 0 |  bytes 4-5 ...
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                      Queue Number (QN)                        |  bytes 6-9
 * |                Message Sequence Number (MSN)                  |  bytes 10-13
 * |                     Message Offset (MO)                       |  bytes 14-17
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>T = tagged (0x80 of byte 0), L = last segment of the DDP message (0x40), Rsvd (0x3C,
 * sent as zero, not checked), DV = DDP version (0x03, must be 1). The first RsvdULP byte is
 * the RDMAP control byte ({@link Rdmap}). MSN counts the messages of each untagged queue,
 * starting at 1; MO is the byte offset of this segment in its message.
 * Source: RFC 5041 §4; Linux siw {@code iwarp.h}
 * ({@code DDP_FLAG_TAGGED 0x8000}, {@code DDP_FLAG_LAST 0x4000},
 * {@code DDP_MASK_RESERVED 0x3C00}, {@code DDP_MASK_VERSION 0x0300} on the 16-bit
 * DDP/RDMAP control word; {@code struct iwarp_ctrl_tagged}, {@code iwarp_ctrl_untagged}).
 *
 * <p>All methods are static, take the offset of the DDP header and never allocate.
 */
public final class Ddp {
    private Ddp() {
    }

    /** DDP version carried in DV. */
    public static final int VERSION = 1;
    /** Tagged header length, including the DDP control and RsvdULP bytes. */
    public static final int TAGGED_HEADER_LENGTH = 14;
    /** Untagged header length, including the DDP control and RsvdULP bytes. */
    public static final int UNTAGGED_HEADER_LENGTH = 18;

    /** Byte 0 flag: tagged buffer model. */
    public static final int FLAG_TAGGED = 0x80;
    /** Byte 0 flag: last segment of the DDP message. */
    public static final int FLAG_LAST = 0x40;
    /** Byte 0: reserved bits. */
    public static final int RESERVED_MASK = 0x3C;
    /** Byte 0: DDP version bits. */
    public static final int VERSION_MASK = 0x03;

    /** Offset of the first RsvdULP byte (the RDMAP control byte). */
    public static final int ULP_CONTROL_OFFSET = 1;
    /** Tagged: offset of the STag. */
    public static final int STAG_OFFSET = 2;
    /** Tagged: offset of the 64-bit Tagged Offset. */
    public static final int TO_OFFSET = 6;
    /** Untagged: offset of the 32-bit RsvdULP word after the RDMAP control byte. */
    public static final int ULP_WORD_OFFSET = 2;
    /** Untagged: offset of the Queue Number. */
    public static final int QN_OFFSET = 6;
    /** Untagged: offset of the Message Sequence Number. */
    public static final int MSN_OFFSET = 10;
    /** Untagged: offset of the Message Offset. */
    public static final int MO_OFFSET = 14;

    /** Byte 0 as a whole (T, L, reserved, DV). */
    public static int control(MemorySegment s, long off) {
        return s.get(U8, off) & 0xFF;
    }

    /** T: tagged buffer model. */
    public static boolean tagged(MemorySegment s, long off) {
        return (s.get(U8, off) & FLAG_TAGGED) != 0;
    }

    /** L: last segment of the message. */
    public static boolean last(MemorySegment s, long off) {
        return (s.get(U8, off) & FLAG_LAST) != 0;
    }

    /** DV: DDP version (1). */
    public static int version(MemorySegment s, long off) {
        return s.get(U8, off) & VERSION_MASK;
    }

    /** The reserved bits of byte 0 (sent as zero). */
    public static int reserved(MemorySegment s, long off) {
        return (s.get(U8, off) & RESERVED_MASK) >>> 2;
    }

    /** The first RsvdULP byte: the RDMAP control byte. */
    public static int ulpControl(MemorySegment s, long off) {
        return s.get(U8, off + ULP_CONTROL_OFFSET) & 0xFF;
    }

    /** Header length for the T bit: 14 (tagged) or 18 (untagged). */
    public static int headerLength(MemorySegment s, long off) {
        return tagged(s, off) ? TAGGED_HEADER_LENGTH : UNTAGGED_HEADER_LENGTH;
    }

    /** Tagged: the data sink STag. */
    public static int stag(MemorySegment s, long off) {
        return s.get(BE32, off + STAG_OFFSET);
    }

    /** Tagged: the data sink Tagged Offset of this segment's first payload byte. */
    public static long taggedOffset(MemorySegment s, long off) {
        return s.get(BE64, off + TO_OFFSET);
    }

    /** Untagged: the 32-bit RsvdULP word (the Invalidate STag for SEND with Invalidate). */
    public static int ulpWord(MemorySegment s, long off) {
        return s.get(BE32, off + ULP_WORD_OFFSET);
    }

    /** Untagged: queue number (unsigned 32 bits, as an int). */
    public static int queueNumber(MemorySegment s, long off) {
        return s.get(BE32, off + QN_OFFSET);
    }

    /** Untagged: message sequence number (unsigned 32 bits, as an int). */
    public static int msn(MemorySegment s, long off) {
        return s.get(BE32, off + MSN_OFFSET);
    }

    /** Untagged: message offset (unsigned 32 bits, as an int). */
    public static int messageOffset(MemorySegment s, long off) {
        return s.get(BE32, off + MO_OFFSET);
    }

    /** The control byte for the given flags, reserved bits zero, DV = 1. */
    public static int controlByte(boolean tagged, boolean last) {
        return (tagged ? FLAG_TAGGED : 0) | (last ? FLAG_LAST : 0) | VERSION;
    }

    /** Writes a whole tagged header (14 bytes), DV = 1 and reserved bits zero. */
    public static void writeTagged(MemorySegment s, long off, boolean last, int ulpControl,
            int stag, long taggedOffset) {
        s.set(U8, off, (byte) controlByte(true, last));
        s.set(U8, off + ULP_CONTROL_OFFSET, (byte) ulpControl);
        s.set(BE32, off + STAG_OFFSET, stag);
        s.set(BE64, off + TO_OFFSET, taggedOffset);
    }

    /** Writes a whole untagged header (18 bytes), DV = 1 and reserved bits zero. */
    public static void writeUntagged(MemorySegment s, long off, boolean last, int ulpControl,
            int ulpWord, int queueNumber, int msn, int messageOffset) {
        s.set(U8, off, (byte) controlByte(false, last));
        s.set(U8, off + ULP_CONTROL_OFFSET, (byte) ulpControl);
        s.set(BE32, off + ULP_WORD_OFFSET, ulpWord);
        s.set(BE32, off + QN_OFFSET, queueNumber);
        s.set(BE32, off + MSN_OFFSET, msn);
        s.set(BE32, off + MO_OFFSET, messageOffset);
    }

    /** Sets or clears L, keeping the rest of byte 0. */
    public static void last(MemorySegment s, long off, boolean last) {
        int b = s.get(U8, off);
        s.set(U8, off, (byte) (last ? (b | FLAG_LAST) : (b & ~FLAG_LAST)));
    }

    /** Tagged: sets the Tagged Offset. */
    public static void taggedOffset(MemorySegment s, long off, long taggedOffset) {
        s.set(BE64, off + TO_OFFSET, taggedOffset);
    }

    /** Untagged: sets the message offset. */
    public static void messageOffset(MemorySegment s, long off, int messageOffset) {
        s.set(BE32, off + MO_OFFSET, messageOffset);
    }

    /** Untagged: sets the MSN. */
    public static void msn(MemorySegment s, long off, int msn) {
        s.set(BE32, off + MSN_OFFSET, msn);
    }

    /**
     * Checks the DDP header of a ULPDU of {@code ulpduLength} bytes: the version, and that
     * the ULPDU holds the header. Returns the header length (14 or 18) or a negative
     * {@link IwarpError} result ({@link IwarpError#DDP_TAGGED_BAD_VERSION},
     * {@link IwarpError#DDP_UNTAGGED_BAD_VERSION}, {@link IwarpError#ULPDU_TOO_SHORT}).
     * Reserved bits are not checked (RFC 5041: ignored on receive).
     */
    public static int check(MemorySegment s, long off, int ulpduLength) {
        if (ulpduLength < 1) {
            return IwarpError.ULPDU_TOO_SHORT.result();
        }
        boolean tagged = tagged(s, off);
        if (version(s, off) != VERSION) {
            return tagged ? IwarpError.DDP_TAGGED_BAD_VERSION.result()
                    : IwarpError.DDP_UNTAGGED_BAD_VERSION.result();
        }
        int len = tagged ? TAGGED_HEADER_LENGTH : UNTAGGED_HEADER_LENGTH;
        return ulpduLength >= len ? len : IwarpError.ULPDU_TOO_SHORT.result();
    }
}

package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE16;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * MPA FPDU framing (RFC 5044 §4) of the TCP byte stream after the Request/Reply
 * exchange, without markers.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |          ULPDU_Length         |                               |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
 * |             ULPDU: DDP header, RDMAP header, payload          |
 * +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                               |   PAD (0-3 bytes)             |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                       CRC (4 bytes)                           |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>ULPDU_Length counts the ULPDU only (not itself, the pad or the CRC); the pad makes
 * {@code 2 + ULPDU_Length + pad} a multiple of 4. The CRC field is <b>always present</b>:
 * when CRC was not negotiated (C bit clear in both MPA frames, the Linux siw default)
 * the sender writes zeros there and the receiver ignores it; when negotiated it holds the
 * CRC32c of length field, ULPDU and pad ({@link Crc32c}, least significant byte first).
 * The siw captures confirm both the 4 zero bytes and the framing. Pad bytes are sent as
 * zero by this codec but are <b>not</b> checked on receive: Linux siw sends stale bytes in
 * the pad of small inline SENDs (observed in the captures).
 *
 * <p>All methods are static, take the offset of the FPDU (its length field) and never
 * allocate.
 */
public final class Fpdu {
    private Fpdu() {
    }

    /** Offset and size of the ULPDU_Length field. */
    public static final int LENGTH_FIELD = 2;
    /** Offset of the ULPDU (the DDP header). */
    public static final int ULPDU_OFFSET = 2;
    /** Size of the CRC field. */
    public static final int CRC_LENGTH = Crc32c.LENGTH;
    /** Smallest ULPDU: a tagged DDP header without payload. */
    public static final int MIN_ULPDU_LENGTH = Ddp.TAGGED_HEADER_LENGTH;
    /** Largest ULPDU the 16-bit length field can express. */
    public static final int MAX_ULPDU_LENGTH = 0xFFFF;
    /** What siw writes in the CRC field when CRC is not in use. */
    public static final int CRC_OFF = 0;

    /** ULPDU_Length, 16 bits. */
    public static int ulpduLength(MemorySegment s, long off) {
        return s.get(BE16, off) & 0xFFFF;
    }

    /** Sets ULPDU_Length. */
    public static void ulpduLength(MemorySegment s, long off, int ulpduLength) {
        s.set(BE16, off, (short) ulpduLength);
    }

    /** Pad bytes after a ULPDU of this length (0..3). */
    public static int padLength(int ulpduLength) {
        return -(LENGTH_FIELD + ulpduLength) & 3;
    }

    /** Offset of the CRC field from the FPDU start. */
    public static int crcOffset(int ulpduLength) {
        return LENGTH_FIELD + ulpduLength + padLength(ulpduLength);
    }

    /** Total FPDU length on the wire: length field, ULPDU, pad, CRC. */
    public static int length(int ulpduLength) {
        return crcOffset(ulpduLength) + CRC_LENGTH;
    }

    /** The ULPDU length that fills an FPDU of at most {@code fpduBytes} (e.g. the TCP MSS). */
    public static int maxUlpduLength(int fpduBytes) {
        int max = ((fpduBytes - CRC_LENGTH) & ~3) - LENGTH_FIELD;
        return Math.min(max, MAX_ULPDU_LENGTH);
    }

    /** The CRC field of the FPDU at {@code off}. */
    public static int crc(MemorySegment s, long off) {
        return Crc32c.read(s, off + crcOffset(ulpduLength(s, off)));
    }

    /** CRC32c over length field, ULPDU and pad of the FPDU at {@code off}. */
    public static int computeCrc(MemorySegment s, long off) {
        return Crc32c.compute(s, off, crcOffset(ulpduLength(s, off)));
    }

    /** True if any pad byte of the FPDU at {@code off} is not zero. */
    public static boolean padNonZero(MemorySegment s, long off) {
        int len = ulpduLength(s, off);
        int pad = padLength(len);
        long p = off + LENGTH_FIELD + len;
        for (int i = 0; i < pad; i++) {
            if (s.get(U8, p + i) != 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * Writes the length field of an FPDU whose ULPDU (already written, or written later at
     * {@code off + 2}) is {@code ulpduLength} bytes.
     */
    public static void writeHeader(MemorySegment s, long off, int ulpduLength) {
        ulpduLength(s, off, ulpduLength);
    }

    /** Writes the zero pad and the CRC field (use {@link #CRC_OFF} when CRC is off). */
    public static void writeTrailer(MemorySegment s, long off, int ulpduLength, int crc) {
        long p = off + LENGTH_FIELD + ulpduLength;
        int pad = padLength(ulpduLength);
        for (int i = 0; i < pad; i++) {
            s.set(U8, p + i, (byte) 0);
        }
        Crc32c.write(s, p + pad, crc);
    }

    /**
     * Writes the zero pad and, if {@code crcEnabled}, the CRC32c of the FPDU (length field,
     * the ULPDU already in place, pad), else {@link #CRC_OFF}. Returns the FPDU length.
     */
    public static int seal(MemorySegment s, long off, int ulpduLength, boolean crcEnabled) {
        writeTrailer(s, off, ulpduLength, CRC_OFF);
        if (crcEnabled) {
            int at = crcOffset(ulpduLength);
            Crc32c.write(s, off + at, Crc32c.compute(s, off, at));
        }
        return length(ulpduLength);
    }

    /**
     * Finds the FPDU starting at {@code off} in a TCP byte stream of which {@code available}
     * bytes are in the segment: returns its total length (length field to CRC) when all of
     * it is there, 0 when more bytes are needed, or a negative {@link IwarpError} result if
     * the length field is impossible ({@link IwarpError#ULPDU_TOO_SHORT} below
     * {@link #MIN_ULPDU_LENGTH}, {@link IwarpError#ULPDU_TOO_LONG} above
     * {@code maxUlpduLength}). Reads at most the 2 length bytes.
     */
    public static int scan(MemorySegment s, long off, long available, int maxUlpduLength) {
        if (available < LENGTH_FIELD) {
            return 0;
        }
        int len = ulpduLength(s, off);
        if (len < MIN_ULPDU_LENGTH) {
            return IwarpError.ULPDU_TOO_SHORT.result();
        }
        if (len > maxUlpduLength) {
            return IwarpError.ULPDU_TOO_LONG.result();
        }
        int total = length(len);
        return available >= total ? total : 0;
    }

    /**
     * Validates one complete FPDU at {@code off} of which {@code available} bytes are in the
     * segment: framing ({@link #scan}; too few bytes is {@link IwarpError#FPDU_TRUNCATED}),
     * the CRC if {@code crcEnabled}, then the DDP and RDMAP headers ({@link Rdmap#check}).
     * Returns the offset of the payload from {@code off} (so the payload is
     * {@code ulpduLength - (result - 2)} bytes) or a negative {@link IwarpError} result.
     * Never throws for bytes inside the segment, never allocates.
     */
    public static int check(MemorySegment s, long off, long available, boolean crcEnabled,
            int maxUlpduLength) {
        int total = scan(s, off, available, maxUlpduLength);
        if (total < 0) {
            return total;
        }
        if (total == 0) {
            return IwarpError.FPDU_TRUNCATED.result();
        }
        int len = ulpduLength(s, off);
        if (crcEnabled) {
            int at = crcOffset(len);
            if (Crc32c.read(s, off + at) != Crc32c.compute(s, off, at)) {
                return IwarpError.CRC_MISMATCH.result();
            }
        }
        int hdr = Rdmap.check(s, off + ULPDU_OFFSET, len);
        return hdr < 0 ? hdr : ULPDU_OFFSET + hdr;
    }
}

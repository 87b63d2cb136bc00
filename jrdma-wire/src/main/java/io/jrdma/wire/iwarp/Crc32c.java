package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.LE32;
import static io.jrdma.wire.internal.Layouts.LE64;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32c (Castagnoli, generator 0x1EDC6F41, reflected, initial value and final XOR all ones):
 * the optional MPA FPDU check (RFC 5044 §4, computed as in RFC 3720; vectors in RFC 3720
 * Appendix B.4).
 *
 * <p><b>Placement on the wire.</b> The value {@link CRC32C#getValue()} returns (e.g.
 * {@code 0x8A9136AA} for 32 zero bytes) goes into the 4-byte field <b>least significant byte
 * first</b> ({@code aa 36 91 8a}). That is the byte sequence RFC 3720 B.4 lists as the CRC of
 * its vectors, what Linux siw writes ({@code put_unaligned_le32(~crc)} / the crypto API's
 * {@code crc32c} digest) and what Wireshark's MPA dissector accepts (it byte-swaps its
 * CRC32c and compares with a big-endian read). "Network order" in the RFCs refers to the
 * reflected bit order of the CRC register, not to a big-endian store of this Java value.
 * {@link #read} and {@link #write} do the placement.
 *
 * <p>The static methods work on {@link MemorySegment} ranges with a pure-Java slicing-by-8
 * table, never allocate and are thread-safe. An instance wraps {@link CRC32C} (an intrinsic
 * in HotSpot) for {@link ByteBuffer} ranges; it is not thread-safe.
 */
public final class Crc32c {
    /** Length of the MPA CRC field in bytes. */
    public static final int LENGTH = 4;

    /** The reflected Castagnoli polynomial. */
    private static final int POLY = 0x82F6_3B78;
    /** Slicing-by-8 tables: {@code TABLE[k * 256 + b]} = CRC of byte b followed by k zeros. */
    private static final int[] TABLE = new int[8 * 256];

    static {
        for (int b = 0; b < 256; b++) {
            int c = b;
            for (int i = 0; i < 8; i++) {
                c = (c & 1) != 0 ? (c >>> 1) ^ POLY : c >>> 1;
            }
            TABLE[b] = c;
        }
        for (int k = 1; k < 8; k++) {
            for (int b = 0; b < 256; b++) {
                int prev = TABLE[(k - 1) * 256 + b];
                TABLE[k * 256 + b] = (prev >>> 8) ^ TABLE[prev & 0xFF];
            }
        }
    }

    private final CRC32C crc = new CRC32C();

    /** Creates a calculator for {@link ByteBuffer} ranges (one per thread). */
    public Crc32c() {
    }

    /** CRC32c of {@code len} bytes of {@code s} starting at {@code off}. */
    public static int compute(MemorySegment s, long off, long len) {
        return update(0, s, off, len);
    }

    /**
     * Continues a CRC32c: {@code crc} is the value computed over the preceding bytes
     * (0 for none), the result covers them and these {@code len} bytes. So
     * {@code update(compute(s, a, n), s, a + n, m) == compute(s, a, n + m)}.
     */
    public static int update(int crc, MemorySegment s, long off, long len) {
        if (len < 0 || off < 0 || off + len > s.byteSize()) {
            throw new IndexOutOfBoundsException(
                    "range [" + off + ", +" + len + ") outside segment of " + s.byteSize());
        }
        int c = ~crc;
        long p = off;
        long end = off + len;
        while (end - p >= 8) {
            long w = s.get(LE64, p);
            int lo = c ^ (int) w;
            int hi = (int) (w >>> 32);
            c = TABLE[7 * 256 + (lo & 0xFF)]
                    ^ TABLE[6 * 256 + ((lo >>> 8) & 0xFF)]
                    ^ TABLE[5 * 256 + ((lo >>> 16) & 0xFF)]
                    ^ TABLE[4 * 256 + (lo >>> 24)]
                    ^ TABLE[3 * 256 + (hi & 0xFF)]
                    ^ TABLE[2 * 256 + ((hi >>> 8) & 0xFF)]
                    ^ TABLE[256 + ((hi >>> 16) & 0xFF)]
                    ^ TABLE[hi >>> 24];
            p += 8;
        }
        while (p < end) {
            c = (c >>> 8) ^ TABLE[(c ^ s.get(U8, p)) & 0xFF];
            p++;
        }
        return ~c;
    }

    /**
     * CRC32c of {@code len} bytes of {@code buf} starting at absolute index {@code off}, with
     * {@link CRC32C}. The buffer's position and limit are restored before returning; direct
     * and writable heap buffers are processed without copying.
     */
    public int compute(ByteBuffer buf, int off, int len) {
        if (len < 0 || off < 0 || (long) off + len > buf.capacity()) {
            throw new IndexOutOfBoundsException(
                    "range [" + off + ", +" + len + ") outside buffer of " + buf.capacity());
        }
        int oldPos = buf.position();
        int oldLim = buf.limit();
        try {
            buf.limit(off + len).position(off);
            crc.reset();
            crc.update(buf);
        } finally {
            buf.limit(oldLim);
            buf.position(oldPos);
        }
        return (int) crc.getValue();
    }

    /** Reads a CRC32c field (least significant byte first, see the class comment). */
    public static int read(MemorySegment s, long off) {
        return s.get(LE32, off);
    }

    /** Writes a CRC32c field (least significant byte first, see the class comment). */
    public static void write(MemorySegment s, long off, int crc) {
        s.set(LE32, off, crc);
    }
}

package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** CRC32c values and their placement in the MPA CRC field. */
class Crc32cTest {
    private static final HexFormat HEX = HexFormat.of();

    /** The CRC field bytes for {@code data}, as the codec places them. */
    private static String field(byte[] data) {
        MemorySegment s = MemorySegment.ofArray(new byte[4]);
        Crc32c.write(s, 0, Crc32c.compute(MemorySegment.ofArray(data), 0, data.length));
        return HEX.formatHex(s.toArray(ValueLayout.JAVA_BYTE));
    }

    /** RFC 3720 Appendix B.4: data and the CRC bytes as listed there (transmission order). */
    @Test
    void rfc3720AppendixB4() {
        byte[] zeros = new byte[32];
        byte[] ones = new byte[32];
        byte[] inc = new byte[32];
        byte[] dec = new byte[32];
        for (int i = 0; i < 32; i++) {
            ones[i] = (byte) 0xFF;
            inc[i] = (byte) i;
            dec[i] = (byte) (31 - i);
        }
        byte[] read10 = HEX.parseHex("01c00000000000000000000000000000"
                + "14000000000004000000001400000018"
                + "28000000000000000200000000000000");
        assertEquals("aa36918a", field(zeros));
        assertEquals("43aba862", field(ones));
        assertEquals("4e79dd46", field(inc));
        assertEquals("5cdb3f11", field(dec));
        assertEquals("563a96d9", field(read10));
        // the value as java.util.zip.CRC32C reports it is the little-endian reading
        assertEquals(0x8A9136AA, Crc32c.compute(MemorySegment.ofArray(zeros), 0, 32));
        assertEquals(0x8A9136AA, Crc32c.read(MemorySegment.ofArray(HEX.parseHex("aa36918a")), 0));
    }

    @Test
    void checkValue() {
        byte[] b = "123456789".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        assertEquals(0xE3069283, Crc32c.compute(MemorySegment.ofArray(b), 0, b.length));
        assertEquals(0, Crc32c.compute(MemorySegment.ofArray(b), 3, 0));
    }

    /**
     * A real FPDU (rping's first SEND, iwarp-rping.pcap frame 8) sealed with CRC on. The CRC
     * field was verified with Wireshark 4.0.17: with the C flag set in the MPA frames it
     * reports "Good CRC32" for this and every other FPDU of the capture sealed this way.
     */
    @Test
    void fpduVectorCheckedByWireshark() {
        byte[] fpdu = HEX.parseHex("0022414300000000000000000000000100000000"
                + "000056534d637b603cd5d40000000040" + "00000000");
        MemorySegment s = MemorySegment.ofArray(fpdu);
        assertEquals(40, Fpdu.seal(s, 0, Fpdu.ulpduLength(s, 0), true));
        assertEquals("0eb7265a", HEX.formatHex(fpdu, 36, 40));
        assertEquals(0x5A26B70E, Fpdu.crc(s, 0));
        assertEquals(Fpdu.ULPDU_OFFSET + 18, Fpdu.check(s, 0, 40, true, 65535));
        fpdu[30] ^= 1;
        assertEquals(IwarpError.CRC_MISMATCH.result(), Fpdu.check(s, 0, 40, true, 65535));
        assertEquals(Fpdu.ULPDU_OFFSET + 18, Fpdu.check(s, 0, 40, false, 65535),
                "CRC not negotiated: field ignored");
    }

    @Test
    void padIsCovered() {
        byte[] fpdu = new byte[24];
        MemorySegment s = MemorySegment.ofArray(fpdu);
        Fpdu.writeHeader(s, 0, 16);                    // 2 + 16 -> 2 pad bytes
        Ddp.writeTagged(s, 2, true, Rdmap.controlByte(Rdmap.READ_RESPONSE), 0x1234, 0x5678L);
        fpdu[16] = 'h';
        fpdu[17] = 'i';
        Fpdu.seal(s, 0, 16, true);
        assertEquals(Fpdu.ULPDU_OFFSET + 14, Fpdu.check(s, 0, 24, true, 65535));
        fpdu[19] = 1;                                  // a pad byte
        assertEquals(IwarpError.CRC_MISMATCH.result(), Fpdu.check(s, 0, 24, true, 65535));
        assertEquals(Fpdu.ULPDU_OFFSET + 14, Fpdu.check(s, 0, 24, false, 65535),
                "non-zero pad is accepted without CRC (siw sends such pads)");
    }

    @Test
    void tableImplementationMatchesTheJdk() {
        Random rnd = new Random(42);
        CRC32C jdk = new CRC32C();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment native_ = arena.allocate(1100);
            byte[] data = new byte[1100];
            rnd.nextBytes(data);
            MemorySegment.copy(data, 0, native_, ValueLayout.JAVA_BYTE, 0, data.length);
            MemorySegment heap = MemorySegment.ofArray(data);
            for (int len = 0; len < 300; len++) {
                int off = rnd.nextInt(8);
                jdk.reset();
                jdk.update(data, off, len);
                int expected = (int) jdk.getValue();
                assertEquals(expected, Crc32c.compute(heap, off, len), "len " + len);
                assertEquals(expected, Crc32c.compute(native_, off, len), "len " + len);
                int split = len / 3;
                assertEquals(expected, Crc32c.update(Crc32c.compute(heap, off, split),
                        heap, off + split, len - split), "chained, len " + len);
            }
            jdk.reset();
            jdk.update(data, 0, 1100);
            assertEquals((int) jdk.getValue(), Crc32c.compute(native_, 0, 1100));
        }
    }

    @Test
    void byteBuffersKeepPositionAndLimit() {
        byte[] data = new byte[64];
        new Random(7).nextBytes(data);
        int expected = Crc32c.compute(MemorySegment.ofArray(data), 5, 50);
        Crc32c c = new Crc32c();
        ByteBuffer heap = ByteBuffer.wrap(data).position(3).limit(9);
        assertEquals(expected, c.compute(heap, 5, 50));
        assertEquals(3, heap.position());
        assertEquals(9, heap.limit());
        ByteBuffer direct = ByteBuffer.allocateDirect(64).put(0, data).position(1).limit(2);
        assertEquals(expected, c.compute(direct, 5, 50));
        assertEquals(1, direct.position());
        assertEquals(2, direct.limit());
        assertThrows(IndexOutOfBoundsException.class, () -> c.compute(direct, 60, 5));
        assertThrows(IndexOutOfBoundsException.class,
                () -> Crc32c.compute(MemorySegment.ofArray(data), 60, 5));
    }
}

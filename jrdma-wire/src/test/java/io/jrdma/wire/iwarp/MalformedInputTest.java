package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Malformed input: each defect is rejected with its own {@link IwarpError} (and the
 * TERMINATE code it maps to); the receive-path methods never throw, whatever the bytes.
 */
class MalformedInputTest {
    private static final HexFormat HEX = HexFormat.of();

    /** A valid 16-byte SEND FPDU (rping), CRC off: 40 bytes. */
    private static byte[] send() {
        return HEX.parseHex("0022414300000000000000000000000100000000"
                + "000056534d637b603cd5d40000000040" + "00000000");
    }

    private static int check(byte[] fpdu) {
        return Fpdu.check(MemorySegment.ofArray(fpdu), 0, fpdu.length, false, 65535);
    }

    private static void assertRejected(IwarpError expected, int result) {
        assertEquals(expected, IwarpError.fromResult(result),
                "result " + result + " = " + IwarpError.fromResult(result));
    }

    @Test
    void validBaseline() {
        assertEquals(20, check(send()));
    }

    @Test
    void truncatedFpdu() {
        byte[] f = send();
        MemorySegment s = MemorySegment.ofArray(f);
        for (int avail = 0; avail < f.length; avail++) {
            assertEquals(0, Fpdu.scan(s, 0, avail, 65535), "scan with " + avail + " bytes");
            assertRejected(IwarpError.FPDU_TRUNCATED, Fpdu.check(s, 0, avail, false, 65535));
        }
        // the CRC field is always part of the FPDU, even with CRC off
        assertRejected(IwarpError.FPDU_TRUNCATED, Fpdu.check(s, 0, 36, false, 65535));
    }

    @Test
    void badLength() {
        byte[] f = send();
        MemorySegment s = MemorySegment.ofArray(f);
        for (int len = 0; len < 14; len++) {
            Fpdu.ulpduLength(s, 0, len);
            assertRejected(IwarpError.ULPDU_TOO_SHORT, Fpdu.scan(s, 0, f.length, 65535));
            assertRejected(IwarpError.ULPDU_TOO_SHORT, check(f));
        }
        Fpdu.ulpduLength(s, 0, 16);                    // >= 14 but shorter than untagged
        assertRejected(IwarpError.ULPDU_TOO_SHORT, check(f));
        Fpdu.ulpduLength(s, 0, 1443);
        assertRejected(IwarpError.ULPDU_TOO_LONG, Fpdu.scan(s, 0, f.length, 1442));
        Fpdu.ulpduLength(s, 0, 0xFFFF);
        assertEquals(0, Fpdu.scan(s, 0, f.length, 65535), "plausible, just incomplete");
        assertRejected(IwarpError.FPDU_TRUNCATED, check(f));
        // READ Request without its 28-byte header
        byte[] rr = new byte[24];
        MemorySegment r = MemorySegment.ofArray(rr);
        Fpdu.writeHeader(r, 0, 18);
        Ddp.writeUntagged(r, 2, true, Rdmap.controlByte(Rdmap.READ_REQUEST), 0, 1, 1, 0);
        assertRejected(IwarpError.ULPDU_TOO_SHORT, check(rr));
        // TERMINATE whose D bit promises a header that is not there
        byte[] t = new byte[28];
        MemorySegment ts = MemorySegment.ofArray(t);
        Fpdu.writeHeader(ts, 0, 22);
        Ddp.writeUntagged(ts, 2, true, Rdmap.controlByte(Rdmap.TERMINATE), 0, 2, 1, 0);
        Terminate.write(ts, 20, 1, 2, 1, Terminate.FLAG_D);
        assertRejected(IwarpError.ULPDU_TOO_SHORT, check(t));
    }

    @Test
    void badDdpVersion() {
        for (int dv : new int[] {0, 2, 3}) {
            byte[] f = send();
            f[2] = (byte) ((f[2] & ~Ddp.VERSION_MASK) | dv);
            assertRejected(IwarpError.DDP_UNTAGGED_BAD_VERSION, check(f));
            f[2] |= (byte) Ddp.FLAG_TAGGED;
            assertRejected(IwarpError.DDP_TAGGED_BAD_VERSION, check(f));
        }
        assertEquals(Terminate.LAYER_DDP, IwarpError.DDP_TAGGED_BAD_VERSION.terminateLayer());
        assertEquals(Terminate.DDP_ETYPE_TAGGED,
                IwarpError.DDP_TAGGED_BAD_VERSION.terminateErrorType());
        assertEquals(0x04, IwarpError.DDP_TAGGED_BAD_VERSION.terminateErrorCode());
        assertEquals(0x06, IwarpError.DDP_UNTAGGED_BAD_VERSION.terminateErrorCode());
    }

    @Test
    void badRdmapVersion() {
        for (int rv : new int[] {0, 2, 3}) {
            byte[] f = send();
            f[3] = (byte) ((rv << 6) | Rdmap.SEND);
            assertRejected(IwarpError.RDMAP_BAD_VERSION, check(f));
        }
        assertEquals(Terminate.LAYER_RDMAP, IwarpError.RDMAP_BAD_VERSION.terminateLayer());
        assertEquals(Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                IwarpError.RDMAP_BAD_VERSION.terminateErrorType());
        assertEquals(Terminate.RDMAP_INVALID_VERSION,
                IwarpError.RDMAP_BAD_VERSION.terminateErrorCode());
    }

    @Test
    void unknownOpcode() {
        for (int op = 12; op < 16; op++) {
            byte[] f = send();
            f[3] = (byte) Rdmap.controlByte(op);
            assertRejected(IwarpError.RDMAP_UNKNOWN_OPCODE, check(f));
        }
        assertEquals(0x06, IwarpError.RDMAP_UNKNOWN_OPCODE.terminateErrorCode());
    }

    @Test
    void wrongBufferModelOrQueue() {
        byte[] f = send();
        f[2] |= (byte) Ddp.FLAG_TAGGED;                // a SEND marked tagged
        assertRejected(IwarpError.RDMAP_TAGGED_MISMATCH, check(f));
        f = send();
        f[3] = (byte) Rdmap.controlByte(Rdmap.WRITE);  // a WRITE in an untagged segment
        assertRejected(IwarpError.RDMAP_TAGGED_MISMATCH, check(f));
        f = send();
        f[9] = 1;                                      // SEND on QN 1
        assertRejected(IwarpError.DDP_INVALID_QN, check(f));
        f[9] = 4;
        assertRejected(IwarpError.DDP_INVALID_QN, check(f));
        assertEquals(Terminate.DDP_UNTAGGED_INVALID_QN,
                IwarpError.DDP_INVALID_QN.terminateErrorCode());
    }

    @Test
    void badMpaFrames() {
        byte[] good = new byte[24];
        MpaRequestReply.enhanced(false, false, false, 1, 1, false, false, false, false,
                new byte[0]).encode(MemorySegment.ofArray(good), 0);

        byte[] f = good.clone();
        f[13] = 'X';                                   // "MPA ID Req FrXme"
        expectMpa(f, false, IwarpError.MPA_BAD_KEY, "4d504120494420526571204672586d65");
        expectMpa(good.clone(), true, IwarpError.MPA_WRONG_KEY, "MPA key of the other");
        f = good.clone();
        f[Mpa.REVISION_OFFSET] = 0;
        expectMpa(f, false, IwarpError.MPA_BAD_REVISION, "Rev 0");
        f[Mpa.REVISION_OFFSET] = 3;
        expectMpa(f, false, IwarpError.MPA_BAD_REVISION, "Rev 3");
        f = good.clone();
        f[Mpa.FLAGS_OFFSET] |= (byte) Mpa.FLAG_MARKERS;
        expectMpa(f, false, IwarpError.MPA_MARKERS_UNSUPPORTED, "flags 0x90");
        f = good.clone();
        f[Mpa.PD_LENGTH_OFFSET] = 2;
        f[Mpa.PD_LENGTH_OFFSET + 1] = 1;               // 513
        expectMpa(f, false, IwarpError.MPA_PRIVATE_DATA_TOO_LONG, "PD_Length 513");
        f = good.clone();
        f[Mpa.PD_LENGTH_OFFSET + 1] = 2;
        expectMpa(f, false, IwarpError.MPA_ENHANCED_DATA_MISSING, "PD_Length 2");
        // truncated: the check waits for more bytes, the control-path decoder says why
        MemorySegment s = MemorySegment.ofArray(good);
        assertEquals(0, Mpa.check(s, 0, 23, false));
        IwarpProtocolException e = assertThrows(IwarpProtocolException.class,
                () -> MpaRequestReply.decode(s, 0, 23, false));
        assertEquals(IwarpError.MPA_FRAME_TRUNCATED, e.error());
        assertTrue(e.getMessage().contains("23 bytes, frame needs 24"), e.getMessage());
        // reserved flag bits are not checked
        f = good.clone();
        f[Mpa.FLAGS_OFFSET] |= 0x0F;
        assertEquals(24, Mpa.check(MemorySegment.ofArray(f), 0, 24, false));
    }

    private static void expectMpa(byte[] frame, boolean reply, IwarpError error, String detail) {
        MemorySegment s = MemorySegment.ofArray(frame);
        assertRejected(error, Mpa.check(s, 0, frame.length, reply));
        IwarpProtocolException e = assertThrows(IwarpProtocolException.class,
                () -> MpaRequestReply.decode(s, 0, frame.length, reply));
        assertEquals(error, e.error());
        assertTrue(e.getMessage().contains(detail), e.getMessage());
        assertEquals(Terminate.LAYER_LLP, error.terminateLayer());
        assertEquals(Terminate.LLP_INVALID_REQUEST_REPLY, error.terminateErrorCode());
    }

    @Test
    void errorCodes() {
        Set<Integer> codes = new HashSet<>();
        for (IwarpError e : IwarpError.values()) {
            assertTrue(codes.add(e.code()), "duplicate code " + e.code());
            assertEquals(e, IwarpError.of(e.code()));
            assertEquals(e, IwarpError.fromResult(e.result()));
            assertNotNull(e.message());
        }
        assertNull(IwarpError.of(0));
        assertNull(IwarpError.fromResult(0));
        assertNull(IwarpError.fromResult(24));
        assertNull(IwarpError.fromResult(-1000));
        assertEquals(Terminate.LLP_CRC_ERROR, IwarpError.CRC_MISMATCH.terminateErrorCode());
    }

    /** Random bytes and bit flips of valid frames: results are lengths or known errors. */
    @Test
    void neverThrows() {
        Random rnd = new Random(2024);
        byte[] buf = new byte[128];
        MemorySegment s = MemorySegment.ofArray(buf);
        byte[][] seeds = {send(), new byte[24], new byte[48]};
        MpaRequestReply.enhanced(true, true, false, 3, 4, false, false, false, false,
                new byte[0]).encode(MemorySegment.ofArray(seeds[1]), 0);
        for (int i = 0; i < 200_000; i++) {
            if (i % 2 == 0) {
                rnd.nextBytes(buf);
                if (rnd.nextBoolean()) {                 // plausible control bytes
                    buf[2] = (byte) ((buf[2] & 0xC0) | 1);
                    buf[3] = (byte) (0x40 | (buf[3] & 0x0F));
                    buf[0] = 0;
                    buf[1] = (byte) rnd.nextInt(100);
                }
            } else {
                byte[] seed = seeds[rnd.nextInt(seeds.length)];
                System.arraycopy(seed, 0, buf, 0, seed.length);
                buf[rnd.nextInt(seed.length)] ^= (byte) (1 << rnd.nextInt(8));
            }
            long avail = rnd.nextInt(buf.length + 1);
            int r1 = Fpdu.scan(s, 0, avail, 1 + rnd.nextInt(65535));
            int r2 = Fpdu.check(s, 0, avail, rnd.nextBoolean(), 65535);
            int r3 = Mpa.check(s, 0, avail, rnd.nextBoolean());
            int r4 = Rdmap.check(s, 2, (int) Math.max(0, avail - 2));
            int r5 = Terminate.length(s, 20, (int) Math.max(0, avail - 20));
            for (int r : new int[] {r1, r2, r3, r4, r5}) {
                assertTrue(r >= 0 || IwarpError.fromResult(r) != null, "result " + r);
                assertTrue(r <= 65535 + 8, "result " + r);
            }
            if (r2 > 0) {
                assertTrue(r2 <= avail, "payload offset inside the FPDU");
            }
            if (r4 > 0) {
                assertTrue(r4 <= avail - 2, "header inside the ULPDU");
            }
        }
    }
}

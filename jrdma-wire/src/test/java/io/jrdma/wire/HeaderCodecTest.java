package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** Encode/decode round trips and exact wire bytes, at odd (unaligned) offsets. */
class HeaderCodecTest {
    private static final HexFormat HEX = HexFormat.of();

    private static byte[] bytes(MemorySegment s, long off, int len) {
        return s.asSlice(off, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    @Test
    void bthWireBytesAndFields() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(64);
            long o = 3;
            Bth.write(s, o, 0x0B, true, true, 3, 0xFFFF, 0xABCDEF, true, 0xFEDCBA);
            assertEquals("0bf0ffff00abcdef80fedcba", HEX.formatHex(bytes(s, o, 12)));
            assertEquals(0x0B, Bth.opcode(s, o));
            assertTrue(Bth.se(s, o));
            assertTrue(Bth.migReq(s, o));
            assertEquals(3, Bth.padCnt(s, o));
            assertEquals(0, Bth.tver(s, o));
            assertEquals(0xFFFF, Bth.pkey(s, o));
            assertEquals(0, Bth.resv8a(s, o));
            assertEquals(0xABCDEF, Bth.destQp(s, o));
            assertTrue(Bth.ackReq(s, o));
            assertEquals(0xFEDCBA, Bth.psn(s, o));

            Bth.psn(s, o, 0x1000001);                  // masked to 24 bits, AckReq kept
            assertEquals(1, Bth.psn(s, o));
            assertTrue(Bth.ackReq(s, o));
            Bth.ackReq(s, o, false);
            assertFalse(Bth.ackReq(s, o));
            assertEquals(1, Bth.psn(s, o));
            Bth.ackReq(s, o, true);
            assertEquals("80000001", HEX.formatHex(bytes(s, o + 8, 4)));

            Bth.resv8a(s, o, 0xC0);
            assertTrue(Bth.fecn(s, o));
            assertTrue(Bth.becn(s, o));
            Bth.destQp(s, o, 0x11);
            assertEquals(0xC0, Bth.resv8a(s, o));
            assertEquals(0x11, Bth.destQp(s, o));
            Bth.padCnt(s, o, 1);
            assertEquals(1, Bth.padCnt(s, o));
            assertTrue(Bth.se(s, o));
            Bth.se(s, o, false);
            assertFalse(Bth.se(s, o));
            assertTrue(Bth.migReq(s, o));
            Bth.opcode(s, o, 0x64);
            assertEquals(0x64, Bth.opcode(s, o));

            Bth.write(s, o, 0x04, false, false, 0, 0x8001, 0x11, false, 0);
            assertEquals("04008001000000110000" + "0000", HEX.formatHex(bytes(s, o, 12)));
        }
    }

    @Test
    void extendedHeaders() {
        MemorySegment s = MemorySegment.ofArray(new byte[80]);
        long o = 5;
        Reth.write(s, o, 0x0102030405060708L, 0x090A0B0C, 0xFFFF_FFF0);
        assertEquals("0102030405060708090a0b0cfffffff0", HEX.formatHex(bytes(s, o, 16)));
        assertEquals(0x0102030405060708L, Reth.va(s, o));
        assertEquals(0x090A0B0C, Reth.rkey(s, o));
        assertEquals(0xFFFF_FFF0L, Integer.toUnsignedLong(Reth.dmaLength(s, o)));

        Aeth.write(s, o, Aeth.NAK_REMOTE_ACCESS, 0x123456);
        assertEquals("62123456", HEX.formatHex(bytes(s, o, 4)));
        assertEquals(0x62, Aeth.syndrome(s, o));
        assertEquals(0x123456, Aeth.msn(s, o));

        AtomicEth.write(s, o, -8L, 0x11223344, 0x5566778899AABBCCL, -1L);
        assertEquals("fffffffffffffff8" + "11223344" + "5566778899aabbcc" + "ffffffffffffffff",
                HEX.formatHex(bytes(s, o, 28)));
        assertEquals(-8L, AtomicEth.va(s, o));
        assertEquals(0x11223344, AtomicEth.rkey(s, o));
        assertEquals(0x5566778899AABBCCL, AtomicEth.swapAdd(s, o));
        assertEquals(-1L, AtomicEth.compare(s, o));

        AtomicAckEth.write(s, o, 0x8000000000000001L);
        assertEquals("8000000000000001", HEX.formatHex(bytes(s, o, 8)));
        assertEquals(0x8000000000000001L, AtomicAckEth.originalData(s, o));

        ImmDt.write(s, o, 0x01020304);
        assertEquals("01020304", HEX.formatHex(bytes(s, o, 4)));
        assertEquals(0x01020304, ImmDt.imm(s, o));

        Ieth.write(s, o, 0xCAFEBABE);
        assertEquals("cafebabe", HEX.formatHex(bytes(s, o, 4)));
        assertEquals(0xCAFEBABE, Ieth.rkey(s, o));

        Deth.write(s, o, Deth.GSI_QKEY, 0xFF000001);
        assertEquals("8001000000000001", HEX.formatHex(bytes(s, o, 8)));
        assertEquals(Deth.GSI_QKEY, Deth.qkey(s, o));
        assertEquals(1, Deth.srcQp(s, o));

        Icrc.write(s, o, 0x4847D86A);
        assertEquals("6ad84748", HEX.formatHex(bytes(s, o, 4)));
        assertEquals(0x4847D86A, Icrc.read(s, o));

        assertEquals(12, Bth.LENGTH);
        assertEquals(16, Reth.LENGTH);
        assertEquals(4, Aeth.LENGTH);
        assertEquals(28, AtomicEth.LENGTH);
        assertEquals(8, AtomicAckEth.LENGTH);
        assertEquals(4, ImmDt.LENGTH);
        assertEquals(4, Ieth.LENGTH);
        assertEquals(8, Deth.LENGTH);
        assertEquals(4, Icrc.LENGTH);
    }

    @Test
    void aethSyndromes() {
        assertTrue(Aeth.isAck(0x1F));
        assertTrue(Aeth.isAck(0x00));
        assertFalse(Aeth.isNak(0x1F));
        assertTrue(Aeth.isRnrNak(0x2E));
        assertEquals(0x0E, Aeth.rnrTimer(0x2E));
        assertEquals(0x2E, Aeth.rnrNak(0x0E));
        for (int syn : new int[] {Aeth.NAK_PSN_SEQ_ERR, Aeth.NAK_INVALID_REQUEST,
            Aeth.NAK_REMOTE_ACCESS, Aeth.NAK_REMOTE_OP}) {
            assertTrue(Aeth.isNak(syn));
            assertFalse(Aeth.isAck(syn));
            assertFalse(Aeth.isRnrNak(syn));
        }
        assertFalse(Aeth.isAck(0x40) || Aeth.isNak(0x40) || Aeth.isRnrNak(0x40));
        assertEquals(655_360_000L, Aeth.rnrTimerNanos(0));
        assertEquals(10_000L, Aeth.rnrTimerNanos(1));
        assertEquals(1_280_000L, Aeth.rnrTimerNanos(14));
        assertEquals(491_520_000L, Aeth.rnrTimerNanos(31));
    }

    @Test
    void psnArithmetic() {
        assertEquals(0, Psn.next(0xFFFFFF));
        assertEquals(2, Psn.add(0xFFFFFF, 3));
        assertEquals(3, Psn.diff(2, 0xFFFFFF));
        assertEquals(-3, Psn.diff(0xFFFFFF, 2));
        assertTrue(Psn.after(2, 0xFFFFFF));
        assertTrue(Psn.before(0xFFFFFF, 2));
        assertEquals(0, Psn.compare(5, 5));
        assertEquals(-0x800000, Psn.diff(0, 0x800000));
        assertTrue(Psn.after(0x7FFFFF, 0));
    }

    @Test
    void roceV2Helpers() {
        assertEquals(0, RoceV2.padCount(0));
        assertEquals(3, RoceV2.padCount(1));
        assertEquals(2, RoceV2.padCount(2));
        assertEquals(1, RoceV2.padCount(3));
        assertEquals(0, RoceV2.padCount(1024));
        assertEquals(12 + 16 + 2 + 2 + 4, RoceV2.packetLength(IbOpcode.RC_RDMA_WRITE_ONLY, 2));
        // rdma_calc_flow_label + rdma_flow_label_to_udp_sport, values seen in the captures
        assertEquals(0xC190, RoceV2.udpSourcePort(0x14, 0x14));
        assertEquals(0xC1E4, RoceV2.udpSourcePort(0x16, 0x16));
        for (int a = 1; a < 5000; a += 37) {
            for (int b = 1; b < 0xFFFFFF; b += 0x12345) {
                int p = RoceV2.udpSourcePort(a, b);
                assertTrue(p >= 0xC000 && p <= 0xFFFF);
                assertEquals(p, RoceV2.udpSourcePort(b, a));
            }
        }
        long fl = 0xFFFFFFL * 0xFFFFFFL;
        fl ^= fl >>> 20;
        fl ^= fl >>> 40;
        assertEquals((int) (fl & 0xFFFFF), RoceV2.flowLabel(0xFFFFFF, 0xFFFFFF));
    }
}

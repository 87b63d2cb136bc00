package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** DDP, RDMAP, READ Request, TERMINATE, RFC 7306 headers and FPDU arithmetic: exact bytes. */
class HeadersTest {
    private static final HexFormat HEX = HexFormat.of();

    private static MemorySegment seg(int n) {
        return MemorySegment.ofArray(new byte[n]);
    }

    private static String hex(MemorySegment s, long off, int len) {
        return HEX.formatHex(s.asSlice(off, len).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
    }

    @Test
    void taggedHeader() {
        // iwarp-ib_write_bw.pcap: the last segment of a 4096-byte WRITE
        MemorySegment s = seg(40);
        long o = 5;
        Ddp.writeTagged(s, o, true, Rdmap.controlByte(Rdmap.WRITE), 0xA7174A00, 0x55B6510BCB28L);
        assertEquals("c140a7174a00000055b6510bcb28", hex(s, o, 14));
        assertTrue(Ddp.tagged(s, o));
        assertTrue(Ddp.last(s, o));
        assertEquals(1, Ddp.version(s, o));
        assertEquals(0, Ddp.reserved(s, o));
        assertEquals(14, Ddp.headerLength(s, o));
        assertEquals(0xA7174A00, Ddp.stag(s, o));
        assertEquals(0x55B6510BCB28L, Ddp.taggedOffset(s, o));
        assertEquals(1, Rdmap.version(s, o));
        assertEquals(Rdmap.WRITE, Rdmap.opcode(s, o));
        Ddp.last(s, o, false);
        Ddp.taggedOffset(s, o, 1);
        assertEquals("8140a7174a000000000000000001", hex(s, o, 14));
        assertEquals(14, Rdmap.check(s, o, 14));
        assertEquals(14, Rdmap.check(s, o, 40), "payload follows the header");
    }

    @Test
    void untaggedHeaders() {
        MemorySegment s = seg(40);
        long o = 3;
        Ddp.writeUntagged(s, o, true, Rdmap.controlByte(Rdmap.SEND_SE_INVALIDATE), 0x11223344,
                Rdmap.QN_SEND, 5, 0x10);
        assertEquals("4146" + "11223344" + "00000000" + "00000005" + "00000010", hex(s, o, 18));
        assertFalse(Ddp.tagged(s, o));
        assertEquals(18, Ddp.headerLength(s, o));
        assertEquals(0x11223344, Rdmap.invalidateStag(s, o));
        assertEquals(0, Ddp.queueNumber(s, o));
        assertEquals(5, Ddp.msn(s, o));
        assertEquals(0x10, Ddp.messageOffset(s, o));
        assertEquals(18, Rdmap.check(s, o, 18));
        Ddp.msn(s, o, -1);
        Ddp.messageOffset(s, o, 0x8000_0000);
        assertEquals(0xFFFF_FFFFL, Integer.toUnsignedLong(Ddp.msn(s, o)));
        assertEquals("ffffffff80000000", hex(s, o + 10, 8));
    }

    @Test
    void readRequest() {
        // iwarp-rping.pcap frame 9: the whole FPDU (CRC off)
        String wire = "002e" + "4141" + "00000000" + "00000001" + "00000001" + "00000000"
                + "9023bd00" + "000055dd8376c7c0" + "00000040" + "3cd5d400" + "000056534d637b60"
                + "00000000";
        MemorySegment s = seg(52);
        Fpdu.writeHeader(s, 0, 46);
        Ddp.writeUntagged(s, 2, true, Rdmap.controlByte(Rdmap.READ_REQUEST), 0,
                Rdmap.QN_READ_REQUEST, 1, 0);
        ReadRequest.write(s, 20, 0x9023BD00, 0x55DD8376C7C0L, 64, 0x3CD5D400, 0x56534D637B60L);
        assertEquals(52, Fpdu.seal(s, 0, 46, false));
        assertEquals(wire, hex(s, 0, 52));
        assertEquals(2 + 46, Fpdu.check(s, 0, 52, false, 65535));
        assertEquals(0x9023BD00, ReadRequest.sinkStag(s, 20));
        assertEquals(0x55DD8376C7C0L, ReadRequest.sinkTaggedOffset(s, 20));
        assertEquals(64, ReadRequest.messageSize(s, 20));
        assertEquals(0x3CD5D400, ReadRequest.sourceStag(s, 20));
        assertEquals(0x56534D637B60L, ReadRequest.sourceTaggedOffset(s, 20));
    }

    @Test
    void terminate() {
        // DDP error "invalid MSN, no buffer" on an untagged SEND, reported the siw way:
        // M and D set, the failed frame's DDP header copied after the segment length
        MemorySegment s = seg(64);
        int ulpdu = 18 + 4 + 2 + 18;
        Fpdu.writeHeader(s, 0, ulpdu);
        Ddp.writeUntagged(s, 2, true, Rdmap.controlByte(Rdmap.TERMINATE), 0,
                Rdmap.QN_TERMINATE, 1, 0);
        long t = 20;
        Terminate.write(s, t, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                Terminate.DDP_UNTAGGED_INVALID_MSN_NO_BUFFER, Terminate.FLAG_M | Terminate.FLAG_D);
        Terminate.segmentLength(s, t, 100);
        Ddp.writeUntagged(s, t + Terminate.DDP_HEADER_OFFSET, true,
                Rdmap.controlByte(Rdmap.SEND), 0, 0, 7, 0);
        assertEquals(48, Fpdu.seal(s, 0, ulpdu, false));
        assertEquals("1202c000" + "0064" + "4143", hex(s, t, 8));
        assertEquals(Terminate.LAYER_DDP, Terminate.layer(s, t));
        assertEquals(Terminate.DDP_ETYPE_UNTAGGED, Terminate.errorType(s, t));
        assertEquals(0x02, Terminate.errorCode(s, t));
        assertEquals(Terminate.FLAG_M | Terminate.FLAG_D, Terminate.headerControl(s, t));
        assertEquals(0, Terminate.reserved(s, t));
        assertEquals(100, Terminate.segmentLength(s, t));
        assertEquals(24, Terminate.length(s, t, 24));
        assertEquals(ulpdu, Rdmap.check(s, 2, ulpdu));
        assertEquals(2 + ulpdu, Fpdu.check(s, 0, 48, false, 65535));
        assertEquals(7, Ddp.msn(s, t + Terminate.DDP_HEADER_OFFSET));

        // control word only (siw for a catastrophic error): ULPDU 22, FPDU 28
        MemorySegment c = seg(28);
        Fpdu.writeHeader(c, 0, 22);
        Ddp.writeUntagged(c, 2, true, Rdmap.controlByte(Rdmap.TERMINATE), 0, 2, 1, 0);
        Terminate.write(c, 20, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_LOCAL_CATASTROPHIC,
                Terminate.RDMAP_UNSPECIFIED, 0);
        assertEquals(28, Fpdu.seal(c, 0, 22, false));
        assertEquals("0016" + "4147" + "00000000" + "00000002" + "00000001" + "00000000"
                + "00ff0000" + "00000000", hex(c, 0, 28));
        assertEquals(2 + 22, Fpdu.check(c, 0, 28, false, 65535));
        assertEquals(4, Terminate.length(c, 20, 4));

        // D with a tagged header, and D + R with a READ Request
        MemorySegment d = seg(80);
        Terminate.write(d, 0, 0, 1, 0, Terminate.FLAG_D);
        Ddp.writeTagged(d, Terminate.DDP_HEADER_OFFSET, true, Rdmap.controlByte(0), 1, 2);
        assertEquals(20, Terminate.length(d, 0, 80));
        Terminate.write(d, 0, 0, 1, 0, Terminate.FLAG_M | Terminate.FLAG_D | Terminate.FLAG_R);
        Ddp.writeUntagged(d, Terminate.DDP_HEADER_OFFSET, true, Rdmap.controlByte(1), 0, 1, 1, 0);
        assertEquals(52, Terminate.length(d, 0, 80));
        assertEquals(IwarpError.ULPDU_TOO_SHORT.result(), Terminate.length(d, 0, 51));
    }

    @Test
    void rfc7306Headers() {
        MemorySegment s = seg(100);
        Ddp.writeUntagged(s, 0, true, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST), 0,
                Rdmap.QN_READ_REQUEST, 1, 0);
        AtomicRequest.write(s, 18, AtomicRequest.COMPARE_SWAP, 7, 0xABCD, 0x1000L, 5L, -1L, 4L,
                -1L);
        assertEquals("414a" + "00000000" + "00000001" + "00000001" + "00000000", hex(s, 0, 18));
        assertEquals("00000002" + "00000007" + "0000abcd" + "0000000000001000"
                + "0000000000000005" + "ffffffffffffffff" + "0000000000000004"
                + "ffffffffffffffff", hex(s, 18, 52));
        assertEquals(AtomicRequest.COMPARE_SWAP, AtomicRequest.atomicOpcode(s, 18));
        assertEquals(7, AtomicRequest.requestId(s, 18));
        assertEquals(0xABCD, AtomicRequest.remoteStag(s, 18));
        assertEquals(0x1000L, AtomicRequest.remoteTaggedOffset(s, 18));
        assertEquals(5L, AtomicRequest.addOrSwapData(s, 18));
        assertEquals(-1L, AtomicRequest.addOrSwapMask(s, 18));
        assertEquals(4L, AtomicRequest.compareData(s, 18));
        assertEquals(-1L, AtomicRequest.compareMask(s, 18));
        assertEquals(70, Rdmap.check(s, 0, 70));
        assertEquals(IwarpError.ULPDU_TOO_SHORT.result(), Rdmap.check(s, 0, 69));

        Ddp.writeUntagged(s, 0, true, Rdmap.controlByte(Rdmap.ATOMIC_RESPONSE), 0,
                Rdmap.QN_ATOMIC_RESPONSE, 1, 0);
        AtomicResponse.write(s, 18, 7, 0x0102030405060708L);
        assertEquals("00000007" + "0102030405060708", hex(s, 18, 12));
        assertEquals(7, AtomicResponse.originalRequestId(s, 18));
        assertEquals(0x0102030405060708L, AtomicResponse.originalValue(s, 18));
        assertEquals(30, Rdmap.check(s, 0, 30));

        Ddp.writeUntagged(s, 0, true, Rdmap.controlByte(Rdmap.IMMEDIATE_DATA_SE), 0,
                Rdmap.QN_SEND, 9, 0);
        ImmediateData.write(s, 18, 0xCAFEBABE_DEADBEEFL);
        assertEquals("4149", hex(s, 0, 2));
        assertEquals("cafebabedeadbeef", hex(s, 18, 8));
        assertEquals(0xCAFEBABE_DEADBEEFL, ImmediateData.value(s, 18));
        assertEquals(26, Rdmap.check(s, 0, 26));
    }

    @Test
    void opcodeTable() {
        assertEquals(12, Rdmap.OPCODE_COUNT);
        for (int op = 0; op < 16; op++) {
            boolean defined = op < 12;
            assertEquals(defined, Rdmap.isDefined(op));
            assertEquals(op == 0 || op == 2, Rdmap.isTagged(op));
            assertEquals(0x40 | op, Rdmap.controlByte(op));
        }
        int[] qn = {-1, 1, -1, 0, 0, 0, 0, 2, 0, 0, 1, 3, -1, -1, -1, -1};
        int[] hdr = {14, 46, 14, 18, 18, 18, 18, 22, 26, 26, 70, 30, -1, -1, -1, -1};
        for (int op = 0; op < 16; op++) {
            assertEquals(qn[op], Rdmap.queueNumber(op), "QN of " + op);
            assertEquals(hdr[op], Rdmap.headerLength(op), "header of " + op);
        }
        assertTrue(Rdmap.carriesInvalidateStag(Rdmap.SEND_INVALIDATE));
        assertTrue(Rdmap.carriesInvalidateStag(Rdmap.SEND_SE_INVALIDATE));
        assertFalse(Rdmap.carriesInvalidateStag(Rdmap.SEND));
        assertTrue(Rdmap.solicitedEvent(Rdmap.SEND_SE));
        assertTrue(Rdmap.solicitedEvent(Rdmap.IMMEDIATE_DATA_SE));
        assertFalse(Rdmap.solicitedEvent(Rdmap.SEND_INVALIDATE));
        assertEquals("READ_RESPONSE", Rdmap.name(2));
        assertEquals("OPCODE_13", Rdmap.name(13));
    }

    @Test
    void fpduArithmetic() {
        assertEquals(0, Fpdu.padLength(14));
        assertEquals(3, Fpdu.padLength(15));
        assertEquals(2, Fpdu.padLength(16));
        assertEquals(1, Fpdu.padLength(17));
        assertEquals(20, Fpdu.length(14));
        assertEquals(24, Fpdu.length(16));
        assertEquals(1448, Fpdu.length(1442));
        assertEquals(1442, Fpdu.maxUlpduLength(1448), "siw's full-MSS ULPDU");
        assertEquals(1442, Fpdu.maxUlpduLength(1451));
        assertEquals(65535, Fpdu.maxUlpduLength(1 << 20));
        assertEquals(20, Fpdu.crcOffset(15));
        assertEquals(16, Fpdu.crcOffset(14));
    }

    @Test
    void scanAStream() {
        // three FPDUs back to back, the last one cut short
        MemorySegment s = seg(100);
        long off = 0;
        int[] payloads = {0, 3, 5};
        for (int i = 0; i < 3; i++) {
            int ulpdu = 18 + payloads[i];
            Fpdu.writeHeader(s, off, ulpdu);
            Ddp.writeUntagged(s, off + 2, true, Rdmap.controlByte(Rdmap.SEND), 0, 0, i + 1, 0);
            off += Fpdu.seal(s, off, ulpdu, true);
        }
        assertEquals(24 + 28 + 32, off);
        long avail = off - 1;
        long at = 0;
        int found = 0;
        for (int n; (n = Fpdu.scan(s, at, avail - at, 65535)) > 0; at += n) {
            assertEquals(2 + 18, Fpdu.check(s, at, n, true, 65535));
            assertEquals(found + 1, Ddp.msn(s, at + 2));
            found++;
        }
        assertEquals(2, found);
        assertEquals(52, at);
        assertEquals(0, Fpdu.scan(s, at, avail - at, 65535), "incomplete: need more bytes");
        assertEquals(0, Fpdu.scan(s, at, 1, 65535));
        assertEquals(32, Fpdu.scan(s, at, 32, 65535));
    }
}

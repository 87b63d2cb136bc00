package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** MPA Request/Reply frames and the RFC 6581 block: exact bytes and round trips. */
class MpaTest {
    private static final HexFormat HEX = HexFormat.of();
    static final String REQ_KEY = "4d504120494420526571204672616d65";
    static final String REP_KEY = "4d504120494420526570204672616d65";

    @Test
    void rpingRequestBytes() throws Exception {
        // iwarp-rping.pcap frame 4, the whole TCP payload
        MpaRequestReply req = MpaRequestReply.enhanced(false, false, false, 1, 1, false, false,
                false, false, new byte[0]);
        byte[] out = new byte[req.length()];
        MemorySegment s = MemorySegment.ofArray(out);
        assertEquals(24, req.encode(s, 0));
        assertEquals(REQ_KEY + "10020004" + "00010001", HEX.formatHex(out));
        assertTrue(Mpa.isRequestKey(s, 0));
        assertFalse(Mpa.isReplyKey(s, 0));
        assertEquals(24, Mpa.check(s, 0, 24, false));
        assertEquals(req, MpaRequestReply.decode(s, 0, 24, false));
        assertEquals(1, req.ird());
        assertEquals(1, req.ord());
        assertTrue(req.enhancedFlag());
        assertTrue(req.hasEnhancedBlock());
        assertFalse(req.markers() || req.crc() || req.reject() || req.peerToPeer());
    }

    @Test
    void replyWithCrcRejectAndApplicationData() throws Exception {
        byte[] app = "hello".getBytes(StandardCharsets.US_ASCII);
        MpaRequestReply rep = MpaRequestReply.enhanced(true, true, true, 16, 8, true, true,
                false, true, app);
        byte[] out = new byte[40];
        MemorySegment s = MemorySegment.ofArray(out);
        assertEquals(29, rep.encode(s, 3));
        assertEquals(REP_KEY + "70020009" + "c0104008" + "68656c6c6f",
                HEX.formatHex(out, 3, 32));
        assertEquals(Mpa.FLAG_CRC | Mpa.FLAG_REJECT | Mpa.FLAG_ENHANCED, Mpa.flags(s, 3));
        assertTrue(Mpa.crc(s, 3));
        assertTrue(Mpa.reject(s, 3));
        assertFalse(Mpa.markers(s, 3));
        assertEquals(9, Mpa.privateDataLength(s, 3));
        long pd = 3 + Mpa.PRIVATE_DATA_OFFSET;
        assertEquals(16, MpaEnhanced.ird(s, pd));
        assertEquals(8, MpaEnhanced.ord(s, pd));
        assertTrue(MpaEnhanced.peerToPeer(s, pd));
        assertTrue(MpaEnhanced.rtrSend(s, pd));
        assertFalse(MpaEnhanced.rtrWrite(s, pd));
        assertTrue(MpaEnhanced.rtrRead(s, pd));
        MpaRequestReply back = MpaRequestReply.decode(s, 3, 37, true);
        assertEquals(rep, back);
        assertArrayEquals(app, back.applicationData());
        assertEquals(0xC010, back.irdWord());
        assertEquals(0x4008, back.ordWord());
    }

    @Test
    void revisionOneHasNoBlock() throws Exception {
        MpaRequestReply r1 = new MpaRequestReply(false, 0, Mpa.REVISION_1, new byte[] {1, 2});
        byte[] out = new byte[22];
        r1.encode(MemorySegment.ofArray(out), 0);
        assertEquals(REQ_KEY + "0001" + "0002" + "0102", HEX.formatHex(out));
        MpaRequestReply back = MpaRequestReply.decode(MemorySegment.ofArray(out), 0, 22, false);
        assertFalse(back.hasEnhancedBlock());
        assertArrayEquals(new byte[] {1, 2}, back.applicationData());
        assertThrows(IllegalStateException.class, back::ird);
    }

    @Test
    void incrementalCheck() {
        byte[] out = new byte[30];
        MemorySegment s = MemorySegment.ofArray(out);
        MpaRequestReply.enhanced(true, false, false, 0, 0, false, false, false, false,
                new byte[2]).encode(s, 0);
        assertEquals(0, Mpa.check(s, 0, 0, true));
        assertEquals(0, Mpa.check(s, 0, 15, true));
        assertEquals(0, Mpa.check(s, 0, 19, true), "key fine, header incomplete");
        assertEquals(0, Mpa.check(s, 0, 25, true), "private data incomplete");
        assertEquals(26, Mpa.check(s, 0, 26, true));
        assertEquals(26, Mpa.check(s, 0, 30, true));
    }

    @Test
    void limits() {
        assertThrows(IllegalArgumentException.class, () -> MpaRequestReply.enhanced(false, false,
                false, 1, 1, false, false, false, false, new byte[257]));
        assertThrows(IllegalArgumentException.class, () -> MpaRequestReply.enhanced(false, false,
                false, 0x4000, 1, false, false, false, false, new byte[0]));
        assertThrows(IllegalArgumentException.class,
                () -> new MpaRequestReply(false, 0, 1, new byte[513]));
        MpaRequestReply max = MpaRequestReply.enhanced(false, false, false, 0x3FFF, 0x3FFF, false,
                false, false, false, new byte[256]);
        assertEquals(20 + 260, max.length());
        byte[] out = new byte[280];
        assertEquals(280, max.encode(MemorySegment.ofArray(out), 0));
        assertEquals(280, Mpa.check(MemorySegment.ofArray(out), 0, 280, false));
    }

    @Test
    void headerWriterMatchesRecord() {
        byte[] a = new byte[24];
        MemorySegment s = MemorySegment.ofArray(a);
        Mpa.writeHeader(s, 0, true, Mpa.FLAG_ENHANCED, 2, 4);
        MpaEnhanced.write(s, Mpa.PRIVATE_DATA_OFFSET, 128, 128, false, false, false, false);
        assertEquals(REP_KEY + "10020004" + "00800080", HEX.formatHex(a));
        assertEquals(REP_KEY, HEX.formatHex(s.asSlice(0, 16).toArray(ValueLayout.JAVA_BYTE)));
        assertEquals(2, Mpa.revision(s, 0));
    }
}

package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.wire.Captures;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Golden test over {@code testdata/pcaps/jrdma-iwarp-rfc7306.pcap}: two jrdma peers on loopback (MPA with
 * CRC and the jrdma trailer, so RFC 7306 is on), made by jrdma-engine's {@code Rfc7306Traffic}. In
 * order: an 8-byte RDMA READ, a FetchAdd, a CompareSwap, a SEND_WITH_IMM of 0 bytes, one of 16
 * bytes with SE, an RDMA_WRITE_WITH_IMM. Every FPDU is checked (framing, CRC, DDP/RDMAP), every
 * RFC 7306 header decoded and compared with what was sent, and every FPDU re-encoded with the
 * codec, CRC included, byte for byte.
 *
 * <p>tshark 4.0.17 decodes the same capture (no options: the MPA key exchange identifies it):
 * 10 FPDUs, all "Good CRC32"; Atomic Request (0xa) with OpCode FetchAdd (0) / CmpSwap (2),
 * Request Identifier 1 / 2, the Remote STag and Tagged Offset below, Add Data 4294967298, Add Mask
 * 0, Swap Data 2459565876494606882, Swap and Compare Mask 0xffffffffffffffff, Compare Data
 * 1229782942542270739; Atomic Response (0xb) on queue 3, MSN 1 and 2, Original Request Identifier
 * 1 and 2, Original Remote Data Value 1229782938247303441 and 1229782942542270739. It does not know
 * opcodes 8 and 9 ("Unknown 8/9"): for Immediate Data it shows only the DDP header (QN 0, MSNs).
 */
class JrdmaRfc7306CaptureTest {
    static final String NAME = "jrdma-iwarp-rfc7306.pcap";

    // what the run printed (Rfc7306Traffic); the values it sends are its constants
    static final int SERVER_STAG = 0xBD8C49EC;
    static final long TARGET = 0x00007F1BD419A100L;
    static final int CLIENT_STAG = 0xDCBB487E;
    static final long CLIENT_BUF = 0x00007F1BD41B3000L;
    static final long TARGET_BEFORE = 0x1111_1111_1111_1111L;
    static final long ADD = 0x0000_0001_0000_0002L;
    static final long COMPARE = 0x1111_1112_1111_1113L;
    static final long SWAP = 0x2222_2222_2222_2222L;

    /** One FPDU of a direction: where it is and its DDP/RDMAP fields. */
    record Seen(MemorySegment s, long off, int len, int hdr, int opcode, boolean tagged, int qn, int msn, int mo) {
        long ddp() {
            return off + Fpdu.ULPDU_OFFSET;
        }

        long rdmap() {
            return ddp() + Ddp.UNTAGGED_HEADER_LENGTH;
        }

        int payloadLength() {
            return Fpdu.ulpduLength(s, off) - (hdr - Fpdu.ULPDU_OFFSET);
        }

        byte[] bytes() {
            return s.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    static List<Seen> decode(TcpStreams.Stream stream) throws Exception {
        MemorySegment s = MemorySegment.ofArray(stream.bytes);
        long avail = stream.bytes.length;
        boolean reply = !stream.initiator;
        int n = Mpa.check(s, 0, avail, reply);
        assertTrue(n > 0, stream.flow + ": MPA frame " + IwarpError.fromResult(n));
        MpaRequestReply mpa = MpaRequestReply.decode(s, 0, avail, reply);
        assertTrue(mpa.crc(), "jrdma peers use CRC");
        List<Seen> out = new ArrayList<>();
        long off = n;
        while (off < avail) {
            int len = Fpdu.scan(s, off, avail - off, Fpdu.MAX_ULPDU_LENGTH);
            assertTrue(len > 0, stream.flow + " @" + off + ": " + IwarpError.fromResult(len));
            int hdr = Fpdu.check(s, off, len, true, Fpdu.MAX_ULPDU_LENGTH);
            assertTrue(hdr > 0, stream.flow + " @" + off + ": " + IwarpError.fromResult(hdr));
            long ddp = off + Fpdu.ULPDU_OFFSET;
            boolean tagged = Ddp.tagged(s, ddp);
            out.add(new Seen(s, off, len, hdr, Rdmap.opcode(s, ddp), tagged, tagged ? -1 : Ddp.queueNumber(s, ddp),
                    tagged ? 0 : Ddp.msn(s, ddp), tagged ? 0 : Ddp.messageOffset(s, ddp)));
            off += len;
        }
        return out;
    }

    /** Writes a whole untagged FPDU with the codec: DDP header, RDMAP header (by {@code body}), CRC. */
    interface Body {
        void write(MemorySegment s, long rdmap);
    }

    static byte[] untagged(int opcode, int qn, int msn, int rdmapLength, byte[] payload, Body body) {
        int ulpdu = Ddp.UNTAGGED_HEADER_LENGTH + rdmapLength + payload.length;
        MemorySegment s = MemorySegment.ofArray(new byte[Fpdu.length(ulpdu)]);
        Fpdu.writeHeader(s, 0, ulpdu);
        Ddp.writeUntagged(s, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(opcode), 0, qn, msn, 0);
        long rdmap = Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH;
        body.write(s, rdmap);
        MemorySegment.copy(MemorySegment.ofArray(payload), 0, s, rdmap + rdmapLength, payload.length);
        Fpdu.seal(s, 0, ulpdu, true);
        return s.toArray(ValueLayout.JAVA_BYTE);
    }

    @Test
    void everyFpduDecodesAndReencodes() throws Exception {
        List<TcpStreams.Connection> conns = TcpStreams.read(Captures.path(NAME));
        assertEquals(1, conns.size());
        List<Seen> out = decode(conns.get(0).initiator());   // the requester (client)
        List<Seen> back = decode(conns.get(0).responder());  // the responder (server)
        assertEquals(7, out.size());
        assertEquals(3, back.size());

        // RDMA READ Request: QN 1, MSN 1
        Seen read = out.get(0);
        assertEquals(Rdmap.READ_REQUEST, read.opcode());
        assertEquals(1, read.qn());
        assertEquals(1, read.msn());
        assertEquals(SERVER_STAG, ReadRequest.sourceStag(read.s(), read.rdmap()));
        assertEquals(TARGET, ReadRequest.sourceTaggedOffset(read.s(), read.rdmap()));

        // Atomic Requests share QN 1 and its MSNs with the READ Request: MSN 2 and 3
        Seen fa = out.get(1);
        assertEquals(Rdmap.ATOMIC_REQUEST, fa.opcode());
        assertEquals(1, fa.qn());
        assertEquals(2, fa.msn());
        assertEquals(0, fa.mo());
        assertEquals(2 + 18 + 52, fa.hdr());
        assertEquals(0, fa.payloadLength());
        MemorySegment s = fa.s();
        long a = fa.rdmap();
        assertEquals(AtomicRequest.FETCH_ADD, AtomicRequest.atomicOpcode(s, a));
        assertEquals(0, s.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), a) >>> 4, "reserved");
        assertEquals(1, AtomicRequest.requestId(s, a));
        assertEquals(SERVER_STAG, AtomicRequest.remoteStag(s, a));
        assertEquals(TARGET, AtomicRequest.remoteTaggedOffset(s, a));
        assertEquals(ADD, AtomicRequest.addOrSwapData(s, a));
        assertEquals(0, AtomicRequest.addOrSwapMask(s, a), "Add Mask 0: a plain 64-bit add");
        assertEquals(0, AtomicRequest.compareData(s, a));
        assertEquals(0, AtomicRequest.compareMask(s, a));
        assertArrayEquals(fa.bytes(), untagged(Rdmap.ATOMIC_REQUEST, 1, 2, AtomicRequest.LENGTH, new byte[0],
                (m, o) -> AtomicRequest.write(m, o, AtomicRequest.FETCH_ADD, 1, SERVER_STAG, TARGET, ADD, 0, 0, 0)));

        Seen cs = out.get(2);
        assertEquals(Rdmap.ATOMIC_REQUEST, cs.opcode());
        assertEquals(1, cs.qn());
        assertEquals(3, cs.msn());
        a = cs.rdmap();
        assertEquals(AtomicRequest.COMPARE_SWAP, AtomicRequest.atomicOpcode(cs.s(), a));
        assertEquals(2, AtomicRequest.requestId(cs.s(), a));
        assertEquals(SWAP, AtomicRequest.addOrSwapData(cs.s(), a));
        assertEquals(-1L, AtomicRequest.addOrSwapMask(cs.s(), a), "Swap Mask: all 64 bits");
        assertEquals(COMPARE, AtomicRequest.compareData(cs.s(), a));
        assertEquals(-1L, AtomicRequest.compareMask(cs.s(), a), "Compare Mask: all 64 bits");
        assertArrayEquals(cs.bytes(), untagged(Rdmap.ATOMIC_REQUEST, 1, 3, AtomicRequest.LENGTH, new byte[0],
                (m, o) -> AtomicRequest.write(m, o, AtomicRequest.COMPARE_SWAP, 2, SERVER_STAG, TARGET, SWAP, -1L,
                        COMPARE, -1L)));

        // the READ Response (tagged, to the READ's sink), then Atomic Responses on QN 3, MSN 1 and 2
        Seen rr = back.get(0);
        assertEquals(Rdmap.READ_RESPONSE, rr.opcode());
        assertEquals(CLIENT_STAG, Ddp.stag(rr.s(), rr.ddp()));
        assertEquals(CLIENT_BUF + 0x300, Ddp.taggedOffset(rr.s(), rr.ddp()));
        long[] originals = {TARGET_BEFORE, COMPARE};
        for (int i = 0; i < 2; i++) {
            Seen r = back.get(1 + i);
            assertEquals(Rdmap.ATOMIC_RESPONSE, r.opcode());
            assertEquals(3, r.qn());
            assertEquals(1 + i, r.msn());
            assertEquals(2 + 18 + 12, r.hdr());
            assertEquals(0, r.payloadLength());
            assertEquals(1 + i, AtomicResponse.originalRequestId(r.s(), r.rdmap()));
            assertEquals(originals[i], AtomicResponse.originalValue(r.s(), r.rdmap()));
            long value = originals[i];
            int msn = 1 + i;
            int id = 1 + i;
            assertArrayEquals(r.bytes(), untagged(Rdmap.ATOMIC_RESPONSE, 3, msn, AtomicResponse.LENGTH, new byte[0],
                    (m, o) -> AtomicResponse.write(m, o, id, value)));
        }

        // Immediate Data on QN 0: the 8-byte header alone (SEND_WITH_IMM of 0 bytes, RFC 7306's
        // message), then with 16 bytes of payload and SE (jrdma's SEND_WITH_IMM), then after the
        // WRITE of a WRITE_WITH_IMM (high word 1, docs/iwarp-design.md)
        Seen imm = out.get(3);
        assertEquals(Rdmap.IMMEDIATE_DATA, imm.opcode());
        assertEquals(0, imm.qn());
        assertEquals(1, imm.msn());
        assertEquals(2 + 18 + 8, imm.hdr());
        assertEquals(0, imm.payloadLength());
        assertEquals(0x1234_5678L, ImmediateData.value(imm.s(), imm.rdmap()));
        assertArrayEquals(imm.bytes(), untagged(Rdmap.IMMEDIATE_DATA, 0, 1, ImmediateData.LENGTH, new byte[0],
                (m, o) -> ImmediateData.write(m, o, 0x1234_5678L)));

        Seen immSe = out.get(4);
        assertEquals(Rdmap.IMMEDIATE_DATA_SE, immSe.opcode());
        assertEquals(0, immSe.qn());
        assertEquals(2, immSe.msn());
        assertEquals(16, immSe.payloadLength());
        assertEquals(0xCAFE_BABEL, ImmediateData.value(immSe.s(), immSe.rdmap()));
        byte[] text = "RFC 7306 imm!!!\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        assertArrayEquals(immSe.bytes(), untagged(Rdmap.IMMEDIATE_DATA_SE, 0, 2, ImmediateData.LENGTH, text,
                (m, o) -> ImmediateData.write(m, o, 0xCAFE_BABEL)));

        Seen write = out.get(5);
        assertEquals(Rdmap.WRITE, write.opcode());
        assertEquals(SERVER_STAG, Ddp.stag(write.s(), write.ddp()));
        assertEquals(TARGET - 0x100 + 0x2000, Ddp.taggedOffset(write.s(), write.ddp()));
        Seen afterWrite = out.get(6);
        assertEquals(Rdmap.IMMEDIATE_DATA, afterWrite.opcode());
        assertEquals(3, afterWrite.msn());
        assertEquals(0, afterWrite.payloadLength());
        assertEquals(0x1_0BAD_F00DL, ImmediateData.value(afterWrite.s(), afterWrite.rdmap()));
        assertArrayEquals(afterWrite.bytes(), untagged(Rdmap.IMMEDIATE_DATA, 0, 3, ImmediateData.LENGTH,
                new byte[0], (m, o) -> ImmediateData.write(m, o, 0x1_0BAD_F00DL)));
    }
}

package io.jrdma.wire;

import static io.jrdma.wire.IbOpcode.RC_ACKNOWLEDGE;
import static io.jrdma.wire.IbOpcode.RC_ATOMIC_ACKNOWLEDGE;
import static io.jrdma.wire.IbOpcode.RC_COMPARE_SWAP;
import static io.jrdma.wire.IbOpcode.RC_FETCH_ADD;
import static io.jrdma.wire.IbOpcode.RC_RDMA_READ_REQUEST;
import static io.jrdma.wire.IbOpcode.RC_RDMA_READ_RESPONSE_FIRST;
import static io.jrdma.wire.IbOpcode.RC_RDMA_READ_RESPONSE_LAST;
import static io.jrdma.wire.IbOpcode.RC_RDMA_READ_RESPONSE_MIDDLE;
import static io.jrdma.wire.IbOpcode.RC_RDMA_READ_RESPONSE_ONLY;
import static io.jrdma.wire.IbOpcode.RC_RDMA_WRITE_ONLY;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.wire.RoceChecker.Packet;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Specific field values of known packets in the captures. */
class DecodedValuesTest {

    private static List<Packet> capture(String name) throws Exception {
        return RoceChecker.check(Captures.read(name)).packets();
    }

    private static List<Packet> only(List<Packet> ps, int opcode) {
        return ps.stream().filter(p -> p.opcode() == opcode).toList();
    }

    @Test
    void writeLatIsWriteOnlyWithTwoBytesAndPadTwo() throws Exception {
        List<Packet> ps = capture("roce-ib_write_lat.pcap");
        List<Packet> writes = only(ps, RC_RDMA_WRITE_ONLY);
        List<Packet> acks = only(ps, RC_ACKNOWLEDGE);
        assertEquals(23, writes.size());
        assertEquals(23, acks.size());
        for (Packet w : writes) {
            assertEquals(2, w.payloadLength());
            assertEquals(2, w.padCnt());
            assertEquals(2, w.rethDmaLength());
            assertEquals(28, w.headerLength());
            assertTrue(w.ackReq());
            assertEquals(0xFFFF, w.pkey());
            assertEquals(44 - 8, w.udp().payloadLength());
            // rxe picks the UDP source port from the QP numbers (both sides use QPN 0x14 here)
            assertEquals(RoceV2.udpSourcePort(w.destQp(), w.destQp()), w.udp().srcPort());
        }
        for (Packet a : acks) {
            assertEquals(Aeth.ACK_UNLIMITED, a.aethSyndrome());
            assertTrue(Aeth.isAck(a.aethSyndrome()));
            assertEquals(Aeth.CREDIT_UNLIMITED, Aeth.credits(a.aethSyndrome()));
            assertFalse(a.ackReq());
            assertEquals(0, a.payloadLength());
        }
        // Each ACK acknowledges, by PSN, the last write sent the other way. The capture has
        // retransmitted writes and duplicate ACKs: a duplicate is re-ACKed with the same MSN,
        // so MSN - 1 == PSN - first PSN for these single-packet messages.
        java.util.Map<Integer, Integer> firstPsn = new java.util.HashMap<>();
        int duplicates = 0;
        for (int i = 0; i < ps.size(); i++) {
            Packet a = ps.get(i);
            if (!a.is(RC_ACKNOWLEDGE)) {
                if (firstPsn.putIfAbsent(a.ipSrc(), a.psn()) != null
                        && ps.subList(0, i).stream().anyMatch(p -> p.is(RC_RDMA_WRITE_ONLY)
                                && p.ipSrc() == a.ipSrc() && p.psn() == a.psn())) {
                    duplicates++;
                }
                continue;
            }
            Packet w = ps.subList(0, i).reversed().stream()
                    .filter(p -> p.is(RC_RDMA_WRITE_ONLY) && p.ipSrc() == a.ipDst())
                    .findFirst().orElseThrow(() -> new AssertionError("no write before " + a));
            assertEquals(w.psn(), a.psn(), "ACK PSN = PSN of the write it acknowledges");
            assertEquals(Psn.diff(a.psn(), firstPsn.get(a.ipDst())) + 1, a.aethMsn(), "MSN");
        }
        assertEquals(3, duplicates, "retransmitted writes in this capture");
    }

    @Test
    void readLatResponsesAreOnlyWithTwoBytes() throws Exception {
        List<Packet> ps = capture("roce-ib_read_lat.pcap");
        List<Packet> reqs = only(ps, RC_RDMA_READ_REQUEST);
        List<Packet> resps = only(ps, RC_RDMA_READ_RESPONSE_ONLY);
        assertEquals(11, reqs.size());
        assertEquals(11, resps.size());
        for (int i = 0; i < reqs.size(); i++) {
            Packet q = reqs.get(i);
            Packet r = resps.get(i);
            assertEquals(2, q.rethDmaLength());
            assertEquals(0, q.payloadLength());
            assertTrue(q.ackReq());
            assertEquals(q.psn(), r.psn());
            assertEquals(q.destQp(), r.destQp());
            assertEquals(2, r.payloadLength());
            assertEquals(2, r.padCnt());
            assertEquals(16, r.headerLength());
            assertFalse(r.ackReq());
            assertEquals(Aeth.ACK_UNLIMITED, r.aethSyndrome());
            // one request is retransmitted and answered twice with the same MSN
            assertEquals(Psn.diff(r.psn(), reqs.getFirst().psn()) + 1, r.aethMsn());
            if (i > 0) {
                int d = Psn.diff(q.psn(), reqs.get(i - 1).psn());
                assertTrue(d == 1 || d == 0, "PSN advances by one (or repeats on retry)");
            }
        }
    }

    @Test
    void fetchAddAndAtomicAcknowledge() throws Exception {
        List<Packet> ps = capture("roce-ib_atomic_bw_fetch_add.pcap");
        List<Packet> reqs = only(ps, RC_FETCH_ADD);
        List<Packet> acks = only(ps, RC_ATOMIC_ACKNOWLEDGE);
        assertEquals(16, reqs.size());
        assertEquals(16, acks.size());
        for (int i = 0; i < 16; i++) {
            Packet q = reqs.get(i);
            Packet a = acks.get(i);
            assertEquals(40, q.headerLength());
            assertEquals(0, q.payloadLength());
            assertEquals(1L, q.atomicSwapAdd());
            assertEquals(0L, q.atomicCompare());
            assertEquals(0, q.atomicVa() & 7, "atomic VA must be 8-byte aligned");
            assertTrue(q.ackReq());
            // the AtomicAckETH follows the AETH
            assertEquals(24, a.headerLength());
            assertEquals(0, a.payloadLength());
            assertEquals(12 + 4 + 8 + 4, a.udp().payloadLength());
            assertEquals(q.psn(), a.psn());
            assertEquals(Aeth.ACK_UNLIMITED, a.aethSyndrome());
            assertEquals(i + 1, a.aethMsn());
            if (i > 0) {
                assertEquals(1, Psn.diff(q.psn(), reqs.get(i - 1).psn()));
            }
        }
    }

    @Test
    void compareSwapRequests() throws Exception {
        List<Packet> ps = capture("roce-ib_atomic_bw_cmp_swap.pcap");
        assertEquals(16, only(ps, RC_COMPARE_SWAP).size());
        assertEquals(16, only(ps, RC_ATOMIC_ACKNOWLEDGE).size());
        for (Packet q : only(ps, RC_COMPARE_SWAP)) {
            assertEquals(40, q.headerLength());
            assertTrue(q.ackReq());
        }
    }

    @Test
    void readBwRequestsOf4096AndResponsePsnsAdvanceByOne() throws Exception {
        List<Packet> ps = capture("roce-ib_read_bw.pcap");
        List<Packet> reqs = only(ps, RC_RDMA_READ_REQUEST);
        assertEquals(16, reqs.size());
        for (int i = 0; i < reqs.size(); i++) {
            Packet q = reqs.get(i);
            assertEquals(4096, q.rethDmaLength());
            assertEquals(0, q.payloadLength());
            assertTrue(q.ackReq());
            if (i > 0) {
                // a READ consumes ceil(4096 / 1024) = 4 PSNs
                assertEquals(4, Psn.diff(q.psn(), reqs.get(i - 1).psn()));
            }
        }
        // group the responses into messages: First, Middle, Middle, Last
        List<List<Packet>> messages = new ArrayList<>();
        for (Packet p : ps) {
            if (p.is(RC_RDMA_READ_RESPONSE_FIRST)) {
                messages.add(new ArrayList<>());
            }
            if ((IbOpcode.mask(p.opcode()) & IbOpcode.READ_RESP) != 0) {
                messages.getLast().add(p);
            }
        }
        assertEquals(16, messages.size());
        for (int m = 0; m < messages.size(); m++) {
            List<Packet> msg = messages.get(m);
            int[] ops = msg.stream().mapToInt(Packet::opcode).toArray();
            assertArrayEquals(new int[] {RC_RDMA_READ_RESPONSE_FIRST, RC_RDMA_READ_RESPONSE_MIDDLE,
                RC_RDMA_READ_RESPONSE_MIDDLE, RC_RDMA_READ_RESPONSE_LAST}, ops);
            Packet req = reqs.get(m);
            for (int k = 0; k < msg.size(); k++) {
                Packet r = msg.get(k);
                assertEquals(Psn.add(req.psn(), k), r.psn(), "response PSN advances by one");
                assertEquals(1024, r.payloadLength());
                assertEquals(0, r.padCnt());
                assertFalse(r.ackReq());
            }
            assertEquals(16, msg.getFirst().headerLength());
            assertEquals(12, msg.get(1).headerLength());
            assertEquals(m + 1, msg.getFirst().aethMsn());
            assertEquals(m + 1, msg.getLast().aethMsn());
            assertEquals(Aeth.ACK_UNLIMITED, msg.getLast().aethSyndrome());
        }
    }

    @Test
    void writeBwAckReqOnlyOnLastPackets() throws Exception {
        List<Packet> ps = capture("roce-ib_write_bw.pcap");
        for (Packet p : ps) {
            int m = IbOpcode.mask(p.opcode());
            if ((m & IbOpcode.WRITE) != 0) {
                assertEquals((m & IbOpcode.LAST) != 0, p.ackReq(), IbOpcode.name(p.opcode()));
                if (p.is(IbOpcode.RC_RDMA_WRITE_FIRST)) {
                    assertEquals(4096, p.rethDmaLength());
                    assertEquals(28, p.headerLength());
                }
                assertEquals(1024, p.payloadLength());
            }
        }
    }

    @Test
    void rdmaCmMadsAreUdOnQp1WithGsiQkey() throws Exception {
        List<Packet> ps = capture("roce-rdma_cm_ib_write_lat.pcap");
        List<Packet> mads = only(ps, IbOpcode.UD_SEND_ONLY);
        assertEquals(10, mads.size());
        for (Packet p : mads) {
            assertEquals(1, p.destQp());
            assertEquals(Deth.GSI_QKEY, p.dethQkey());
            assertEquals(1, p.dethSrcQp());
            assertEquals(20, p.headerLength());
            assertEquals(256, p.payloadLength(), "a MAD is 256 bytes");
            assertEquals(1, p.payload()[0], "MAD base version");
            assertEquals(7, p.payload()[1], "management class CM");
            assertEquals(2, p.payload()[2], "CM class version");
        }
        // the rdma_cm private-data handshake uses short SENDs, some with pad
        List<Packet> sends = only(ps, IbOpcode.RC_SEND_ONLY);
        assertEquals(20, sends.size());
        assertTrue(sends.stream().anyMatch(p -> p.padCnt() == 2 && p.payloadLength() == 2));
    }
}

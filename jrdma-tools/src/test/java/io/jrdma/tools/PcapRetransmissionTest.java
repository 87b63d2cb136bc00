package io.jrdma.tools;

import io.jrdma.wire.Aeth;
import io.jrdma.wire.Bth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.PcapReader;
import io.jrdma.wire.PcapWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jrdma pcap --timeout-us} on captures holding several connections (perftest's -q, an SRQ
 * ping-pong): a retransmission is judged by its own connection's ACKs and NAKs, and a go-back-N
 * burst by the retransmission that started it.
 */
class PcapRetransmissionTest {
    private static final byte[] JRDMA = addr("fe80::1");
    private static final byte[] PEER = addr("fe80::2");
    private static final long MS = 1_000_000L;
    /** An ACK syndrome: type ACK, 31 credits (the "no credit limit" code rxe and jrdma send). */
    private static final int ACK = 0x1F;

    @Test
    void anotherConnectionsAckDoesNotAnswerThisOne(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("two-qps.pcap");
        try (PcapWriter w = PcapWriter.create(f, PcapReader.LINKTYPE_ETHERNET)) {
            request(w, 0, JRDMA, PEER, 0x10, 9000);     // QP 0x30 -> peer QP 0x10
            request(w, 1 * MS, JRDMA, PEER, 0x20, 5000); // QP 0x31 -> peer QP 0x20
            ack(w, 2 * MS, PEER, JRDMA, 0x30, 9000, ACK);   // QP 0x10's answer only
            request(w, 71 * MS, JRDMA, PEER, 0x20, 5000); // QP 0x20: a whole timeout without an answer
            ack(w, 72 * MS, PEER, JRDMA, 0x31, 5000, ACK);
        }
        StringBuilder out = new StringBuilder();
        // the other QP's ACK (PSN 9000, after 5000 in 24-bit order) must not count as an answer to QP 0x20
        assertEquals(0, run(f, out), out.toString());
        assertTrue(out.toString().contains("each after a whole timeout"), out.toString());
    }

    @Test
    void aNakJustifiesItsGoBackNBurstAndAnEarlyResendIsStillCaught(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("nak.pcap");
        try (PcapWriter w = PcapWriter.create(f, PcapReader.LINKTYPE_ETHERNET)) {
            for (int p = 100; p < 104; p++) {
                request(w, p * 1000L, JRDMA, PEER, 0x10, p);
            }
            ack(w, 2 * MS, PEER, JRDMA, 0x30, 101, 0x60); // sequence NAK: resend from 101
            for (int p = 101; p < 104; p++) {
                request(w, 3 * MS + p, JRDMA, PEER, 0x10, p);
            }
            ack(w, 4 * MS, PEER, JRDMA, 0x30, 103, ACK);
        }
        StringBuilder out = new StringBuilder();
        assertEquals(0, run(f, out), out.toString());

        Path g = dir.resolve("early.pcap");
        try (PcapWriter w = PcapWriter.create(g, PcapReader.LINKTYPE_ETHERNET)) {
            request(w, 0, JRDMA, PEER, 0x10, 200);
            request(w, 5 * MS, JRDMA, PEER, 0x10, 200); // neither answered nor timed out: early
            ack(w, 6 * MS, PEER, JRDMA, 0x30, 200, ACK);
        }
        StringBuilder out2 = new StringBuilder();
        assertEquals(1, run(g, out2), out2.toString());
        assertTrue(out2.toString().contains("before a whole timeout"), out2.toString());
    }

    /**
     * An RNR NAK (syndrome 0x20-0x3F) asks for its PSN and every later one again once its timer ran, as a sequence NAK
     * does: the go-back-N burst after it is jrdma's right, not an early resend. It was taken for an ACK of its PSN (only
     * sequence NAKs were NAKs to the check), so the burst's first request counted as resent after an answer: seen in
     * the interop suite's `ib_send_bw --use-srq -q 4 -s 2` case against rxe, whose receive queue ran dry (2026-11-27).
     */
    @Test
    void anRnrNakJustifiesItsGoBackNBurst(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("rnr.pcap");
        try (PcapWriter w = PcapWriter.create(f, PcapReader.LINKTYPE_ETHERNET)) {
            for (int p = 300; p < 304; p++) {
                request(w, p * 1000L, JRDMA, PEER, 0x10, p);
            }
            ack(w, 2 * MS, PEER, JRDMA, 0x30, 300, ACK);
            ack(w, 2 * MS + 1, PEER, JRDMA, 0x30, 301, 0x2C); // RNR NAK, timer code 12: resend from 301 later
            for (int p = 301; p < 304; p++) {
                request(w, 14 * MS + p, JRDMA, PEER, 0x10, p);
            }
            ack(w, 15 * MS, PEER, JRDMA, 0x30, 303, ACK);
        }
        StringBuilder out = new StringBuilder();
        assertEquals(0, run(f, out), out.toString());
        assertTrue(out.toString().contains("or asked for by a NAK; none by the peer; the peer sent 1 RNR NAK"), out.toString());
    }

    private static int run(Path f, StringBuilder output) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        int rc = PcapCommand.run(List.of(f.toString(), "--from", "fe80::1", "--timeout-us", "67108"),
                new PrintStream(o, true, StandardCharsets.UTF_8), new PrintStream(e, true, StandardCharsets.UTF_8));
        output.append(o.toString(StandardCharsets.UTF_8)).append(e.toString(StandardCharsets.UTF_8));
        return rc;
    }

    private static void request(PcapWriter w, long at, byte[] src, byte[] dst, int destQp, int psn) throws Exception {
        ByteBuffer b = ByteBuffer.allocateDirect(Bth.LENGTH + Icrc.LENGTH);
        MemorySegment s = MemorySegment.ofBuffer(b);
        Bth.write(s, 0, IbOpcode.RC_SEND_ONLY, false, false, 0, 0xFFFF, destQp, true, psn);
        finish(w, at, src, dst, b, Bth.LENGTH);
    }

    private static void ack(PcapWriter w, long at, byte[] src, byte[] dst, int destQp, int psn, int syndrome)
            throws Exception {
        ByteBuffer b = ByteBuffer.allocateDirect(Bth.LENGTH + Aeth.LENGTH + Icrc.LENGTH);
        MemorySegment s = MemorySegment.ofBuffer(b);
        Bth.write(s, 0, IbOpcode.RC_ACKNOWLEDGE, false, false, 0, 0xFFFF, destQp, false, psn);
        Aeth.write(s, Bth.LENGTH, syndrome, 1);
        finish(w, at, src, dst, b, Bth.LENGTH + Aeth.LENGTH);
    }

    private static void finish(PcapWriter w, long at, byte[] src, byte[] dst, ByteBuffer b, int len) throws Exception {
        int icrc = new Icrc().computeIpv6(src, dst, 49152, 4791, b, 0, len);
        Icrc.write(MemorySegment.ofBuffer(b), len, icrc);
        b.position(0).limit(len + Icrc.LENGTH);
        w.writeIpv6Udp(1_000_000_000L + at, src, dst, 49152, 4791, b);
    }

    private static byte[] addr(String s) {
        try {
            return InetAddress.getByName(s).getAddress();
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }
}

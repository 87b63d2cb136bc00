package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.wire.Captures;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Golden test: every iWARP capture of two Linux siw peers in the capture folder
 * (testdata/pcaps/iwarp-*.pcap), reassembled per TCP direction, decoded FPDU by FPDU,
 * checked for consistency and re-encoded byte for byte (see {@link SiwStreamDecoder}).
 * Fails, does not skip, when the folder is missing; -Djrdma.pcaps=DIR overrides it.
 */
class SiwCapturesTest {

    /** A decoded capture. */
    record Capture(String name, List<SiwStreamDecoder[]> connections) {
        Stream<SiwStreamDecoder> streams() {
            return connections.stream().flatMap(Stream::of);
        }

        int fpdus() {
            return streams().mapToInt(d -> d.fpdus.size()).sum();
        }

        /** "opcode=count ..." over all FPDUs. */
        String opcodeHistogram() {
            Map<String, Integer> h = new TreeMap<>();
            streams().flatMap(d -> d.fpdus.stream())
                    .forEach(f -> h.merge(Rdmap.name(f.opcode()), 1, Integer::sum));
            return h.toString();
        }
    }

    static Capture decode(Path file) throws Exception {
        List<SiwStreamDecoder[]> conns = new ArrayList<>();
        for (TcpStreams.Connection c : TcpStreams.read(file)) {
            SiwStreamDecoder a = new SiwStreamDecoder(c.initiator());
            SiwStreamDecoder b = new SiwStreamDecoder(c.responder());
            a.decode();
            b.decode();
            // every READ Request is answered, in order, by one READ Response message that
            // targets its sink STag/TO and has its size
            assertEquals(a.readsSent, b.readResponses, file + ": READs initiator > responder");
            assertEquals(b.readsSent, a.readResponses, file + ": READs responder > initiator");
            conns.add(new SiwStreamDecoder[] {a, b});
        }
        return new Capture(file.getFileName().toString(), conns);
    }

    static Capture decode(String name) throws Exception {
        return decode(Captures.path(name));
    }

    /** FPDUs and opcode histogram per capture (tshark 4.0.17 finds the same counts). */
    static final Map<String, String> EXPECTED = Map.of(
            "iwarp-ib_read_bw.pcap", "96 {READ_REQUEST=16, READ_RESPONSE=48, SEND=32}",
            "iwarp-ib_read_lat.pcap", "42 {READ_REQUEST=10, READ_RESPONSE=10, SEND=22}",
            "iwarp-ib_send_bw.pcap", "74 {SEND=70, WRITE=4}",
            "iwarp-ib_write_bw.pcap", "80 {SEND=32, WRITE=48}",
            "iwarp-ib_write_lat-hang-early-send.pcap", "1 {SEND=1}",
            "iwarp-rping.pcap", "21 {READ_REQUEST=3, READ_RESPONSE=3, SEND=12, WRITE=3}");

    @TestFactory
    Stream<DynamicTest> everyIwarpCapture() throws Exception {
        List<Path> files = Captures.list("iwarp-");
        assertTrue(files.size() >= EXPECTED.size(), "iwarp-*.pcap captures: " + files);
        return files.stream().map(f -> DynamicTest.dynamicTest(f.getFileName().toString(), () -> {
            Capture c = decode(f);
            assertTrue(c.fpdus() > 0, f + ": no FPDUs");
            String expected = EXPECTED.get(c.name());
            if (expected != null) {
                assertEquals(expected, c.fpdus() + " " + c.opcodeHistogram(), c.name());
            }
            for (SiwStreamDecoder d : c.streams().toList()) {
                // siw defaults: MPA revision 2, H flag, no markers, no CRC, IRD/ORD block only
                assertEquals(Mpa.FLAG_ENHANCED, d.mpa.flags(), d.stream.flow + ": MPA flags");
                assertEquals(Mpa.REVISION_2, d.mpa.revision());
                assertEquals(MpaEnhanced.LENGTH, d.mpa.privateData().length);
                assertEquals(0, d.mpa.applicationData().length);
                assertFalse(d.mpa.peerToPeer());
            }
        }));
    }

    @Test
    void allCapturesTogether() throws Exception {
        int fpdus = 0;
        int straddling = 0;
        int stale = 0;
        int padded = 0;
        for (String name : EXPECTED.keySet()) {
            Capture c = decode(name);
            fpdus += c.fpdus();
            for (SiwStreamDecoder d : c.streams().toList()) {
                for (SiwStreamDecoder.Decoded f : d.fpdus) {
                    straddling += f.segments() > 1 ? 1 : 0;
                    padded += Fpdu.padLength(f.ulpduLength()) > 0 ? 1 : 0;
                    if (f.stalePad()) {
                        stale++;
                        // only ever the 2-byte inline SEND of perftest's handshake
                        assertEquals(Rdmap.SEND, f.opcode(), name + " frame " + f.frame());
                        assertEquals(2, f.payloadLength(), name + " frame " + f.frame());
                    }
                }
            }
        }
        assertEquals(314, fpdus);
        assertEquals(46, straddling);
        assertEquals(18, padded);
        assertEquals(8, stale);
    }

    private static SiwStreamDecoder side(Capture c, int connection, boolean initiator) {
        return c.connections().get(connection)[initiator ? 0 : 1];
    }

    private static List<SiwStreamDecoder.Decoded> of(SiwStreamDecoder d, int opcode) {
        return d.fpdus.stream().filter(f -> f.opcode() == opcode).toList();
    }

    @Test
    void rping() throws Exception {
        Capture c = decode("iwarp-rping.pcap");
        assertEquals(1, c.connections().size());
        SiwStreamDecoder client = side(c, 0, true);
        SiwStreamDecoder server = side(c, 0, false);
        for (SiwStreamDecoder d : List.of(client, server)) {
            assertEquals(1, d.mpa.ird());
            assertEquals(1, d.mpa.ord());
            assertEquals(0x0001, d.mpa.irdWord());
            assertEquals(0x0001, d.mpa.ordWord());
            assertFalse(d.mpa.crc() || d.mpa.markers() || d.mpa.reject());
            // six 16-byte SENDs (rping's buffer advertisements) on QN 0, MSN 1..6
            List<SiwStreamDecoder.Decoded> sends = of(d, Rdmap.SEND);
            assertEquals(6, sends.size());
            for (int i = 0; i < 6; i++) {
                assertEquals(i + 1, sends.get(i).msn());
                assertEquals(Rdmap.QN_SEND, sends.get(i).qn());
                assertEquals(16, sends.get(i).payloadLength());
                assertEquals(34, sends.get(i).ulpduLength());
                assertEquals(40, sends.get(i).length());
            }
        }
        assertEquals("Request", client.mpa.reply() ? "Reply" : "Request");
        assertTrue(server.mpa.reply());
        // the server READs the client's 64-byte ping buffer, then WRITEs it back
        List<SiwStreamDecoder.Decoded> reads = of(server, Rdmap.READ_REQUEST);
        assertEquals(3, reads.size());
        for (int i = 0; i < 3; i++) {
            SiwStreamDecoder.Decoded r = reads.get(i);
            assertEquals(Rdmap.QN_READ_REQUEST, r.qn());
            assertEquals(i + 1, r.msn());
            assertEquals(46, r.ulpduLength());
            assertEquals(64, r.readRequest()[3]);
            SiwStreamDecoder.Decoded resp = of(client, Rdmap.READ_RESPONSE).get(i);
            assertEquals(r.readRequest()[0], resp.stag());
            assertEquals(64, resp.payloadLength());
            assertTrue(resp.last());
            String text = new String(client.slice(resp.streamOffset() + resp.headerLength(), 13),
                    java.nio.charset.StandardCharsets.US_ASCII);
            assertEquals("rdma-ping-" + i + ": ", text);
        }
        assertEquals(3, of(server, Rdmap.WRITE).size());
        of(server, Rdmap.WRITE).forEach(w -> assertEquals(64, w.payloadLength()));
    }

    @Test
    void perftestMpaPrivateData() throws Exception {
        // perftest -R: a handshake connection (IRD/ORD 0/0), then the data connection with
        // IRD/ORD 128/128 for READ tests and 0/0 otherwise
        for (String name : List.of("iwarp-ib_read_bw.pcap", "iwarp-ib_read_lat.pcap",
                "iwarp-ib_send_bw.pcap", "iwarp-ib_write_bw.pcap")) {
            Capture c = decode(name);
            assertEquals(2, c.connections().size(), name);
            int data = name.contains("read") ? 128 : 0;
            for (boolean initiator : new boolean[] {true, false}) {
                assertEquals(0, side(c, 0, initiator).mpa.ird(), name);
                assertEquals(0, side(c, 0, initiator).mpa.ord(), name);
                assertEquals(data, side(c, 1, initiator).mpa.ird(), name);
                assertEquals(data, side(c, 1, initiator).mpa.ord(), name);
            }
        }
    }

    @Test
    void sendBwSegmentsUntaggedMessages() throws Exception {
        SiwStreamDecoder client = side(decode("iwarp-ib_send_bw.pcap"), 1, true);
        List<SiwStreamDecoder.Decoded> sends = of(client, Rdmap.SEND);
        assertEquals(48, sends.size());
        for (int i = 0; i < sends.size(); i++) {
            SiwStreamDecoder.Decoded s = sends.get(i);
            int part = i % 3;
            assertEquals(i / 3 + 1, s.msn());
            assertEquals(part * 1424, s.mo());
            assertEquals(part == 2 ? 1248 : 1424, s.payloadLength());
            assertEquals(part == 2, s.last());
            // FPDUs sized to the 1448-byte MSS: 2 + 18 + 1424 + 4
            assertEquals(part == 2 ? 1272 : 1448, s.length());
        }
        assertTrue(sends.stream().filter(s -> s.segments() > 1).count() > 30,
                "siw sent the CRC field of most full-size FPDUs in a TCP segment of its own");
    }

    @Test
    void writeBwSegmentsTaggedMessages() throws Exception {
        SiwStreamDecoder client = side(decode("iwarp-ib_write_bw.pcap"), 1, true);
        List<SiwStreamDecoder.Decoded> writes = of(client, Rdmap.WRITE);
        assertEquals(48, writes.size());
        long base = writes.get(0).taggedOffset();
        for (int i = 0; i < writes.size(); i++) {
            SiwStreamDecoder.Decoded w = writes.get(i);
            int part = i % 3;
            assertEquals(writes.get(0).stag(), w.stag());
            assertEquals(base + part * 1428L, w.taggedOffset());
            assertEquals(part == 2 ? 1240 : 1428, w.payloadLength());
            assertEquals(part == 2, w.last());
        }
    }

    @Test
    void readBwRequestsAndResponses() throws Exception {
        Capture c = decode("iwarp-ib_read_bw.pcap");
        SiwStreamDecoder client = side(c, 1, true);
        SiwStreamDecoder server = side(c, 1, false);
        List<SiwStreamDecoder.Decoded> reqs = of(client, Rdmap.READ_REQUEST);
        assertEquals(16, reqs.size());
        for (int i = 0; i < 16; i++) {
            assertEquals(i + 1, reqs.get(i).msn());
            assertEquals(4096, reqs.get(i).readRequest()[3]);
        }
        // several READ Requests share one TCP segment (frame 49 carries ten)
        assertEquals(10, reqs.stream().filter(r -> r.frame() == 49).count());
        assertEquals(16, server.readResponses.size());
        assertEquals(48, of(server, Rdmap.READ_RESPONSE).size());
        assertTrue(c.connections().get(0)[0].stream.retransmittedBytes > 0,
                "the handshake connection has a TCP retransmission");
    }

    @Test
    void padding() throws Exception {
        // 2-byte READ Responses: ULPDU 14 + 2 = 16, 2 zero pad bytes
        SiwStreamDecoder server = side(decode("iwarp-ib_read_lat.pcap"), 1, false);
        for (SiwStreamDecoder.Decoded r : of(server, Rdmap.READ_RESPONSE)) {
            assertEquals(16, r.ulpduLength());
            assertEquals(2, Fpdu.padLength(r.ulpduLength()));
            assertEquals(24, r.length());
            assertFalse(r.stalePad());
        }
        // the 2-byte inline SEND of the handshake: pad = bytes 2-3 of the previous SEND's
        // payload ("00 40"), which siw leaves in its header buffer
        SiwStreamDecoder hs = side(decode("iwarp-ib_send_bw.pcap"), 0, true);
        SiwStreamDecoder.Decoded two = hs.fpdus.get(3);
        assertEquals(2, two.payloadLength());
        assertTrue(two.stalePad());
        assertArrayEquals(new byte[] {0x00, 0x40}, hs.slice(two.streamOffset() + 22, 2));
        SiwStreamDecoder.Decoded prev = hs.fpdus.get(2);
        assertArrayEquals(hs.slice(prev.streamOffset() + 22, 2),
                hs.slice(two.streamOffset() + 22, 2));
    }

    @Test
    void hangCaptureIsWellFormed() throws Exception {
        // the stall in this run is not a framing problem: the early SEND decodes normally
        Capture c = decode("iwarp-ib_write_lat-hang-early-send.pcap");
        SiwStreamDecoder.Decoded s = side(c, 0, true).fpdus.get(0);
        assertEquals(Rdmap.SEND, s.opcode());
        assertEquals(1, s.msn());
        assertEquals(16, s.payloadLength());
        assertEquals(0, side(c, 0, false).fpdus.size());
    }
}

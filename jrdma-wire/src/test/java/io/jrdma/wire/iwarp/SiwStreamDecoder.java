package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Decodes one reassembled direction of a siw connection with the codecs under test:
 * the MPA Request or Reply, then every FPDU. Checks each FPDU's fields for consistency
 * (per-queue MSN/MO sequences, tagged offsets, READ Request / Response pairing) and
 * re-encodes it from the decoded fields, comparing byte for byte.
 */
final class SiwStreamDecoder {

    /** The fields of one decoded FPDU. */
    record Decoded(long streamOffset, int frame, int segments, int length, int ulpduLength,
            boolean tagged, boolean last, int opcode, int stag, long taggedOffset, int ulpWord,
            int qn, int msn, int mo, int headerLength, int payloadLength, int crcField,
            boolean stalePad, int[] readRequest) {
    }

    /** A READ Request as seen on the wire: sink STag, sink TO, size. */
    record PendingRead(int sinkStag, long sinkTo, int size) {
    }

    final TcpStreams.Stream stream;
    final MemorySegment seg;
    MpaRequestReply mpa;
    final List<Decoded> fpdus = new ArrayList<>();
    /** Completed untagged messages per QN: their lengths. */
    final List<List<Integer>> untaggedMessages = List.of(
            new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    /** Completed tagged messages: {opcode, length}. */
    final List<int[]> taggedMessages = new ArrayList<>();
    /** READ Requests this side sent, in order. */
    final List<PendingRead> readsSent = new ArrayList<>();
    /** READ Responses this side sent: first STag and TO, total length. */
    final List<PendingRead> readResponses = new ArrayList<>();

    private final int[] lastMsn = new int[4];
    private final boolean[] open = new boolean[4];
    private final int[] moNext = new int[4];
    private boolean taggedOpen;
    private int taggedStag;
    private long taggedNext;
    private int taggedOpcode;
    private long taggedStart;

    SiwStreamDecoder(TcpStreams.Stream stream) {
        this.stream = stream;
        this.seg = MemorySegment.ofArray(stream.bytes);
    }

    /** Decodes the MPA frame and all FPDUs. */
    void decode() throws Exception {
        long avail = stream.bytes.length;
        boolean reply = !stream.initiator;
        int n = Mpa.check(seg, 0, avail, reply);
        assertTrue(n > 0, stream.flow + ": MPA " + (reply ? "Reply" : "Request") + " check "
                + n + " " + IwarpError.fromResult(n));
        mpa = MpaRequestReply.decode(seg, 0, avail, reply);
        // re-encode the MPA frame both ways and compare
        byte[] again = new byte[mpa.length()];
        assertEquals(n, mpa.encode(MemorySegment.ofArray(again), 0));
        assertArrayEquals(slice(0, n), again, stream.flow + ": MPA frame re-encode");
        byte[] manual = new byte[n];
        MemorySegment m = MemorySegment.ofArray(manual);
        Mpa.writeHeader(m, 0, reply, Mpa.flags(seg, 0), Mpa.revision(seg, 0),
                Mpa.privateDataLength(seg, 0));
        MpaEnhanced.write(m, Mpa.PRIVATE_DATA_OFFSET, mpa.ird(), mpa.ord(), mpa.peerToPeer(),
                MpaEnhanced.rtrSend(seg, 20), MpaEnhanced.rtrWrite(seg, 20),
                MpaEnhanced.rtrRead(seg, 20));
        assertArrayEquals(slice(0, n), manual, stream.flow + ": MPA header re-encode");

        long off = n;
        while (off < avail) {
            int len = Fpdu.scan(seg, off, avail - off, Fpdu.MAX_ULPDU_LENGTH);
            assertTrue(len > 0, stream.flow + " @" + off + " (frame " + stream.frameAt(off)
                    + "): scan " + len + " " + IwarpError.fromResult(len));
            decodeOne(off, len);
            off += len;
        }
        assertEquals(avail, off, stream.flow + ": stream ends inside an FPDU");
        for (int q = 0; q < 4; q++) {
            assertFalse(open[q], stream.flow + ": untagged message on QN " + q + " not finished");
        }
        assertFalse(taggedOpen, stream.flow + ": tagged message not finished");
    }

    private void decodeOne(long off, int len) {
        String where = stream.flow + " FPDU @" + off + " (frame " + stream.frameAt(off) + ")";
        int hdr = Fpdu.check(seg, off, len, false, Fpdu.MAX_ULPDU_LENGTH);
        assertTrue(hdr > 0, where + ": check " + hdr + " " + IwarpError.fromResult(hdr));
        int ulpdu = Fpdu.ulpduLength(seg, off);
        assertEquals(Fpdu.length(ulpdu), len);
        long ddp = off + Fpdu.ULPDU_OFFSET;
        boolean tagged = Ddp.tagged(seg, ddp);
        int opcode = Rdmap.opcode(seg, ddp);
        assertEquals(0, Ddp.reserved(seg, ddp), where + ": DDP reserved bits");
        assertEquals(0, Rdmap.control(seg, ddp) & Rdmap.RESERVED_MASK, where + ": RDMAP rsvd");
        int payload = ulpdu - (hdr - Fpdu.ULPDU_OFFSET);
        int crcField = Fpdu.crc(seg, off);
        assertEquals(Fpdu.CRC_OFF, crcField, where + ": CRC field with CRC off");
        assertFalse(Fpdu.check(seg, off, len, true, Fpdu.MAX_ULPDU_LENGTH) > 0
                        && Fpdu.computeCrc(seg, off) != 0,
                where + ": a zero CRC field cannot pass a CRC check");

        int[] rr = null;
        if (opcode == Rdmap.READ_REQUEST) {
            long h = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
            rr = new int[] {ReadRequest.sinkStag(seg, h),
                (int) (ReadRequest.sinkTaggedOffset(seg, h) >>> 32),
                (int) ReadRequest.sinkTaggedOffset(seg, h), ReadRequest.messageSize(seg, h),
                ReadRequest.sourceStag(seg, h),
                (int) (ReadRequest.sourceTaggedOffset(seg, h) >>> 32),
                (int) ReadRequest.sourceTaggedOffset(seg, h)};
        }
        Decoded d = new Decoded(off, stream.frameAt(off), stream.segmentsSpanned(off, off + len),
                len, ulpdu, tagged, Ddp.last(seg, ddp), opcode,
                tagged ? Ddp.stag(seg, ddp) : 0, tagged ? Ddp.taggedOffset(seg, ddp) : 0,
                tagged ? 0 : Ddp.ulpWord(seg, ddp), tagged ? -1 : Ddp.queueNumber(seg, ddp),
                tagged ? 0 : Ddp.msn(seg, ddp), tagged ? 0 : Ddp.messageOffset(seg, ddp),
                hdr, payload, crcField, Fpdu.padNonZero(seg, off), rr);
        fpdus.add(d);
        reencode(d, where);
        if (tagged) {
            taggedSegment(d, where);
        } else {
            untaggedSegment(d, where);
        }
    }

    /** Builds the FPDU again from the decoded fields and the payload bytes; compares. */
    private void reencode(Decoded d, String where) {
        byte[] out = new byte[d.length()];
        MemorySegment o = MemorySegment.ofArray(out);
        Fpdu.writeHeader(o, 0, d.ulpduLength());
        int control = Rdmap.controlByte(d.opcode());
        if (d.tagged()) {
            Ddp.writeTagged(o, 2, d.last(), control, d.stag(), d.taggedOffset());
        } else {
            Ddp.writeUntagged(o, 2, d.last(), control, d.ulpWord(), d.qn(), d.msn(), d.mo());
        }
        if (d.opcode() == Rdmap.READ_REQUEST) {
            int[] r = d.readRequest();
            ReadRequest.write(o, 2 + Ddp.UNTAGGED_HEADER_LENGTH, r[0],
                    ((long) r[1] << 32) | (r[2] & 0xFFFF_FFFFL), r[3], r[4],
                    ((long) r[5] << 32) | (r[6] & 0xFFFF_FFFFL));
        }
        if (d.opcode() == Rdmap.TERMINATE) {
            fail(where + ": TERMINATE in a capture: extend the re-encoder");
        }
        MemorySegment.copy(seg, d.streamOffset() + d.headerLength(), o, d.headerLength(),
                d.payloadLength());
        Fpdu.writeTrailer(o, 0, d.ulpduLength(), Fpdu.CRC_OFF);
        byte[] wire = slice(d.streamOffset(), d.length());
        if (d.stalePad()) {
            // siw leaves stale bytes in the pad of small inline SENDs: compare all other bytes
            int padAt = Fpdu.LENGTH_FIELD + d.ulpduLength();
            for (int i = 0; i < Fpdu.padLength(d.ulpduLength()); i++) {
                wire[padAt + i] = 0;
            }
        }
        assertArrayEquals(wire, out, where + ": re-encode differs");
    }

    private void untaggedSegment(Decoded d, String where) {
        int q = d.qn();
        assertTrue(q >= 0 && q < 4, where + ": QN " + q);
        assertEquals(Rdmap.queueNumber(d.opcode()), q, where + ": QN for opcode");
        if (!Rdmap.carriesInvalidateStag(d.opcode())) {
            assertEquals(0, d.ulpWord(), where + ": RsvdULP word");
        }
        if (!open[q]) {
            assertEquals(0, d.mo(), where + ": first segment of a message has MO 0");
            assertEquals(lastMsn[q] + 1, d.msn(), where + ": MSN of a new message on QN " + q);
            open[q] = true;
            moNext[q] = 0;
        } else {
            assertEquals(lastMsn[q] + 1, d.msn(), where + ": MSN within a message");
            assertEquals(moNext[q], d.mo(), where + ": MO continues the message");
        }
        moNext[q] += d.payloadLength();
        if (d.last()) {
            open[q] = false;
            lastMsn[q] = d.msn();
            untaggedMessages.get(q).add(moNext[q]);
        }
        if (d.opcode() == Rdmap.READ_REQUEST) {
            assertTrue(d.last(), where + ": READ Request is a single segment");
            assertEquals(0, d.payloadLength(), where + ": READ Request has no payload");
            int[] r = d.readRequest();
            readsSent.add(new PendingRead(r[0], ((long) r[1] << 32) | (r[2] & 0xFFFF_FFFFL), r[3]));
        }
    }

    private void taggedSegment(Decoded d, String where) {
        if (!taggedOpen) {
            taggedOpen = true;
            taggedStag = d.stag();
            taggedNext = d.taggedOffset();
            taggedStart = d.taggedOffset();
            taggedOpcode = d.opcode();
        } else {
            assertEquals(taggedOpcode, d.opcode(), where + ": opcode within a message");
            assertEquals(taggedStag, d.stag(), where + ": STag within a message");
        }
        assertEquals(taggedNext, d.taggedOffset(), where + ": TO continues the message");
        taggedNext += d.payloadLength();
        if (d.last()) {
            taggedOpen = false;
            int size = (int) (taggedNext - taggedStart);
            taggedMessages.add(new int[] {d.opcode(), size});
            if (d.opcode() == Rdmap.READ_RESPONSE) {
                readResponses.add(new PendingRead(taggedStag, taggedStart, size));
            }
        }
    }

    byte[] slice(long off, int len) {
        return seg.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
    }
}

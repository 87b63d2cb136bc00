package io.jrdma.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jrdma pcap}: the ICRC check the interop suite runs on its captures. */
class PcapCommandTest {
    /** A Linux rxe capture (testdata/pcaps): 80 RoCEv2 packets of ib_write_bw between two guests. */
    private static Path capture() {
        return TestCaptures.path("roce-ib_write_bw.pcap");
    }

    private static int run(List<String> args, StringBuilder output) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        int rc = PcapCommand.run(args, new PrintStream(o, true, StandardCharsets.UTF_8),
                new PrintStream(e, true, StandardCharsets.UTF_8));
        output.append(o.toString(StandardCharsets.UTF_8)).append(e.toString(StandardCharsets.UTF_8));
        return rc;
    }

    @Test
    void everyPacketOfALinuxRxeCaptureIsCorrect() {
        StringBuilder out = new StringBuilder();
        assertEquals(0, run(List.of(capture().toString(), "--from", "10.77.0.12"), out), out.toString());
        assertTrue(out.toString().contains("10.77.0.12: "), out.toString());
        assertTrue(out.toString().contains("wrong 0"), out.toString());
        assertTrue(out.toString().contains("RC_RDMA_WRITE_FIRST") || out.toString().contains("WRITE"), out.toString());
    }

    @Test
    void aCorruptedPacketFailsTheCheckForItsSender(@TempDir Path dir) throws Exception {
        byte[] b = Files.readAllBytes(capture());
        b[b.length - 1] ^= 0x5A; // the last packet's ICRC
        Path bad = dir.resolve("bad.pcap");
        Files.write(bad, b);
        StringBuilder g1 = new StringBuilder();
        StringBuilder g2 = new StringBuilder();
        int rc1 = run(List.of(bad.toString(), "--from", "10.77.0.11", "-v"), g1);
        int rc2 = run(List.of(bad.toString(), "--from", "10.77.0.12", "-v"), g2);
        assertEquals(1, Math.max(rc1, rc2), g1 + "\n" + g2);
        assertEquals(0, Math.min(rc1, rc2), "the other sender is still clean: " + g1 + "\n" + g2);
        assertTrue((g1.toString() + g2).contains("wrong 1"), g1 + "\n" + g2);
    }

    @Test
    void noPacketsFromTheAddressIsAFailureAndBadUsageIsExplained() {
        StringBuilder out = new StringBuilder();
        assertEquals(1, run(List.of(capture().toString(), "--from", "192.0.2.1"), out));
        assertTrue(out.toString().contains("no RoCEv2 packet from 192.0.2.1"), out.toString());
        StringBuilder usage = new StringBuilder();
        assertEquals(2, run(List.of(), usage));
        assertTrue(usage.toString().contains("missing capture file"), usage.toString());
    }

    /** A raw-IP capture of TCP segments: a SYN, then an MPA Request (the start of an iWARP connection). */
    private static Path iwarpCapture(Path dir) throws Exception {
        Path f = dir.resolve("iwarp.pcap");
        byte[] mpa = "MPA ID Req Frame".getBytes(StandardCharsets.US_ASCII);
        try (var w = io.jrdma.wire.PcapWriter.create(f, io.jrdma.wire.PcapReader.LINKTYPE_RAW)) {
            for (byte[] payload : new byte[][] {new byte[0], java.util.Arrays.copyOf(mpa, mpa.length + 4)}) {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(40 + payload.length);
                b.put((byte) 0x45).put((byte) 0).putShort((short) (40 + payload.length)).putInt(0)
                        .put((byte) 64).put((byte) 6).putShort((short) 0).putInt(0x0a4d0101).putInt(0x0a4d010b);
                b.putShort((short) 40000).putShort((short) 7174).putInt(1).putInt(0).put((byte) 0x50)
                        .put((byte) 0x18).putShort((short) 65535).putInt(0);
                b.put(payload).flip();
                w.write(0, b);
            }
        }
        return f;
    }

    @Test
    void aCaptureWithoutRoceSaysWhatItHoldsAndFails(@TempDir Path dir) throws Exception {
        StringBuilder out = new StringBuilder();
        assertEquals(1, run(List.of(iwarpCapture(dir).toString()), out), out.toString());
        assertTrue(out.toString().contains("jrdma pcap: no RoCEv2 packets (UDP port 4791) in " + dir.resolve("iwarp.pcap")
                + ": 2 frames: 2 TCP segments (1 with data), 0 other UDP datagrams; it holds an MPA Request: an iWARP"
                + " capture"), out.toString());
        assertTrue(out.toString().endsWith("jrdma pcap checks RoCEv2 captures\n"), out.toString());
    }

    /** The Ethernet frames of the Linux rxe capture. */
    private static List<byte[]> frames() throws Exception {
        List<byte[]> frames = new java.util.ArrayList<>();
        for (io.jrdma.wire.PcapReader.Record r : io.jrdma.wire.PcapReader.readAll(capture())) {
            assertEquals(r.originalLength(), r.capturedLength());
            frames.add(r.data());
        }
        return frames;
    }

    /**
     * A classic pcap file written byte by byte here: little-endian, microseconds, version 2.4, snap length 262144;
     * each record as given, {@code caplen} of its bytes kept (the rest cut, as tcpdump -s does).
     */
    private static Path write(Path file, int linkType, List<byte[]> frames, java.util.function.ToIntFunction<byte[]> caplen)
            throws Exception {
        java.io.ByteArrayOutputStream o = new java.io.ByteArrayOutputStream();
        java.nio.ByteBuffer h = java.nio.ByteBuffer.allocate(24).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        h.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(262_144)
                .putInt(linkType);
        o.write(h.array());
        int i = 0;
        for (byte[] f : frames) {
            int incl = Math.min(f.length, caplen.applyAsInt(f));
            java.nio.ByteBuffer r = java.nio.ByteBuffer.allocate(16).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            r.putInt(1_700_000_000).putInt(i++).putInt(incl).putInt(f.length);
            o.write(r.array());
            o.write(f, 0, incl);
        }
        Files.write(file, o.toByteArray());
        return file;
    }

    /** An Ethernet frame's IP packet behind a Linux cooked header: v1 (LINKTYPE_LINUX_SLL) or v2 (LINKTYPE_LINUX_SLL2). */
    private static byte[] cooked(byte[] eth, int version) {
        byte[] ip = java.util.Arrays.copyOfRange(eth, 14, eth.length);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate((version == 1 ? 16 : 20) + ip.length);
        short protocol = (short) (((eth[12] & 0xFF) << 8) | (eth[13] & 0xFF));
        if (version == 1) { // packet type, ARPHRD_ETHER, address length, address (8), protocol
            b.putShort((short) 0).putShort((short) 1).putShort((short) 6).put(eth, 6, 6).putShort((short) 0)
                    .putShort(protocol);
        } else { // protocol, reserved, interface index, ARPHRD_ETHER, packet type, address length, address (8)
            b.putShort(protocol).putShort((short) 0).putInt(2).putShort((short) 1).put((byte) 0).put((byte) 6)
                    .put(eth, 6, 6).putShort((short) 0);
        }
        return b.put(ip).array();
    }

    /**
     * {@code tcpdump -i any} on current Linux writes LINKTYPE_LINUX_SLL2 (276): the capture's packets behind that
     * header read as the Ethernet original, and so do v1's cooked header and raw IP; SLL2 was not read at all, every
     * frame an "other" (found in review).
     */
    @Test
    void linuxCookedV2V1AndRawIpCapturesReadAsTheEthernetOriginal(@TempDir Path dir) throws Exception {
        StringBuilder original = new StringBuilder();
        assertEquals(0, run(List.of(capture().toString(), "--from", "10.77.0.12"), original), original.toString());
        List<byte[]> eth = frames();
        for (int linkType : new int[] {276, 113, 101}) {
            List<byte[]> framed = eth.stream().map(f -> linkType == 276 ? cooked(f, 2) : linkType == 113 ? cooked(f, 1)
                    : java.util.Arrays.copyOfRange(f, 14, f.length)).toList();
            Path f = write(dir.resolve(linkType + ".pcap"), linkType, framed, b -> b.length);
            StringBuilder out = new StringBuilder();
            assertEquals(0, run(List.of(f.toString(), "--from", "10.77.0.12"), out), linkType + ": " + out);
            assertEquals(original.toString().replace(capture().toString(), f.toString()), out.toString(),
                    "link type " + linkType);
        }
        StringBuilder unknown = new StringBuilder();
        Path f = write(dir.resolve("null.pcap"), 0, eth, b -> b.length);
        assertEquals(1, run(List.of(f.toString()), unknown), unknown.toString());
        assertTrue(unknown.toString().contains("has link type 0, which jrdma pcap does not read: it reads Ethernet (1),"
                + " raw IP (101, 228, 229) and Linux cooked captures (113, 276)"), unknown.toString());
    }

    /**
     * Frames cut by the capture (captured length below the frame's) or shorter than their IP header says are
     * counted and reported, and fail --from for the sender they may be from; they were dropped uncounted (found in
     * review), and --from passed with the sender's cut packets unchecked.
     */
    @Test
    void truncatedFramesAreCountedAndFailTheCheckOfTheirSender(@TempDir Path dir) throws Exception {
        List<byte[]> eth = new java.util.ArrayList<>(frames());
        // two of 10.77.0.12's packets: one cut at 60 bytes by the capture, one 10 bytes short of its IP length
        int cut = -1;
        int shortened = -1;
        for (int i = 0; i < eth.size() && shortened < 0; i++) {
            if ((eth.get(i)[29] & 0xFF) == 12) { // IPv4 source 10.77.0.12
                if (cut < 0) {
                    cut = i;
                } else {
                    shortened = i;
                }
            }
        }
        eth.set(shortened, java.util.Arrays.copyOf(eth.get(shortened), eth.get(shortened).length - 10));
        int cutAt = cut;
        List<byte[]> frames = eth;
        Path f = write(dir.resolve("cut.pcap"), 1, frames, b -> b == frames.get(cutAt) ? 60 : b.length);
        StringBuilder out = new StringBuilder();
        assertEquals(1, run(List.of(f.toString(), "--from", "10.77.0.12"), out), out.toString());
        assertTrue(out.toString().contains("10.77.0.12: 62 packets, ICRC correct 62, wrong 0"), out.toString());
        assertTrue(out.toString().contains("2 frames truncated (cut by the capture's snap length, or shorter than their"
                + " headers say; 2 of them may be RoCEv2): not checked; capture whole packets (tcpdump -s 0)"),
                out.toString());
        assertTrue(out.toString().contains("jrdma pcap: 2 truncated frames may be RoCEv2 packets from 10.77.0.12:"
                + " their ICRC cannot be checked"), out.toString());
        StringBuilder other = new StringBuilder();
        assertEquals(0, run(List.of(f.toString(), "--from", "10.77.0.11"), other), "the other sender's are whole: "
                + other);
        assertTrue(other.toString().contains("2 frames truncated"), other.toString());
        // a frame cut inside its Ethernet header: its sender is unknown, so it may be either's
        Path g = write(dir.resolve("cut-early.pcap"), 1, frames, b -> b == frames.get(cutAt) ? 10 : b.length);
        StringBuilder early = new StringBuilder();
        assertEquals(1, run(List.of(g.toString(), "--from", "10.77.0.11"), early), early.toString());
        assertTrue(early.toString().contains("1 truncated frame may be RoCEv2 packets from 10.77.0.11"), early.toString());
        // every frame cut at 40 bytes (no UDP header): no packet to check, and the message says why
        Path all = write(dir.resolve("all-cut.pcap"), 1, frames, b -> 40);
        StringBuilder none = new StringBuilder();
        assertEquals(1, run(List.of(all.toString()), none), none.toString());
        assertTrue(none.toString().contains("no RoCEv2 packets (UDP port 4791) in " + all + ": 0 frames: 0 TCP segments"
                + " (0 with data), 0 other UDP datagrams; 80 frames truncated (cut by the capture's snap length, or"
                + " shorter than their headers say; 80 of them may be RoCEv2)"), none.toString());
    }

    @Test
    void aMissingFileIsNamedAsMissing(@TempDir Path dir) {
        StringBuilder out = new StringBuilder();
        String missing = dir.resolve("nope.pcap").toString();
        assertEquals(1, run(List.of(missing), out), out.toString());
        assertEquals("jrdma pcap: cannot read " + missing + ": no such file\n", out.toString());
    }
}

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

    @Test
    void aMissingFileIsNamedAsMissing(@TempDir Path dir) {
        StringBuilder out = new StringBuilder();
        String missing = dir.resolve("nope.pcap").toString();
        assertEquals(1, run(List.of(missing), out), out.toString());
        assertEquals("jrdma pcap: cannot read " + missing + ": no such file\n", out.toString());
    }
}

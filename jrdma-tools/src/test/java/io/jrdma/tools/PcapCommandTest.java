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
}

package io.jrdma.tools.perf;

import io.jrdma.tools.ArgParser;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** perftest 4.5's defaults and force_dependecies (src/perftest_parameters.c), as jrdma perf applies them. */
class PerftestOptionsTest {
    @Test
    void perftestsDefaults() throws Exception {
        PerftestOptions wbw = PerfCommand.parsePerftest("write_bw");
        assertEquals(65536, wbw.size());
        assertEquals(5000, wbw.iters(), "DEF_ITERS_WB for write_bw only");
        assertEquals(128, wbw.txDepth());
        assertEquals(1, wbw.cqMod(), "above 8 KiB perftest signals every request");
        assertEquals(1, wbw.numQps());
        assertEquals(18515, wbw.port());
        assertEquals(0, wbw.inlineSize());
        assertEquals(1, wbw.outstandingReads());
        assertNull(wbw.host());
        assertEquals(1000, PerfCommand.parsePerftest("read_bw").iters());
        assertEquals(128, PerfCommand.parsePerftest("read_bw").outstandingReads());
        assertEquals(1000, PerfCommand.parsePerftest("send_bw").iters());
        assertEquals(512, PerfCommand.parsePerftest("send_bw").rxDepth());
        PerftestOptions sbw = PerfCommand.parsePerftest("send_bw", "-s", "4096", "-n", "16");
        assertEquals(16, sbw.txDepth());
        assertEquals(16, sbw.rxDepth());
        assertEquals(16, sbw.cqMod(), "as rxe's ib_send_bw -s 4096 -n 16 printed");
        PerftestOptions wlat = PerfCommand.parsePerftest("write_lat", "h");
        assertEquals(2, wlat.size());
        assertEquals(1000, wlat.iters());
        assertEquals(1, wlat.txDepth());
        assertEquals(220, wlat.inlineSize());
        assertTrue(wlat.disablePcir(), "ib_write_lat disables PCIe relaxed ordering");
        assertEquals("h", wlat.host());
        assertEquals(236, PerfCommand.parsePerftest("send_lat").inlineSize());
        PerftestOptions alat = PerfCommand.parsePerftest("atomic_lat", "-A", "CMP_AND_SWAP");
        assertEquals(8, alat.size());
        assertTrue(alat.cmpSwap());
        assertEquals(0, alat.inlineSize());
        assertEquals(0, PerfCommand.parsePerftest("write_bw", "--loopback").port(), "loopback: any free port");
    }

    @Test
    void flagsAreApplied() throws Exception {
        assertEquals(65536, PerfCommand.parsePerftest("write_bw", "-s", "64K").size());
        assertEquals(1 << 20, PerfCommand.parsePerftest("write_bw", "-s", "1M").size());
        assertEquals(4096, PerfCommand.parsePerftest("write_bw", "-s", "0x1000").size());
        PerftestOptions o = PerfCommand.parsePerftest("send_bw", "-d", "roce_lo", "-x", "1", "-q", "4", "-n", "77",
                "-t", "32", "-Q", "8", "-r", "33", "-m", "2048", "-p", "9999", "-I", "64", "-u", "10", "-S", "3", "-F",
                "--ipv6", "--report_gbits", "-N", "::1");
        assertEquals(4, o.numQps());
        assertEquals(77, o.iters());
        assertEquals(32, o.txDepth());
        assertEquals(8, o.cqMod());
        assertEquals(34, o.rxDepth(), "an odd SEND rx depth is made even");
        assertEquals(2048, o.mtu());
        assertEquals(9999, o.port());
        assertEquals(64, o.inlineSize());
        assertEquals(10, o.qpTimeout());
        assertEquals("roce_lo", o.device());
        assertEquals(1, o.gidIndex());
        assertTrue(o.ipv6() && o.gbits() && o.noPeak());
        assertEquals("::1", o.host());
        PerftestOptions all = PerfCommand.parsePerftest("write_bw", "-a");
        assertEquals(23, all.sizes().size());
        assertEquals(2, all.sizes().getFirst());
        assertEquals(8L << 20, all.sizes().getLast());
        assertEquals(8L << 20, all.bufferSize());
        assertEquals(100, all.cqMod(), "-a keeps CQ moderation");
        assertEquals(5, PerfCommand.parsePerftest("read_bw", "-t", "200", "-n", "5").txDepth(), "tx depth <= iters");
        assertEquals(64, PerfCommand.parsePerftest("read_lat", "-o", "64").outstandingReads());
        assertFalse(PerfCommand.parsePerftest("read_bw").noPeakFor(false));
        assertTrue(PerfCommand.parsePerftest("send_bw").noPeakFor(true), "a send_bw server has no peak");
        assertTrue(PerfCommand.parsePerftest("write_bw", "-n", "20001").noPeakFor(false));
    }

    @Test
    void badFlagsAreRefusedWithAReason() throws Exception {
        assertEquals("roce_lo", PerfCommand.parsePerftest("write_bw", "-R", "-d", "roce_lo").device(),
                "-R on RoCE: rdma_cm through the InfiniBand CM");
        assertTrue(message("write_bw", "-z").contains("-z/--comm_rdma_cm is not supported: use -R"));
        assertTrue(message("write_bw", "-b").contains("-b/--bidirectional is not supported"));
        assertTrue(message("write_bw", "--verify").contains("use it with --jrdma-cm"));
        // --parallel belongs to the server (both exchanges); PerfCommand checks that --server comes with it
        PerfCommand.parsePerftest("write_bw", "--server", "--parallel", "2");
        assertEquals("option -q/--qp: Multiple QPs only available on bw tests", message("write_lat", "-q", "2"));
        assertEquals("option -I/--inline_size: Inline feature not available on READ/Atomic verbs",
                message("read_bw", "-I", "8"));
        assertTrue(message("write_bw", "-o", "4").contains("only available on READ"));
        assertEquals("option -r/--rx-depth: On RDMA verbs rx depth can be only 1", message("write_bw", "-r", "8"));
        assertEquals("Message size cannot be changed for Atomic tests", message("atomic_bw", "-s", "16"));
        assertEquals("Message size cannot be changed for Atomic tests", message("atomic_lat", "-a"));
        assertTrue(message("write_bw", "-A", "CMP_AND_SWAP").contains("You are not running the atomic_lat/bw test!"));
        assertTrue(message("atomic_bw", "-A", "SWAP").contains("Invalid Atomic type!"));
        assertEquals("option -c/--connection: RC, UC or UD, not 'XRC' (jrdma has no XRC, DC or SRD)",
                message("send_bw", "-c", "XRC"));
        assertTrue(message("write_bw", "-c", "UD").startsWith("option -c/--connection UD: UD carries SENDs only"));
        assertTrue(message("read_lat", "-c", "UC").startsWith("option -c/--connection UC: UC has no RDMA READ"));
        assertTrue(message("write_bw", "-m", "1500").startsWith("option -m/--mtu: Invalid MTU - 1500"));
        assertEquals("option -n/--iters: 4 is outside 5..100000000", message("write_bw", "-n", "4"));
        assertEquals("option -s/--size: 'big' is not a number", message("write_bw", "-s", "big"));
        assertEquals("option -i/--ib-port: 0 is outside 1..255", message("write_bw", "-i", "0"));
        assertEquals("option -i/--ib-port: 256 is outside 1..255", message("write_bw", "-i", "256"));
        assertEquals("option -p/--port: a client needs the server's port, not 0", message("write_bw", "-p", "0", "h"));
        assertEquals("-a runs every size: do not combine it with -s", message("write_bw", "-a", "-s", "8"));
        assertEquals("--loopback runs both sides here: do not give a host ('h')", message("write_bw", "--loopback", "h"));
    }

    @Test
    void theIbPortIsAnyPortNumberTheDeviceIsAskedForOnceOpen() throws Exception {
        assertEquals(1, PerfCommand.parsePerftest("write_bw").ibPort(), "perftest's default, port 1");
        assertEquals(2, PerfCommand.parsePerftest("write_bw", "-i", "2").ibPort(), "checked against the device's ports"
                + " once it is open (a NIC may have two)");
        assertEquals(255, PerfCommand.parsePerftest("send_bw", "--ib-port", "255", "-c", "UD", "h").ibPort());
        PerftestOptions o = PerfCommand.parsePerftest("send_lat", "-i", "2", "--loopback");
        assertEquals(2, o.side("roce_lo", null, 0).ibPort(), "both sides of --loopback use -i");
        assertEquals(2, o.with("h", 7, false).ibPort());
        assertEquals("option -i/--ib-port: 'x' is not a number", message("write_bw", "-i", "x"));
        assertTrue(message("write_bw", "-R", "-i", "1").startsWith("option -i/--ib-port with -R/--rdma_cm: rdma_cm puts"
                + " the QPs on the port the address resolves to"), message("write_bw", "-R", "-i", "1"));
        assertEquals("option --ib-port belongs to perftest's exchange: drop --jrdma-cm to use it (jrdma's connection"
                + " manager puts the QP on the port of the address the connection leaves from)",
                assertThrows(ArgParser.UsageException.class, () -> PerfCommand.parse("write_bw", "--jrdma-cm", "-i",
                        "2")).getMessage());
    }

    @Test
    void rdmaCmIsAFlag() throws Exception {
        assertTrue(PerfCommand.parsePerftest("write_bw", "-R", "-d", "iwarp_lo").rdmaCm());
        assertTrue(PerfCommand.parsePerftest("read_lat", "--rdma_cm", "h").rdmaCm(), "without -d: decided at run time");
        assertFalse(PerfCommand.parsePerftest("write_bw").rdmaCm());
        assertEquals(18515, PerfCommand.parsePerftest("write_bw", "-R").port());
    }

    @Test
    void versionFlagPrintsThePerftestVersion() {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        assertEquals(0, PerfCommand.run(List.of("write_bw", "-V"), new java.io.PrintStream(out, true,
                java.nio.charset.StandardCharsets.UTF_8), System.err));
        assertEquals("Version: 6.06\n", out.toString(java.nio.charset.StandardCharsets.UTF_8));
    }

    private static String message(String... args) {
        return assertThrows(ArgParser.UsageException.class, () -> PerfCommand.parsePerftest(args)).getMessage();
    }

    @Test
    void durationModeAsPerftestParsesIt() throws Exception {
        PerftestOptions d = PerfCommand.parsePerftest("write_bw", "-D", "8");
        assertTrue(d.duration());
        assertEquals(8, d.durationSec());
        assertEquals(2, d.marginSec(), "perftest: the margin defaults to duration/4");
        assertTrue(d.noPeakFor(false), "perftest: no BW peak in duration mode");
        assertFalse(PerfCommand.parsePerftest("write_bw").noPeakFor(false));
        assertEquals(1, PerfCommand.parsePerftest("read_bw", "-D", "3", "--margin", "1").marginSec());
        assertEquals(0, PerfCommand.parsePerftest("atomic_bw", "-D", "3", "-f", "0").marginSec());
        assertEquals(0, PerfCommand.parsePerftest("write_bw", "-D", "3").marginSec(), "3/4 rounds down to 0");
        // iterations bound tx_depth only in iterations mode (perftest's force_dependecies)
        assertEquals(128, PerfCommand.parsePerftest("write_bw", "-D", "3").txDepth());
        assertEquals(20, PerfCommand.parsePerftest("write_bw", "-n", "20").txDepth());
        assertFalse(PerfCommand.parsePerftest("write_bw").duration());
        assertEquals("option -f/--margin: please check that DURATION > 2*MARGIN (-D 4, --margin 2)",
                message("write_bw", "-D", "4", "--margin", "2"));
        assertEquals("option -f/--margin: please check that DURATION > 2*MARGIN (-D 5, --margin 3)",
                message("write_bw", "--margin", "3"), "perftest checks --margin against its default duration, 5 s");
        assertEquals(2, PerfCommand.parsePerftest("write_bw", "--margin", "2").marginSec());
        assertEquals("option -D/--duration: 0 is outside 1..86400", message("write_bw", "-D", "0"));
        assertTrue(message("write_bw", "-D", "3", "-n", "100").startsWith("-D (duration) and -n (iterations) are"
                + " exclusive"));
        assertEquals("option -D/--duration: Duration mode currently doesn't support running on all sizes.",
                message("write_bw", "-D", "3", "-a"));
        for (PerfTest t : PerfTest.values()) {
            assertEquals(3, PerfCommand.parsePerftest(t.cliName(), "-D", "3").durationSec(), t.cliName());
        }
        assertEquals(512, PerfCommand.parsePerftest("send_bw", "-D", "3").rxDepth(), "not bound by iterations");
        // --jrdma-cm keeps its own -D, without a margin
        assertEquals(3, PerfCommand.options(PerfCommand.PARSER.parse(List.of("write_bw", "--jrdma-cm", "-D", "3")))
                .durationSec());
        ArgParser.UsageException e = assertThrows(ArgParser.UsageException.class,
                () -> PerfCommand.options(PerfCommand.PARSER.parse(List.of("write_bw", "--jrdma-cm", "-D", "3",
                        "--margin", "1"))));
        assertTrue(e.getMessage().contains("--margin belongs to perftest's exchange"), e.getMessage());
    }
}

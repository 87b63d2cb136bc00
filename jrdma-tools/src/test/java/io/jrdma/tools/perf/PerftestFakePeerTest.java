package io.jrdma.tools.perf;

import io.jrdma.tools.oob.CFormat;
import io.jrdma.tools.oob.RawPeer;
import io.jrdma.tools.oob.VerbsEnd;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jrdma against a perftest peer written in the test: every byte on TCP is crafted here as
 * perftest 4.5's source writes it (src/perftest_communication.c: exchange_versions,
 * check_sys_data, check_mtu, ethernet_write_keys/ethernet_read_keys in ctx_hand_shake,
 * xchg_bw_reports, ctx_close_connection), in the order of src/write_bw.c and src/read_lat.c;
 * the RDMA side is a QP driven by hand.
 */
class PerftestFakePeerTest {
    /** KEY_PRINT_FMT_GID from a peer on 127.0.0.1: groups LID, OUT, QPN, PSN, RKEY, VADDR. */
    static final Pattern KEYS = Pattern.compile("([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{6}):([0-9a-f]{6}):([0-9a-f]{8}):"
            + "([0-9a-f]{16}):00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:00:01:00000000:\0");

    static byte[] version() {
        return Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16); // strncpy(version, VERSION, 16)
    }

    /** sprintf(msg, KEY_PRINT_FMT_GID, ...) into char msg[108]. */
    static byte[] keys(int lid, int out, int qpn, int psn, int rkey, long vaddr) {
        String s = String.format("%04x:%04x:%06x:%06x:%08x:%016x:00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:00:01:%08x:",
                lid, out, qpn, psn, rkey, vaddr, 0);
        assertEquals(107, s.length());
        return Arrays.copyOf(s.getBytes(StandardCharsets.US_ASCII), 108);
    }

    static Matcher parseKeys(byte[] m) {
        Matcher k = KEYS.matcher(new String(m, StandardCharsets.ISO_8859_1));
        assertTrue(k.matches(), new String(m, StandardCharsets.ISO_8859_1));
        return k;
    }

    static int hex(Matcher m, int group) {
        return (int) Long.parseLong(m.group(group), 16);
    }

    static long be64(byte[] b) {
        return ByteBuffer.wrap(b).getLong();
    }

    @Test
    @Timeout(60)
    void jrdmaClientAgainstAHandWrittenIbWriteBwServer() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
             VerbsEnd v = new VerbsEnd(8192, Access.REMOTE_WRITE, Access.REMOTE_WRITE)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PerftestOptions o = PerfCommand.parsePerftest("write_bw", "-d", "roce_lo", "-s", "4096", "-n", "64", "-m",
                    "1024", "-p", String.valueOf(ss.getLocalPort()), "--timeout", "20", "127.0.0.1");
            CompletableFuture<Integer> client = CompletableFuture.supplyAsync(() -> PerftestCommand.execute(o,
                    new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)));
            int myPsn = 0x123456;
            long vaddr = v.mr.address();
            try (RawPeer p = RawPeer.accept(ss)) {
                // exchange_versions, check_sys_data, check_mtu: the client writes first, the server answers
                assertArrayEquals(version(), p.read(16));
                p.write(version());
                assertArrayEquals(new byte[] {0, 0, 0x10, 0}, p.read(4)); // hton_int(4096)
                p.write(new byte[] {0, 0, 0x10, 0});
                assertArrayEquals(new byte[] {0, 0, 0, 64}, p.read(4));   // hton_int(64)
                p.write(new byte[] {0, 0, 0, 64});
                assertArrayEquals(new byte[] {'3', 0}, p.read(2));       // -m 1024: IBV_MTU_1024
                p.write(new byte[] {'3', 0});
                // ctx_hand_shake per QP, then connect
                byte[] theirs = p.read(108);
                Matcher c = parseKeys(theirs);
                assertEquals("0001", c.group(2), "out_reads is 1 for WRITE");
                byte[] mine = keys(v.lid(), 1, v.qp.qpn(), myPsn, v.mr.rkey(), vaddr);
                p.write(mine);
                v.connect(VerbsEnd.LOOPBACK_GID, hex(c, 1), hex(c, 3), hex(c, 4), myPsn, 1024, 1);
                // the printed exchange, the one "after RTR", and the one when the client is done
                for (int i = 0; i < 3; i++) {
                    assertArrayEquals(theirs, p.read(108), "handshake " + (i + 2));
                    p.write(mine);
                }
                // xchg_bw_reports: size, iterations, peak, average, message rate, 8 bytes each
                assertEquals(4096, be64(p.read(8)));
                p.write(new byte[8]);
                assertEquals(64, be64(p.read(8)));
                p.write(new byte[8]);
                double[] rates = new double[3];
                for (int i = 0; i < 3; i++) {
                    rates[i] = Double.longBitsToDouble(be64(p.read(8)));
                    p.write(new byte[8]);
                }
                assertTrue(rates[0] > 0 && rates[1] > 0 && rates[2] > 0, Arrays.toString(rates));
                // ctx_close_connection
                assertArrayEquals(theirs, p.read(108));
                p.write(mine);
                assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, p.read(5));
                p.write(new byte[] {'d', 'o', 'n', 'e', 0});
            }
            assertEquals(0, client.get(30, TimeUnit.SECONDS), out + "\n" + err);
            boolean written = false;
            for (long i = 0; i < 4096 && !written; i++) {
                written = v.buf.get(ValueLayout.JAVA_BYTE, i) != 0;
            }
            assertTrue(written, "the client's WRITEs landed in the server's buffer");
            String text = out.toString(StandardCharsets.UTF_8);
            assertTrue(text.contains(" remote address: LID " + (v.lid() == 0 ? "0000" : String.format("0x%04x", v.lid()))
                    + " QPN " + CFormat.hashHex(v.qp.qpn(), 6) + " PSN 0x123456 RKey "
                    + CFormat.hashHex(v.mr.rkey() & 0xffffffffL, 8) + " VAddr " + CFormat.hashHex(vaddr, 16)), text);
            assertTrue(text.contains(" Mtu             : 1024[B]\n"), text);
            assertTrue(text.lines().anyMatch(l -> l.startsWith(" 4096       64 ")), text);
        }
    }

    /**
     * ib_write_bw -D 3 --margin 1 as a server: as in iterations mode it only answers the handshakes and reads the
     * client's report; the jrdma client runs for 3 s and reports the iterations of the middle second.
     */
    @Test
    @Timeout(60)
    void jrdmaDurationClientAgainstAHandWrittenPassiveIbWriteBwServer() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
             VerbsEnd v = new VerbsEnd(8192, Access.REMOTE_WRITE, Access.REMOTE_WRITE)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PerftestOptions o = PerfCommand.parsePerftest("write_bw", "-d", "roce_lo", "-s", "4096", "-D", "3",
                    "--margin", "1", "-m", "1024", "-p", String.valueOf(ss.getLocalPort()), "--timeout", "20",
                    "127.0.0.1");
            CompletableFuture<Integer> client = CompletableFuture.supplyAsync(() -> PerftestCommand.execute(o,
                    new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)));
            int myPsn = 0x2468ac;
            long iters;
            double[] rates = new double[3];
            long runNanos;
            try (RawPeer p = RawPeer.accept(ss)) {
                assertArrayEquals(version(), p.read(16));
                p.write(version());
                assertArrayEquals(new byte[] {0, 0, 0x10, 0}, p.read(4));
                p.write(new byte[] {0, 0, 0x10, 0});
                assertArrayEquals(new byte[] {0, 0, 0, 64}, p.read(4));
                p.write(new byte[] {0, 0, 0, 64});
                assertArrayEquals(new byte[] {'3', 0}, p.read(2));
                p.write(new byte[] {'3', 0});
                byte[] theirs = p.read(108);
                Matcher c = parseKeys(theirs);
                byte[] mine = keys(v.lid(), 1, v.qp.qpn(), myPsn, v.mr.rkey(), v.mr.address());
                p.write(mine);
                v.connect(VerbsEnd.LOOPBACK_GID, hex(c, 1), hex(c, 3), hex(c, 4), myPsn, 1024, 1);
                for (int i = 0; i < 2; i++) { // the printed exchange and the one after RTR: the run starts
                    assertArrayEquals(theirs, p.read(108), "handshake " + (i + 2));
                    p.write(mine);
                }
                long t0 = System.nanoTime();
                assertArrayEquals(theirs, p.read(108), "the handshake when the client is done");
                runNanos = System.nanoTime() - t0;
                p.write(mine);
                assertEquals(4096, be64(p.read(8)));
                p.write(new byte[8]);
                iters = be64(p.read(8));
                p.write(new byte[8]);
                for (int i = 0; i < 3; i++) {
                    rates[i] = Double.longBitsToDouble(be64(p.read(8)));
                    p.write(new byte[8]);
                }
                assertArrayEquals(theirs, p.read(108));
                p.write(mine);
                assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, p.read(5));
                p.write(new byte[] {'d', 'o', 'n', 'e', 0});
            }
            assertEquals(0, client.get(30, TimeUnit.SECONDS), out + "\n" + err);
            String text = out.toString(StandardCharsets.UTF_8);
            assertTrue(runNanos >= 3_000_000_000L, "the client ran for -D 3 s: " + runNanos + " ns\n" + text);
            assertTrue(iters > 0, "iterations sampled: " + iters + "\n" + text);
            assertEquals(0.0, rates[0], "no peak with -D");
            double span = iters / (rates[2] * 1e6); // the report's own count over its own rate: the sampled span
            assertTrue(span >= 0.99 && span < 1.6, "the middle second: " + span + " s\n" + text);
            assertEquals(rates[2] * 1e6 * 4096 / (1 << 20), rates[1], rates[1] * 1e-9, "average = rate x size");
            assertTrue(text.startsWith(PerftestOptions.NO_PEAK_WARNING + "\n"), text);
            assertTrue(text.lines().anyMatch(l -> l.startsWith(" 4096       " + iters + " ")), text);
        }
    }

    @Test
    @Timeout(60)
    void handWrittenIbReadLatClientAgainstAJrdmaServer() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        PerftestOptions o = PerfCommand.parsePerftest("read_lat", "-d", "roce_lo", "-s", "64", "-p", "0", "--timeout",
                "20");
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> PerftestCommand.execute(o,
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                port::complete));
        int myPsn = 0xabcdef;
        try (VerbsEnd v = new VerbsEnd(4096, 0, 0);
             RawPeer p = RawPeer.connect(port.get(20, TimeUnit.SECONDS))) {
            p.write(version());
            assertArrayEquals(version(), p.read(16));
            p.write(new byte[] {0, 0, 0x10, 0});
            assertArrayEquals(new byte[] {0, 0, 0x10, 0}, p.read(4));
            p.write(new byte[] {0, 0, 0, 64});
            assertArrayEquals(new byte[] {0, 0, 0, 64}, p.read(4));
            p.write(new byte[] {'3', 0});
            assertArrayEquals(new byte[] {'5', 0}, p.read(2), "the server's own active MTU: 4096 on lo");
            byte[] mine = keys(v.lid(), 0x80, v.qp.qpn(), myPsn, v.mr.rkey(), v.mr.address());
            // read_lat: two handshakes before connecting
            p.write(mine);
            byte[] theirs = p.read(108);
            Matcher s = parseKeys(theirs);
            assertEquals("0080", s.group(2), "out_reads 128");
            p.write(mine);
            assertArrayEquals(theirs, p.read(108));
            v.connect(VerbsEnd.LOOPBACK_GID, hex(s, 1), hex(s, 3), hex(s, 4), myPsn, 1024, 128);
            // the printed exchange and the one after RTR
            for (int i = 0; i < 2; i++) {
                p.write(mine);
                assertArrayEquals(theirs, p.read(108));
            }
            // run_iter_lat: READs of 64 bytes from the advertised buffer
            SendWorkRequest wr = new SendWorkRequest();
            for (int i = 0; i < 10; i++) {
                wr.reset().wrId(i).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).sge(0, v.mr, 0, 64)
                        .remote(Long.parseUnsignedLong(s.group(6), 16), (int) Long.parseLong(s.group(5), 16));
                assertEquals(0, v.qp.postSend(wr));
                assertEquals(64, v.await().byteLen());
            }
            // ctx_close_connection
            p.write(mine);
            assertArrayEquals(theirs, p.read(108));
            p.write(new byte[] {'d', 'o', 'n', 'e', 0});
            assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, p.read(5));
            assertTrue(p.closedByPeer());
        }
        assertEquals(0, server.get(30, TimeUnit.SECONDS), out + "\n" + err);
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("                    RDMA_Read Latency Test\n"), text);
        assertTrue(text.contains(" Outstand reads  : 128\n"), text);
        assertTrue(!text.contains("TX depth"), text);
        assertTrue(text.contains(" PSN 0xabcdef OUT 0x80 RKey 0x"), text);
        assertTrue(text.endsWith(PerftestReport.RESULT_LINE + "\n"), text);
    }
}

package io.jrdma.tools.pingpong;

import io.jrdma.tools.oob.RawPeer;
import io.jrdma.tools.oob.VerbsEnd;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A jrdma pingpong server against an ibv_rc_pingpong client written in the test: the TCP bytes
 * as rc_pingpong.c's pp_client_exch_dest writes and reads them, then its ping-pong of SENDs.
 */
class PingpongFakePeerTest {
    @Test
    @Timeout(60)
    void handWrittenRcPingpongClient() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Pingpong.Options o = PingpongCommand.parse("-d", "roce_lo", "-g", "0", "-s", "128", "-n", "5", "-p", "0",
                "--timeout", "20");
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> PingpongCommand.execute(o,
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                port::complete));
        int myPsn = 0x0a0b0c;
        String expectedRemote;
        try (VerbsEnd v = new VerbsEnd(128, 0, 0);
             RawPeer p = RawPeer.connect(port.get(20, TimeUnit.SECONDS))) {
            expectedRemote = String.format("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID ::ffff:127.0.0.1",
                    v.lid(), v.qp.qpn(), myPsn);
            RecvWorkRequest rwr = new RecvWorkRequest().wrId(1).sge(0, v.mr, 0, 128);
            for (int i = 0; i < 5; i++) {
                assertEquals(0, v.qp.postRecv(rwr));
            }
            // sprintf(msg, "%04x:%06x:%06x:%s", lid, qpn, psn, gid) into char msg[52]
            String mine = String.format("%04x:%06x:%06x:%s", v.lid(), v.qp.qpn(), myPsn,
                    "00000000000000000000ffff7f000001");
            p.write(Arrays.copyOf(mine.getBytes(StandardCharsets.US_ASCII), 52));
            byte[] theirs = p.read(52);
            Matcher m = Pattern.compile("([0-9a-f]{4}):([0-9a-f]{6}):([0-9a-f]{6}):00000000000000000000ffff7f000001\0")
                    .matcher(new String(theirs, StandardCharsets.ISO_8859_1));
            assertTrue(m.matches(), new String(theirs, StandardCharsets.ISO_8859_1));
            p.write(new byte[] {'d', 'o', 'n', 'e', 0});
            v.connect(VerbsEnd.LOOPBACK_GID, Integer.parseInt(m.group(1), 16), Integer.parseInt(m.group(2), 16),
                    Integer.parseInt(m.group(3), 16), myPsn, 1024, 1);
            SendWorkRequest wr = new SendWorkRequest();
            for (int i = 0; i < 5; i++) {
                wr.reset().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, v.mr, 0, 128);
                assertEquals(0, v.qp.postSend(wr));
                int seen = 0;
                for (int k = 0; k < 2; k++) {
                    seen |= (int) v.await().wrId();
                }
                assertEquals(3, seen, "a send and a receive completion each round");
            }
            String text = out.toString(StandardCharsets.UTF_8);
            assertTrue(text.startsWith("  local address:  LID 0x" + m.group(1) + ", QPN 0x" + m.group(2) + ", PSN 0x"
                    + m.group(3) + ", GID ::ffff:127.0.0.1\n"), text);
        }
        assertEquals(0, server.get(30, TimeUnit.SECONDS), out + "\n" + err);
        String[] lines = out.toString(StandardCharsets.UTF_8).split("\n");
        assertEquals(expectedRemote, lines[1]);
        assertTrue(lines[2].startsWith("1280 bytes in "), lines[2]);
        assertTrue(lines[3].startsWith("5 iters in "), lines[3]);
    }

    @Test
    @Timeout(60)
    void aServerGidOfTheOtherIpVersionFailsTheClientBeforeRtrWithTheGidToUse() throws Exception {
        // an rc_pingpong server given an IPv6 GID (-g 0 on a Linux host: link-local) answering an IPv4 client
        try (java.net.ServerSocket ss = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            CompletableFuture<String> server = CompletableFuture.supplyAsync(() -> {
                try (java.net.Socket s = ss.accept()) {
                    byte[] client = s.getInputStream().readNBytes(52);
                    String mine = String.format("%04x:%06x:%06x:%s", 0, 0x11, 0x123456, "fe800000000000000000000000000001");
                    s.getOutputStream().write(Arrays.copyOf(mine.getBytes(StandardCharsets.US_ASCII), 52));
                    byte[] rest = s.getInputStream().readAllBytes(); // the client closes without "done"
                    return new String(client, StandardCharsets.ISO_8859_1) + "|" + rest.length;
                } catch (java.io.IOException e) {
                    return e.toString();
                }
            });
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = PingpongCommand.execute(PingpongCommand.parse("-d", "roce_lo", "-n", "5", "-p",
                    String.valueOf(ss.getLocalPort()), "--timeout", "20", "127.0.0.1"),
                    new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
            String e = err.toString(StandardCharsets.UTF_8);
            assertEquals(1, rc, out + e);
            assertTrue(e.contains("jrdma pingpong: the server's GID fe80::1 is IPv6 and this side's GID 0"
                    + " (::ffff:127.0.0.1 on roce_lo) is IPv4: RoCEv2 needs both of one IP version. "), e);
            assertTrue(e.matches("(?s).*(Give this side -g \\d+ \\(::1\\)|roce_lo has no IPv6 GID: give the server an IPv4 one).*"), e);
            assertTrue(server.get(20, TimeUnit.SECONDS).endsWith("|0"), "no \"done\" after a refused address");
        }
    }
}

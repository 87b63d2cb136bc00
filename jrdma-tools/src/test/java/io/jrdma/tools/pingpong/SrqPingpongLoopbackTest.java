package io.jrdma.tools.pingpong;

import io.jrdma.tools.ArgParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma pingpong --srq (ibv_srq_pingpong's exchange) against itself over 127.0.0.1, and its side-channel bytes. */
class SrqPingpongLoopbackTest {
    private static List<String[]> addresses(String out, String label) {
        List<String[]> r = new ArrayList<>();
        Matcher m = PingpongLoopbackTest.ADDRESS.matcher(out);
        while (m.find()) {
            if (m.group(1).equals(label)) {
                r.add(new String[] {m.group(2), m.group(3), m.group(4), m.group(5)});
            }
        }
        return r;
    }

    private static void check(PingpongLoopbackTest.Pair r, int qps, int size, int iters) {
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        List<String[]> cl = addresses(r.clientOut(), "local address:  ");
        List<String[]> cr = addresses(r.clientOut(), "remote address: ");
        List<String[]> sl = addresses(r.serverOut(), "local address:  ");
        List<String[]> sr = addresses(r.serverOut(), "remote address: ");
        assertEquals(qps, cl.size(), r.clientOut());
        assertEquals(qps, sl.size(), r.serverOut());
        for (int i = 0; i < qps; i++) {
            assertArrayEquals(sl.get(i), cr.get(i), "QP " + i + ": the client's remote is the server's local");
            assertArrayEquals(cl.get(i), sr.get(i), "QP " + i + ": the server's remote is the client's local");
        }
        for (String out : List.of(r.clientOut(), r.serverOut())) {
            assertTrue(out.contains((long) size * iters * 2 + " bytes in "), out);
            assertTrue(out.contains(iters + " iters in "), out);
        }
    }

    @Test
    @Timeout(60)
    void manyQpsOnOneSrqPingPong() throws Exception {
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(
                List.of("-d", "roce_lo", "--srq", "-q", "4", "-n", "200", "-r", "16", "-s", "2000"),
                List.of("--srq", "-q", "4", "-n", "200", "-r", "16", "-s", "2000"));
        check(r, 4, 2000, 200);
    }

    @Test
    @Timeout(60)
    void theDefaultsAndEventsWork() throws Exception {
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(List.of("-d", "roce_lo", "--srq", "-e", "-n", "300"),
                List.of("--srq", "-n", "300"));
        check(r, 16, 4096, 300);
    }

    @Test
    @Timeout(60)
    void theClientSends256AddressesThenWaitsForTheServers() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            CompletableFuture<Integer> rc = CompletableFuture.supplyAsync(() -> PingpongCommand.run(List.of("--srq",
                    "-q", "3", "-p", String.valueOf(ss.getLocalPort()), "--timeout", "5", "127.0.0.1"),
                    new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)));
            byte[] got;
            try (Socket s = ss.accept()) {
                s.setSoTimeout(20_000);
                InputStream in = s.getInputStream();
                got = in.readNBytes(SrqPingpong.MAX_QP * PingpongWire.SIZE);
            } // closed without an answer: the client fails
            assertEquals(1, rc.get(30, TimeUnit.SECONDS), out + "" + err);
            assertEquals(SrqPingpong.MAX_QP * PingpongWire.SIZE, got.length);
            for (int i = 0; i < SrqPingpong.MAX_QP; i++) {
                byte[] m = java.util.Arrays.copyOfRange(got, i * PingpongWire.SIZE, (i + 1) * PingpongWire.SIZE);
                PingpongWire.Dest d = PingpongWire.decode(m);
                if (i < 3) {
                    assertTrue(d.qpn() != 0, "address " + i + " names a QP");
                } else {
                    assertEquals("0000:000000:000000:00000000000000000000000000000000",
                            new String(m, 0, PingpongWire.SIZE - 1, StandardCharsets.US_ASCII), "address " + i);
                }
            }
        }
    }

    @Test
    void badCombinationsAreUsageErrors() {
        assertTrue(assertThrows(ArgParser.UsageException.class, () -> PingpongCommand.parse("-q", "4"))
                .getMessage().contains("--srq"));
        assertTrue(assertThrows(ArgParser.UsageException.class, () -> PingpongCommand.parse("--srq", "-q", "8", "-r", "4"))
                .getMessage().contains("rx_depth 4 is too small for 8 QPs"));
        assertThrows(ArgParser.UsageException.class, () -> PingpongCommand.parse("--srq", "-q", "257"));
    }
}

package io.jrdma.tools.pingpong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma pingpong against jrdma pingpong over 127.0.0.1: the server in a thread, the client here. */
class PingpongLoopbackTest {
    static final Pattern ADDRESS = Pattern.compile(
            "  (local address:  |remote address: )LID 0x([0-9a-f]{4}), QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6}), GID (\\S+)");

    /** Both ends' exit codes and output. */
    record Pair(int serverRc, String serverOut, String serverErr, int clientRc, String clientOut, String clientErr) {
    }

    static Pair run(List<String> serverArgs, List<String> clientArgs) throws Exception {
        ByteArrayOutputStream so = new ByteArrayOutputStream();
        ByteArrayOutputStream se = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Pingpong.Options sopt = PingpongCommand.parse(concat(serverArgs, "-p", "0", "--timeout", "20"));
        CompletableFuture<Integer> serverRc = CompletableFuture.supplyAsync(() -> PingpongCommand.execute(sopt,
                new PrintStream(so, true, StandardCharsets.UTF_8), new PrintStream(se, true, StandardCharsets.UTF_8),
                port::complete));
        int p = port.get(20, TimeUnit.SECONDS);
        ByteArrayOutputStream co = new ByteArrayOutputStream();
        ByteArrayOutputStream ce = new ByteArrayOutputStream();
        int crc = PingpongCommand.execute(PingpongCommand.parse(concat(clientArgs, "-p", String.valueOf(p),
                        "--timeout", "20", "127.0.0.1")), new PrintStream(co, true, StandardCharsets.UTF_8),
                new PrintStream(ce, true, StandardCharsets.UTF_8));
        int src = serverRc.get(30, TimeUnit.SECONDS);
        return new Pair(src, so.toString(StandardCharsets.UTF_8), se.toString(StandardCharsets.UTF_8), crc,
                co.toString(StandardCharsets.UTF_8), ce.toString(StandardCharsets.UTF_8));
    }

    static String[] concat(List<String> a, String... b) {
        String[] r = new String[a.size() + b.length];
        for (int i = 0; i < a.size(); i++) {
            r[i] = a.get(i);
        }
        System.arraycopy(b, 0, r, a.size(), b.length);
        return r;
    }

    /** Checks the four lines rc_pingpong prints and that each side's remote is the other's local. */
    static void checkOutput(Pair r, int size, int iters) {
        String[] s = r.serverOut().split("\n");
        String[] c = r.clientOut().split("\n");
        assertEquals(4, s.length, r.serverOut());
        assertEquals(4, c.length, r.clientOut());
        Matcher sl = matcher(s[0], "local address:  ");
        Matcher sr = matcher(s[1], "remote address: ");
        Matcher cl = matcher(c[0], "local address:  ");
        Matcher cr = matcher(c[1], "remote address: ");
        for (int g = 2; g <= 5; g++) {
            assertEquals(sl.group(g), cr.group(g), "server local vs client remote");
            assertEquals(cl.group(g), sr.group(g), "client local vs server remote");
        }
        assertEquals("::ffff:127.0.0.1", cl.group(5));
        long bytes = (long) size * iters * 2;
        for (String[] out : List.of(s, c)) {
            assertTrue(out[2].matches(bytes + " bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec"), out[2]);
            assertTrue(out[3].matches(iters + " iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter"), out[3]);
        }
    }

    private static Matcher matcher(String line, String label) {
        Matcher m = ADDRESS.matcher(line);
        assertTrue(m.matches(), line);
        assertEquals(label, m.group(1));
        return m;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1024, 4096, 65536})
    @Timeout(60)
    void pingPongsEverySize(int size) throws Exception {
        List<String> args = List.of("-d", "roce_lo", "-s", String.valueOf(size), "-m", "1024", "-n", "40", "-c");
        Pair r = run(args, args);
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        checkOutput(r, size, 40);
        assertEquals("", io.jrdma.tools.oob.RawPeer.withoutPortWarning(r.serverErr() + r.clientErr()));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1024, 65536})
    @Timeout(60)
    void ucPingPongsAsUcPingpong(int size) throws Exception {
        List<String> args = List.of("-d", "roce_lo", "--uc", "-s", String.valueOf(size), "-m", "1024", "-n", "40", "-c");
        Pair r = run(args, args);
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        checkOutput(r, size, 40);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1024})
    @Timeout(60)
    void udPingPongsAsUdPingpong(int size) throws Exception {
        List<String> args = List.of("-d", "roce_lo", "--ud", "-s", String.valueOf(size), "-n", "40");
        Pair r = run(args, args);
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        checkOutput(r, size, 40);
    }

    @Test
    @Timeout(60)
    void udRefusesAMessageAboveThePortMtuAndOptionsUdPingpongHasNot() throws Exception {
        int mtu;
        try (io.jrdma.verbs.DeviceContext c = io.jrdma.verbs.Rdma.device("roce_lo")
                .open(io.jrdma.verbs.DeviceOptions.defaults())) {
            mtu = c.queryPort().activeMtu().bytes();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = PingpongCommand.run(List.of("-d", "roce_lo", "--ud", "-s", String.valueOf(mtu + 1), "-p", "0",
                "--timeout", "5"), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, rc, err.toString(StandardCharsets.UTF_8));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("Requested size larger than port MTU (" + mtu + ")"),
                err.toString(StandardCharsets.UTF_8));
        rc = PingpongCommand.run(List.of("--ud", "-m", "1024"), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, rc);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("option -m/--mtu does not apply to --ud"),
                err.toString(StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(60)
    void aPortTheDeviceLacksIsRefusedNamingItsPorts() {
        for (List<String> args : List.of(List.of("-d", "roce_lo", "-i", "2", "-p", "0", "--timeout", "5"),
                List.of("-d", "roce_lo", "-i", "2", "--srq", "-q", "2", "-p", "0", "--timeout", "5"))) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = PingpongCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8));
            assertEquals(2, rc, args + ": " + err.toString(StandardCharsets.UTF_8));
            assertTrue(err.toString(StandardCharsets.UTF_8).contains("option -i/--ib-port: port 2 of roce_lo does not"
                    + " exist: valid ports are 1..1 (phys_port_cnt 1)"), args + ": " + err.toString(StandardCharsets.UTF_8));
        }
    }

    @Test
    @Timeout(60)
    void eventsAndAGidIndexWork() throws Exception {
        Pair r = run(List.of("-d", "roce_lo", "-g", "0", "-e", "-n", "30", "-r", "4"),
                List.of("-g", "0", "-n", "30", "-r", "4"));
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        checkOutput(r, 4096, 30);
    }

    @Test
    @Timeout(60)
    void checkFindsDataTheClientDidNotMark() throws Exception {
        // the server validates (-c) what a client without -c sent: its pages do not start with 0
        Pair r = run(List.of("-d", "roce_lo", "-s", "10000", "-n", "10", "-c"), List.of("-s", "10000", "-n", "10"));
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        assertEquals(1, r.serverRc(), r.serverOut() + r.serverErr());
        int pages = (10000 + HostPage.size() - 1) / HostPage.size(); // 3 of 4 KiB
        StringBuilder lines = new StringBuilder();
        for (int p = 0; p < pages; p++) {
            lines.append("invalid data in page ").append(p).append('\n');
        }
        assertTrue(r.serverOut().contains(lines), r.serverOut());
        assertTrue(r.serverErr().contains(pages + " page" + (pages == 1 ? "" : "s") + " of the received data differ"),
                r.serverErr());
    }

    @Test
    @Timeout(60)
    void gidsOfTwoIpVersionsFailOnBothSidesWithTheGidIndexToUse() throws Exception {
        // one host, as the README's "-g 0" example run twice: an IPv4 GID on one side, an IPv6 one on the other
        List<io.jrdma.verbs.Gid> table = io.jrdma.verbs.Rdma.device("roce_lo").gids();
        int v6 = -1;
        for (int i = 0; i < table.size() && v6 < 0; i++) {
            v6 = io.jrdma.tools.oob.Roce.isIpv4Mapped(table.get(i).raw()) ? -1 : i;
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(v6 > 0, "lo has no IPv6 address here: " + table);
        Pair r = run(List.of("-d", "roce_lo", "-g", "0", "-n", "5"), List.of("-d", "roce_lo", "-g", String.valueOf(v6), "-n", "5"));
        assertEquals(1, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(1, r.clientRc(), r.clientOut() + r.clientErr());
        assertTrue(r.serverErr().contains("jrdma pingpong: the client's GID ::1 is IPv6 and this side's GID 0"
                + " (::ffff:127.0.0.1 on roce_lo) is IPv4: RoCEv2 needs both of one IP version. Give this side -g " + v6
                + " (::1), or run both sides without -g"), r.serverErr());
        assertTrue(r.clientErr().contains("closed the connection after 0 of the 52 bytes of the server's address."
                + " The server could not use this side's address"), r.clientErr());
        assertTrue(r.clientErr().contains("(GID " + v6 + ", ::1, IPv6), give this side -g 0 (::ffff:127.0.0.1)"),
                r.clientErr());
        assertTrue(!r.serverErr().contains("EINVAL"), r.serverErr());
    }
}

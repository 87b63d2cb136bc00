package io.jrdma.tools;

import io.jrdma.tools.oob.RawPeer;
import io.jrdma.tools.perf.PerfCommand;
import io.jrdma.tools.perf.PerftestCommand;
import io.jrdma.tools.pingpong.PingpongCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Peers that break the side-channel protocols (short messages, garbage, the wrong protocol, an
 * old perftest, silence): each run ends with a clear message and exit code 1, within its
 * timeout, never hanging.
 */
class SideChannelFailureTest {
    /** An exit code and the error output of one jrdma side run in the background. */
    record Result(int rc, String out, String err, long millis) {
    }

    interface Side {
        int run(PrintStream out, PrintStream err, IntConsumer listening);
    }

    static CompletableFuture<Result> start(Side side, CompletableFuture<Integer> port) {
        return CompletableFuture.supplyAsync(() -> {
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            ByteArrayOutputStream e = new ByteArrayOutputStream();
            long t0 = System.nanoTime();
            int rc = side.run(new PrintStream(o, true, StandardCharsets.UTF_8),
                    new PrintStream(e, true, StandardCharsets.UTF_8), port::complete);
            port.complete(-1);
            return new Result(rc, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8),
                    (System.nanoTime() - t0) / 1_000_000);
        });
    }

    static CompletableFuture<Result> pingpongServer(CompletableFuture<Integer> port, String... extra) throws Exception {
        String[] args = concat(new String[] {"-d", "roce_lo", "-p", "0", "--timeout", "2"}, extra);
        var o = PingpongCommand.parse(args);
        return start((out, err, l) -> PingpongCommand.execute(o, out, err, l), port);
    }

    static CompletableFuture<Result> perfServer(CompletableFuture<Integer> port) throws Exception {
        var o = PerfCommand.parsePerftest("write_bw", "-d", "roce_lo", "-p", "0", "--timeout", "2");
        return start((out, err, l) -> PerftestCommand.execute(o, out, err, l), port);
    }

    static String[] concat(String[] a, String... b) {
        String[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    static byte[] ascii(String s, int size) {
        return Arrays.copyOf(s.getBytes(StandardCharsets.US_ASCII), size);
    }

    static Result failed(CompletableFuture<Result> f, String expected) throws Exception {
        Result r = f.get(30, TimeUnit.SECONDS);
        assertEquals(1, r.rc(), r.out() + r.err());
        assertTrue(r.err().contains(expected), "expected \"" + expected + "\" in:\n" + r.err());
        assertTrue(r.millis() < 15_000, "took " + r.millis() + " ms");
        return r;
    }

    // ------------------------------------------------------------------ pingpong server

    @Test
    @Timeout(30)
    void pingpongShortMessage() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = pingpongServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write("0000:000011:95084e:0".getBytes(StandardCharsets.US_ASCII));
        }
        failed(server, "closed the connection after 20 of the 52 bytes of the client's address");
    }

    @Test
    @Timeout(30)
    void pingpongGarbage() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = pingpongServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("GET / HTTP/1.1\r\nHost: x\r\n\r\n..........................", 52));
            failed(server, "the peer's address message is not ibv_rc_pingpong's");
        }
    }

    @Test
    @Timeout(30)
    void pingpongSilentOrPerftestClientTimesOut() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = pingpongServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("6.06", 16)); // a perftest client's first message
            Result r = failed(server, "timed out waiting for the client's address from 127.0.0.1:");
            assertTrue(r.err().contains("only 16 of 52 bytes arrived (\"6.06\\0\\0"), r.err());
        }
    }

    @Test
    @Timeout(30)
    void pingpongWithoutDone() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = pingpongServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("0000:000011:95084e:00000000000000000000ffff7f000001", 52));
            assertEquals(52, p.read(52).length);
            p.write(ascii("nope", 5));
            failed(server, "the client answered \"nope\\0\" instead of \"done\"");
        }
    }

    // ------------------------------------------------------------------ pingpong client

    @Test
    @Timeout(30)
    void pingpongClientGetsAShortAnswer() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            var o = PingpongCommand.parse("-p", String.valueOf(ss.getLocalPort()), "--timeout", "2", "127.0.0.1");
            var client = start((out, err, l) -> PingpongCommand.execute(o, out, err, l), new CompletableFuture<>());
            try (RawPeer p = RawPeer.accept(ss)) {
                assertEquals(52, p.read(52).length);
                p.write(ascii("0000:00001", 10));
            }
            failed(client, "closed the connection after 10 of the 52 bytes of the server's address");
        }
    }

    @Test
    @Timeout(30)
    void nobodyListening() throws Exception {
        int port;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = ss.getLocalPort();
        }
        var pp = PingpongCommand.parse("-p", String.valueOf(port), "--timeout", "2", "127.0.0.1");
        failed(start((out, err, l) -> PingpongCommand.execute(pp, out, err, l), new CompletableFuture<>()),
                "couldn't connect to 127.0.0.1:" + port);
        var pf = PerfCommand.parsePerftest("read_bw", "-p", String.valueOf(port), "--timeout", "2", "127.0.0.1");
        failed(start((out, err, l) -> PerftestCommand.execute(pf, out, err, l), new CompletableFuture<>()),
                "couldn't connect to 127.0.0.1:" + port);
    }

    // ------------------------------------------------------------------ perftest server

    @Test
    @Timeout(30)
    void perftestOldVersion() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = perfServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("5.60", 16));
            Result r = failed(server, "Current implementation is not compatible with versions older than 5.70");
            assertTrue(r.out().contains("* Waiting for client to connect... *"), r.out());
        }
    }

    @Test
    @Timeout(30)
    void perftestServerGetsAPingpongClient() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = perfServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("0000:000011:95084e:00000000000000000000ffff7f000001", 52));
            failed(server, "the peer is not perftest: its first 16 bytes should be perftest's version string");
        }
    }

    @Test
    @Timeout(30)
    void perftestGarbageKeys() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = perfServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("6.06", 16));
            p.read(16);
            p.write(new byte[] {0, 0, 0x10, 0});
            p.read(4);
            p.write(new byte[] {0, 0, 0, 64});
            p.read(4);
            p.write(new byte[] {'3', 0});
            p.read(2);
            byte[] junk = new byte[108];
            Arrays.fill(junk, (byte) 'x');
            p.write(junk);
            failed(server, "the peer's QP message is not perftest's");
        }
    }

    @Test
    @Timeout(30)
    void perftestClientLeavesEarly() throws Exception {
        CompletableFuture<Integer> port = new CompletableFuture<>();
        var server = perfServer(port);
        try (RawPeer p = RawPeer.connect(port.get(10, TimeUnit.SECONDS))) {
            p.write(ascii("6.06", 16));
            p.read(16);
        }
        failed(server, "closed the connection after 0 of the 4 bytes of the page size");
    }

    // ------------------------------------------------------------------ perftest client

    @Test
    @Timeout(30)
    void perftestClientAgainstASilentServer() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            var o = PerfCommand.parsePerftest("send_lat", "-p", String.valueOf(ss.getLocalPort()), "--timeout", "1",
                    "127.0.0.1");
            var client = start((out, err, l) -> PerftestCommand.execute(o, out, err, l), new CompletableFuture<>());
            try (RawPeer p = RawPeer.accept(ss)) {
                assertEquals(16, p.read(16).length);
                failed(client, "timed out waiting for the perftest version from 127.0.0.1:");
            }
        }
    }

    @Test
    @Timeout(30)
    void perftestServerLeavesAfterTheVersion() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            var o = PerfCommand.parsePerftest("atomic_bw", "-p", String.valueOf(ss.getLocalPort()), "--timeout", "2",
                    "127.0.0.1");
            var client = start((out, err, l) -> PerftestCommand.execute(o, out, err, l), new CompletableFuture<>());
            try (RawPeer p = RawPeer.accept(ss)) {
                p.read(16);
                p.write(ascii("6.06", 16));
            }
            failed(client, "closed the connection after 0 of the 4 bytes of the page size");
        }
    }

    // ------------------------------------------------------------------ usage

    @Test
    void unsupportedFlagsAreUsageErrors() {
        // (-R on a RoCE device was one; it is rdma_cm over the InfiniBand CM now: PerftestRdmaCmTest)
        for (List<String> args : List.of(List.of("perf", "send_bw", "-b"),
                List.of("perf", "write_bw", "--verify"), List.of("perf", "write_bw", "--jrdma-cm", "-q", "2"),
                List.of("perf", "write_lat", "-q", "2"), List.of("perf", "read_bw", "-I", "64"),
                List.of("perf", "atomic_bw", "-s", "16"), List.of("pingpong", "-o"), List.of("pingpong", "-m", "1500"),
                List.of("pingpong", "h1", "h2"))) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = Main.run(args.toArray(String[]::new), new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8));
            assertEquals(2, rc, args + ": " + err);
            assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("jrdma " + args.getFirst() + ": "), err.toString());
        }
    }
}

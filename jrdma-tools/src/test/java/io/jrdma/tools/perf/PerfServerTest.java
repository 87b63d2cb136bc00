package io.jrdma.tools.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jrdma perf --server}: one server serves client after client; a client that dies in the middle of a
 * test is noticed through the side channel within a second and the next client is served; and a churn of
 * connect/transfer/disconnect cycles against one server leaves no file descriptors, threads, heap or direct
 * memory behind.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class PerfServerTest {
    /** A thread-safe sink: the server thread prints while the test reads. */
    private static final class Captured extends OutputStream {
        private final ByteArrayOutputStream b = new ByteArrayOutputStream();

        @Override
        public synchronized void write(int c) {
            b.write(c);
        }

        @Override
        public synchronized void write(byte[] d, int off, int len) {
            b.write(d, off, len);
        }

        synchronized String text() {
            return b.toString(StandardCharsets.UTF_8);
        }
    }

    /** {@code startedMillis}: when the server began, so that counters of contexts opened before (an earlier test's) are not its. */
    private record Server(Thread thread, int port, Captured out, AtomicInteger rc, long startedMillis) {
    }

    private static Server startServer(long clients, String... testArgs) throws Exception {
        return startServer(clients, 1, testArgs);
    }

    /** {@code jrdma perf <test> --server -d roce_lo --timeout 20 --parallel N}, serving {@code clients} clients. */
    private static Server startServer(long clients, int parallel, String... testArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(testArgs));
        args.addAll(List.of("-d", "roce_lo", "-p", "0", "--timeout", "20"));
        PerftestOptions o = PerfCommand.parsePerftest(args.toArray(String[]::new));
        Captured out = new Captured();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        CompletableFuture<Integer> port = new CompletableFuture<>();
        AtomicInteger rc = new AtomicInteger(-1);
        long started = System.currentTimeMillis();
        Thread t = Thread.ofPlatform().name("perf-server-test").daemon().start(
                () -> rc.set(PerftestCommand.serve(o, clients, parallel, ps, ps, port::complete)));
        return new Server(t, port.get(30, TimeUnit.SECONDS), out, rc, started);
    }

    /** {@code jrdma perf <test> --server --jrdma-cm -d roce_lo}, serving {@code clients} clients. */
    private static Server startCmServer(long clients, String timeoutSec, String... testArgs) throws Exception {
        return startCmServer(clients, 1, timeoutSec, testArgs);
    }

    /** The same, serving up to {@code parallel} clients at once. */
    private static Server startCmServer(long clients, int parallel, String timeoutSec, String... testArgs)
            throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(testArgs));
        args.addAll(List.of("--jrdma-cm", "-d", "roce_lo", "-p", "0", "--timeout", timeoutSec));
        PerfOptions o = PerfCommand.parse(args.toArray(String[]::new));
        Captured out = new Captured();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        CompletableFuture<Integer> port = new CompletableFuture<>();
        AtomicInteger rc = new AtomicInteger(-1);
        long started = System.currentTimeMillis();
        Thread t = Thread.ofPlatform().name("perf-cm-server-test").daemon().start(
                () -> rc.set(PerfCommand.serve(o, clients, parallel, ps, ps, port::complete)));
        return new Server(t, port.get(30, TimeUnit.SECONDS), out, rc, started);
    }

    /** A {@code --jrdma-cm} client of {@code port} in this JVM; returns its exit code. */
    private static int cmClient(int port, String... testArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(testArgs));
        args.addAll(List.of("--jrdma-cm", "-d", "roce_lo", "-p", String.valueOf(port), "--timeout", "20", "127.0.0.1"));
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
        return PerfCommand.execute(PerfCommand.parse(args.toArray(String[]::new)), quiet, quiet);
    }

    private static int client(int port, String... testArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(testArgs));
        args.addAll(List.of("-d", "roce_lo", "-p", String.valueOf(port), "--timeout", "20", "127.0.0.1"));
        PerftestOptions o = PerfCommand.parsePerftest(args.toArray(String[]::new));
        java.io.ByteArrayOutputStream kept = new java.io.ByteArrayOutputStream();
        PrintStream out = new PrintStream(kept, true, StandardCharsets.UTF_8);
        int rc = PerftestCommand.execute(o, out, out);
        if (rc != 0) { // what the client said, for the failure that follows (a test asserts the code)
            System.out.println("jrdma perf client " + String.join(" ", args) + " exited " + rc + ":\n"
                    + kept.toString(StandardCharsets.UTF_8));
        }
        return rc;
    }

    @Test
    void aClientThatDiesIsNoticedWithinASecondAndTheNextOneIsServed() throws Exception {
        String[] test = {"send_bw", "-s", "64", "-n", "100000"};
        Server s = startServer(2, test);
        long noticedMs = killAClientMidway(s, test, List.of(), "the peer closed the side channel");
        System.out.println("perf --server: a killed client noticed after " + noticedMs + " ms");
        // the server goes on: the next client is served (a short run of the same test)
        assertEquals(0, client(s.port(), test), s.out().text());
        s.thread().join(30_000);
        assertTrue(s.out().text().contains("client 2: done"), s.out().text());
        assertEquals(1, s.rc().get(), "one client failed: exit code 1");
    }

    @Test
    void overTheConnectionManagerAClientThatDiesIsSeenDisconnectedWithinASecondAndTheNextOneIsServed()
            throws Exception {
        Server s = startCmServer(2, "20", "send_bw");
        long noticedMs = killAClientMidway(s, new String[] {"send_bw", "-s", "64", "-D", "60"}, List.of("--jrdma-cm"),
                "the client disconnected");
        System.out.println("perf --server --jrdma-cm: a killed client seen DISCONNECTED after " + noticedMs + " ms");
        // the next client is served, with a test of its own choosing
        assertEquals(0, cmClient(s.port(), "write_bw", "-s", "4096", "-n", "200", "--verify"), s.out().text());
        s.thread().join(30_000);
        assertTrue(s.out().text().contains("client 2: done"), s.out().text());
        assertEquals(1, s.rc().get(), "one client failed: exit code 1");
    }

    /**
     * Starts a client in a JVM of its own, kills it in the middle of its transfer (once the server's counters show
     * 2,000 packets in) and waits for the server to say that client 1 failed.
     *
     * @return the milliseconds from the kill to the server's notice (asserted under a second)
     */
    private static long killAClientMidway(Server s, String[] test, List<String> more, String because) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(test));
        args.addAll(more);
        Process child = childClientUnderWay(s, "the child client", args);
        child.destroyForcibly();
        long killed = System.nanoTime();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        while (!s.out().text().contains("client 1: failed")) {
            assertTrue(System.nanoTime() - killed < 10_000_000_000L, "the server did not notice: " + s.out().text());
            Thread.sleep(5);
        }
        long noticedMs = (System.nanoTime() - killed) / 1_000_000;
        assertTrue(s.out().text().contains(because), s.out().text());
        assertTrue(noticedMs < 1_000, "noticed after " + noticedMs + " ms, not within a second");
        return noticedMs;
    }

    /**
     * A client that sends its connection request and then nothing (no RTU) holds the server only until the RTU's
     * deadline ({@code min(5 s, --timeout)}): the server's connection reports DISCONNECTED, that client's run fails,
     * and the next client is served.
     */
    @Test
    void overTheConnectionManagerAClientSilentAfterItsRequestIsLetGoAtItsDeadline() throws Exception {
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        byte[] req = recordCmRequest(test);
        assertTrue(req.length > 7, "the client sent no request");
        Server s = startCmServer(2, "3", test);
        try (java.net.Socket silent = new java.net.Socket("127.0.0.1", s.port())) {
            silent.getOutputStream().write(req); // and never its RTU
            long t0 = System.nanoTime();
            while (!s.out().text().contains("client 1: failed")) {
                assertTrue(System.nanoTime() - t0 < 20_000_000_000L, "the server still waits for the silent client: "
                        + tail(s));
                Thread.sleep(5);
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("perf --server --jrdma-cm: a client silent after its request let go after " + ms + " ms");
            assertTrue(s.out().text().contains("the client disconnected"), tail(s));
            assertTrue(ms < 3_000 + 2_000, "let go after " + ms + " ms; its RTU was due within 3 s");
        }
        assertEquals(0, cmClient(s.port(), test), tail(s));
        s.thread().join(30_000);
        assertTrue(s.out().text().contains("client 2: done"), tail(s));
    }

    /**
     * {@code --parallel 2}: while one client runs a long test (write_bw for 20 s), another one's short run is served
     * and done; the long one is then killed and seen DISCONNECTED, and the server ends with one failure.
     */
    @Test
    void withParallelTwoAClientIsServedWhileAnotherOneRuns() throws Exception {
        Server s = startCmServer(2, 2, "20", "write_bw");
        Process longOne = childClientUnderWay(s, "the long client",
                List.of("write_bw", "-s", "4096", "-D", "20", "--jrdma-cm"));
        try {
            long t0 = System.nanoTime();
            assertEquals(0, cmClient(s.port(), "send_bw", "-s", "4096", "-n", "200", "--verify"), s.out().text());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(longOne.isAlive(), "the long client ended before the short one was served");
            long until = System.nanoTime() + 10_000_000_000L; // the server's report of it comes when its thread ends
            while (!s.out().text().contains(" client 2: done")) {
                assertTrue(System.nanoTime() < until, "client 2 is not reported done: " + s.out().text());
                Thread.sleep(5);
            }
            assertTrue(!s.out().text().contains(" client 1:"), "client 1 ended first: " + s.out().text());
            System.out.println("perf --server --jrdma-cm --parallel 2: a second client served in " + ms
                    + " ms while the first one ran");
        } finally {
            longOne.destroyForcibly();
        }
        assertTrue(longOne.waitFor(30, TimeUnit.SECONDS));
        s.thread().join(30_000);
        assertTrue(s.out().text().contains(" client 1: failed"), s.out().text());
        assertTrue(s.out().text().contains("the client disconnected"), s.out().text());
        assertEquals(1, s.rc().get(), s.out().text());
    }

    /** The command line: {@code --server --jrdma-cm --clients 2}, and a client that runs twice with {@code --clients 2}. */
    @Test
    void theCommandLineServesAndRepeatsOverTheConnectionManager() throws Exception {
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
        assertEquals(2, PerfCommand.run(List.of("write_bw", "--jrdma-cm", "--server", "127.0.0.1"), quiet, quiet));
        assertEquals(2, PerfCommand.run(List.of("write_bw", "--jrdma-cm", "--clients", "2"), quiet, quiet));
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
            port = free.getLocalPort();
        }
        String p = String.valueOf(port);
        Captured out = new Captured();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        AtomicInteger rc = new AtomicInteger(-1);
        Thread t = Thread.ofPlatform().daemon().start(() -> rc.set(PerfCommand.run(List.of("write_bw", "--jrdma-cm",
                "--server", "--clients", "2", "-d", "roce_lo", "-p", p, "--timeout", "20"), ps, ps)));
        long t0 = System.nanoTime();
        while (!out.text().contains("for client after client")) {
            assertTrue(System.nanoTime() - t0 < 30_000_000_000L && t.isAlive(), "the server did not start: " + out.text());
            Thread.sleep(5);
        }
        assertEquals(0, PerfCommand.run(List.of("write_bw", "--jrdma-cm", "--clients", "2", "-d", "roce_lo", "-p", p,
                "-s", "4096", "-n", "200", "--timeout", "20", "127.0.0.1"), quiet, quiet), out.text());
        t.join(30_000);
        assertEquals(0, rc.get(), out.text());
        assertTrue(out.text().contains(" client 2: done"), out.text());
    }

    /** The bytes a real {@code --jrdma-cm} client sends first (its connection request), recorded by a raw listener. */
    private static byte[] recordCmRequest(String... test) throws Exception {
        try (java.net.ServerSocket ss = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            Thread c = Thread.ofPlatform().daemon().start(() -> {
                try {
                    List<String> args = new java.util.ArrayList<>(List.of(test));
                    args.addAll(List.of("--jrdma-cm", "-d", "roce_lo", "-p", String.valueOf(ss.getLocalPort()),
                            "--timeout", "2", "127.0.0.1"));
                    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
                    PerfCommand.execute(PerfCommand.parse(args.toArray(String[]::new)), quiet, quiet);
                } catch (Exception ignored) {
                    // it fails: nobody answers it
                }
            });
            ss.setSoTimeout(20_000);
            try (java.net.Socket sock = ss.accept()) {
                sock.setSoTimeout(20_000);
                java.io.DataInputStream in = new java.io.DataInputStream(sock.getInputStream());
                byte[] head = in.readNBytes(7); // "JRCM", type, body length
                int len = ((head[5] & 0xFF) << 8) | (head[6] & 0xFF);
                byte[] body = in.readNBytes(len);
                c.join(10_000);
                byte[] all = java.util.Arrays.copyOf(head, 7 + body.length);
                System.arraycopy(body, 0, all, 7, body.length);
                return all;
            }
        }
    }

    /** The bytes a real client sends first (its parameters), recorded by a raw listener. */
    private static byte[] recordClientHello(String... test) throws Exception {
        try (java.net.ServerSocket ss = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            Thread c = Thread.ofPlatform().daemon().start(() -> {
                try {
                    List<String> args = new java.util.ArrayList<>(List.of(test));
                    args.addAll(List.of("-d", "roce_lo", "-p", String.valueOf(ss.getLocalPort()), "--timeout", "2",
                            "127.0.0.1"));
                    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
                    PerftestCommand.execute(PerfCommand.parsePerftest(args.toArray(String[]::new)), quiet, quiet);
                } catch (Exception ignored) {
                    // it fails: nobody answers it
                }
            });
            ss.setSoTimeout(20_000);
            try (java.net.Socket sock = ss.accept()) {
                sock.setSoTimeout(1_000);
                ByteArrayOutputStream got = new ByteArrayOutputStream();
                byte[] buf = new byte[4096];
                try {
                    int n;
                    while ((n = sock.getInputStream().read(buf)) > 0) {
                        got.write(buf, 0, n);
                    }
                } catch (java.net.SocketTimeoutException e) {
                    // all it sends before it waits for the server
                }
                c.join(10_000);
                return got.toByteArray();
            }
        }
    }

    @Test
    void hostileExchangesEndOnlyTheirOwnRunAndTheNextClientIsServed() throws Exception {
        int inputs = Integer.getInteger("jrdma.fuzz.perftest", 200);
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        byte[] valid = recordClientHello(test);
        assertTrue(valid.length > 0, "the client sent nothing");
        java.util.SplittableRandom r = new java.util.SplittableRandom(16);
        List<byte[]> hostile = new java.util.ArrayList<>();
        for (int i = 0; i < inputs; i++) {
            hostile.add(switch (i % 3) {
                case 0 -> {
                    byte[] b = new byte[r.nextInt(0, 300)];
                    r.nextBytes(b);
                    yield b;
                }
                case 1 -> java.util.Arrays.copyOf(valid, r.nextInt(0, valid.length));
                default -> {
                    byte[] b = valid.clone();
                    for (int k = 1 + r.nextInt(3); k > 0; k--) {
                        b[r.nextInt(b.length)] = (byte) r.nextInt(256);
                    }
                    yield b;
                }
            });
        }
        // a connection becomes a client once its 16-byte version came; shorter ones end at the server's gate
        long served = hostile.stream().filter(b -> b.length >= PerftestWire.VERSION_SIZE).count();
        Server s = startServer(served + 1, test);
        long t0 = System.nanoTime();
        for (byte[] in : hostile) {
            try (java.net.Socket sock = new java.net.Socket("127.0.0.1", s.port())) {
                sock.getOutputStream().write(in);
                sock.shutdownOutput();
                sock.setSoTimeout(20_000);
                try {
                    while (sock.getInputStream().read(new byte[4096]) >= 0) {
                        // what the server answers, until it ends this run and closes
                    }
                } catch (java.net.SocketException e) {
                    // the server closed with our bytes unread (a reset): it ended this run
                }
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(0, client(s.port(), test), tail(s));
        s.thread().join(30_000);
        System.out.println("perf --server fuzz: " + inputs + " hostile exchanges (" + served + " past the gate) in " + ms
                + " ms, then a real client: " + tail(s).lines().filter(l -> l.startsWith(" client " + (served + 1)))
                .findFirst().orElse("?"));
        assertTrue(s.out().text().contains(" client " + (served + 1) + ": done"), tail(s));
        assertTrue(s.out().text().contains((inputs - served) + " closed by the peer"), tail(s));
    }

    /** @return the milliseconds a real client's run (write_bw, 200 x 4 KiB) takes against {@code s} */
    private static long timedClient(Server s, String... test) throws Exception {
        long t0 = System.nanoTime();
        assertEquals(0, client(s.port(), test), tail(s));
        return (System.nanoTime() - t0) / 1_000_000;
    }

    /** Opens a connection to {@code port} and sends {@code first} (maybe nothing), then stays silent. */
    private static java.net.Socket hostile(int port, byte[] first) throws Exception {
        java.net.Socket sock = new java.net.Socket("127.0.0.1", port);
        sock.getOutputStream().write(first);
        sock.getOutputStream().flush();
        return sock;
    }

    /** @return the milliseconds until the server closed {@code sock}, from {@code since} (fails after 15 s) */
    private static long closedAfter(java.net.Socket sock, long since) throws Exception {
        sock.setSoTimeout(15_000);
        try {
            while (sock.getInputStream().read(new byte[256]) >= 0) {
                // what the server sent before it closed (its version, for a client that sent one)
            }
        } catch (java.net.SocketException e) {
            // a reset: closed too
        }
        return (System.nanoTime() - since) / 1_000_000;
    }

    /**
     * Returns once the server's gate has room again (the connections the test closed were seen closed): a probe
     * connection is no longer closed at once.
     */
    private static void awaitRoom(Server s) throws Exception {
        long t0 = System.nanoTime();
        while (true) {
            try (java.net.Socket probe = new java.net.Socket("127.0.0.1", s.port())) {
                probe.setSoTimeout(300);
                try {
                    if (probe.getInputStream().read() < 0) {
                        assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "the gate stays full: " + tail(s));
                        continue; // over the bound still
                    }
                } catch (java.net.SocketTimeoutException e) {
                    return; // the gate waits for this one's version: there is room
                } catch (java.net.SocketException e) {
                    continue; // reset: over the bound still
                }
            }
        }
    }

    /**
     * Silent clients and clients that sent half of their version do not delay a real client (its run takes what it
     * takes without them, within a second's noise); each is closed at its own deadline, min(5 s, --timeout 20),
     * and counted; the next real client is served.
     */
    @Test
    void silentAndHalfMessageClientsDoNotDelayARealClient() throws Exception {
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        Server s = startServer(3, test);
        long alone = timedClient(s, test);
        List<java.net.Socket> idle = new java.util.ArrayList<>();
        long opened = System.nanoTime();
        try {
            byte[] half = java.util.Arrays.copyOf(PerftestWire.version(PerftestWire.VERSION), 8);
            for (int i = 0; i < 4; i++) {
                idle.add(hostile(s.port(), new byte[0]));
                idle.add(hostile(s.port(), half));
            }
            long withThem = timedClient(s, test);
            System.out.println("perf --server: a real client's run took " + withThem + " ms with 4 silent and 4"
                    + " half-version clients connected first, " + alone + " ms alone");
            assertTrue(withThem < alone + 1_000, "the real client took " + withThem + " ms behind the silent ones, "
                    + alone + " ms alone: " + tail(s));
            for (java.net.Socket sock : idle) {
                long ms = closedAfter(sock, opened);
                assertTrue(ms >= 4_500 && ms < 7_500, "a silent client closed after " + ms + " ms, not at its 5 s"
                        + " deadline");
            }
        } finally {
            for (java.net.Socket sock : idle) {
                sock.close();
            }
        }
        long last = timedClient(s, test);
        s.thread().join(30_000);
        assertEquals(0, s.rc().get(), tail(s));
        assertTrue(s.out().text().contains(" client 3: done"), tail(s));
        assertTrue(s.out().text().contains("8 silent or partial at their deadline"), tail(s));
        System.out.println("perf --server: and the next real client " + last + " ms");
    }

    /**
     * At most {@link PerftestGate#MAX_EXCHANGING} connections wait for their version: more are closed at once. A
     * client that sent its version and then half of its page size is served and fails at its exchange's deadline;
     * the next client is served.
     */
    @Test
    void connectionsOverTheBoundAreClosedAtOnceAndAStalledExchangeEndsAtItsDeadline() throws Exception {
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        Server s = startServer(2, test);
        List<java.net.Socket> idle = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < PerftestGate.MAX_EXCHANGING; i++) {
                idle.add(hostile(s.port(), new byte[0]));
            }
            long t0 = System.nanoTime();
            while (!s.out().text().contains("still sending their version")) {
                try (java.net.Socket extra = hostile(s.port(), new byte[0])) {
                    long ms = closedAfter(extra, System.nanoTime());
                    if (ms >= 1_000) { // the gate had not yet taken all of them in: this one is waiting
                        idle.add(extra);
                    }
                }
                assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "no connection closed over the bound: " + tail(s));
            }
            long t1 = System.nanoTime();
            try (java.net.Socket extra = hostile(s.port(), new byte[0])) {
                long ms = closedAfter(extra, t1);
                assertTrue(ms < 1_000, "a connection over the bound closed after " + ms + " ms, not at once");
            }
        } finally {
            for (java.net.Socket sock : idle) {
                sock.close();
            }
        }
        awaitRoom(s);
        byte[] stalled = java.util.Arrays.copyOf(PerftestWire.version(PerftestWire.VERSION), 16 + 2);
        long t2 = System.nanoTime();
        try (java.net.Socket sock = hostile(s.port(), stalled)) {
            long ms = closedAfter(sock, t2);
            System.out.println("perf --server: an exchange stalled after the version ended after " + ms + " ms");
            assertTrue(ms >= 4_500 && ms < 7_500, "ended after " + ms + " ms, not at its 5 s deadline: " + tail(s));
        }
        assertEquals(0, client(s.port(), test), tail(s));
        s.thread().join(30_000);
        assertTrue(s.out().text().contains("did not finish within its 5000 ms (at the page size)"), tail(s));
        assertTrue(s.out().text().contains(" client 2: done"), tail(s));
        assertTrue(s.out().text().contains(" over the bound"), tail(s));
        assertEquals(1, s.rc().get(), tail(s));
    }

    /**
     * {@code --parallel 2}: while one client runs a long test, another one's short run is served and done; the long
     * one is then killed and noticed, and the server ends with one failure.
     */
    @Test
    void withParallelTwoAPerftestClientIsServedWhileAnotherOneRuns() throws Exception {
        Server s = startServer(2, 2, "write_bw", "-s", "64");
        assertTrue(s.out().text().contains("up to 2 at once"), s.out().text());
        Process longOne = childClientUnderWay(s, "the long client", List.of("write_bw", "-s", "64", "-n", "100000000"));
        try {
            long t0 = System.nanoTime();
            assertEquals(0, client(s.port(), "write_bw", "-s", "64", "-n", "1000"), s.out().text());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(longOne.isAlive(), "the long client ended before the short one was served");
            long until = System.nanoTime() + 10_000_000_000L;
            while (!s.out().text().contains(" client 2: done")) {
                assertTrue(System.nanoTime() < until, "client 2 is not reported done: " + s.out().text());
                Thread.sleep(5);
            }
            assertTrue(!s.out().text().contains(" client 1:"), "client 1 ended first: " + s.out().text());
            System.out.println("perf --server --parallel 2: a second client served in " + ms + " ms while the first"
                    + " one ran");
        } finally {
            longOne.destroyForcibly();
        }
        assertTrue(longOne.waitFor(30, TimeUnit.SECONDS));
        s.thread().join(30_000);
        assertTrue(s.out().text().contains(" client 1: failed"), s.out().text());
        // seen at once: in the handshake the server waits in (its read ends) or by the side channel's watch
        assertTrue(s.out().text().contains("closed the connection after 0 of the 108 bytes")
                || s.out().text().contains("the peer closed the side channel"), s.out().text());
        assertEquals(1, s.rc().get(), s.out().text());
    }

    /**
     * Starts {@code jrdma perf <perfArgs> -d roce_lo -p <server's port> --timeout 20 127.0.0.1} in a child JVM and
     * returns it once its transfer is under way (the server's counters file shows 2,000 packets in); a child that
     * dies or does not get there within 60 s fails the test (and is killed).
     */
    private static Process childClientUnderWay(Server s, String what, List<String> perfArgs) throws Exception {
        // no counters file: the test kills this client, which would leave it behind (the server's are read instead)
        List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Djrdma.stat=false", "-cp", System.getProperty("java.class.path"), "io.jrdma.tools.Main", "perf"));
        cmd.addAll(perfArgs);
        cmd.addAll(List.of("-d", "roce_lo", "-p", String.valueOf(s.port()), "--timeout", "20", "127.0.0.1"));
        Process child = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (receivedByServer(s) < 2_000) {
                assertTrue(System.nanoTime() < deadline && child.isAlive(), what + " never started: " + s.out().text());
                Thread.sleep(5);
            }
            return child;
        } catch (Throwable t) {
            child.destroyForcibly();
            throw t;
        }
    }

    /** @return the packets received by this process's contexts (the in-process server's), from their counters files */
    private static long receivedByServer(Server s) throws Exception {
        long n = 0;
        for (var snap : io.jrdma.engine.core.StatsFile.readAll(io.jrdma.engine.core.StatsFile.directory(),
                ProcessHandle.current().pid())) {
            if (snap.openedMillis() < s.startedMillis()) {
                continue; // a context of an earlier test of this JVM, still open: its packets are not this server's
            }
            n += snap.deviceCounters().getOrDefault("rcvd_pkts", 0L);
        }
        return n;
    }

    /** fds, threads, heap and direct/mapped memory of this JVM (server and clients), after a full GC. */
    private record Resources(long fds, int threads, long heap, long direct, long statFiles) {
        static Resources now() throws Exception {
            for (int i = 0; i < 3; i++) {
                System.gc();
            }
            long fds;
            try (var s = Files.list(Path.of("/proc/self/fd"))) {
                fds = s.count();
            }
            long direct = 0;
            for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
                direct += b.getMemoryUsed();
            }
            long stat;
            Path dir = io.jrdma.engine.core.StatsFile.directory();
            try (var s = Files.isDirectory(dir) ? Files.list(dir) : java.util.stream.Stream.<Path>empty()) {
                stat = s.filter(f -> f.getFileName().toString().startsWith(ProcessHandle.current().pid() + "-")).count();
            }
            return new Resources(fds, ManagementFactory.getThreadMXBean().getThreadCount(),
                    ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), direct, stat);
        }
    }

    /** One client's run against a server's port; returns its exit code. */
    private interface Cycle {
        int run(int port) throws Exception;
    }

    @Test
    void churnAgainstOneServerLeavesNothingBehind() throws Exception {
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        int cycles = Integer.getInteger("jrdma.churn.cycles", 300);
        churn("perf --server", cycles, startServer(20 + cycles, test), port -> client(port, test));
    }

    @Test
    void churnAgainstOneConnectionManagerServerLeavesNothingBehind() throws Exception {
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        int cycles = Integer.getInteger("jrdma.churn.cmCycles", 100);
        churn("perf --server --jrdma-cm", cycles, startCmServer(20 + cycles, "20", test), port -> cmClient(port, test));
    }

    /** 20 warm-up cycles, then {@code cycles} measured ones against {@code s}; fails on growth of any resource. */
    private static void churn(String what, int cycles, Server s, Cycle client) throws Exception {
        int warm = 20;
        for (int i = 0; i < warm; i++) {
            assertEquals(0, client.run(s.port()), "warm-up cycle " + i + ": " + tail(s));
        }
        Resources before = Resources.now();
        long t0 = System.nanoTime();
        for (int i = 0; i < cycles; i++) {
            assertEquals(0, client.run(s.port()), "cycle " + i + ": " + tail(s));
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        s.thread().join(60_000);
        assertEquals(0, s.rc().get(), tail(s));
        // the counters files are mapped through automatic arenas: their mappings go when the cleaner has run after
        // a GC, which is asynchronous; measure again until direct memory is back or 10 s pass
        Resources after = Resources.now();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (after.direct() > before.direct() + (1 << 20) && System.nanoTime() < deadline) {
            after = Resources.now();
        }
        System.out.println(what + " churn: " + cycles + " cycles in " + ms + " ms; before " + before + ", after "
                + after);
        assertTrue(after.fds() <= before.fds() + 2, "file descriptors grew: " + before + " -> " + after);
        assertTrue(after.threads() <= before.threads() + 1, "threads grew: " + before + " -> " + after);
        assertTrue(after.direct() <= before.direct() + (1 << 20), "direct memory grew: " + before + " -> " + after);
        assertTrue(after.heap() <= before.heap() + (16 << 20), "heap grew: " + before + " -> " + after);
        assertTrue(after.statFiles() <= before.statFiles(), "counters files left: " + before + " -> " + after);
    }

    private static String tail(Server s) {
        String t = s.out().text();
        return t.substring(Math.max(0, t.length() - 2000));
    }
}

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

    private record Server(Thread thread, int port, Captured out, AtomicInteger rc) {
    }

    private static Server startServer(long clients, String... testArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(testArgs));
        args.addAll(List.of("-d", "roce_lo", "-p", "0", "--timeout", "20"));
        PerftestOptions o = PerfCommand.parsePerftest(args.toArray(String[]::new));
        Captured out = new Captured();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        CompletableFuture<Integer> port = new CompletableFuture<>();
        AtomicInteger rc = new AtomicInteger(-1);
        Thread t = Thread.ofPlatform().name("perf-server-test").daemon().start(
                () -> rc.set(PerftestCommand.serve(o, clients, ps, ps, port::complete)));
        return new Server(t, port.get(30, TimeUnit.SECONDS), out, rc);
    }

    private static int client(int port, String... testArgs) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(testArgs));
        args.addAll(List.of("-d", "roce_lo", "-p", String.valueOf(port), "--timeout", "20", "127.0.0.1"));
        PerftestOptions o = PerfCommand.parsePerftest(args.toArray(String[]::new));
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
        return PerftestCommand.execute(o, quiet, quiet);
    }

    @Test
    void aClientThatDiesIsNoticedWithinASecondAndTheNextOneIsServed() throws Exception {
        String[] test = {"send_bw", "-s", "64", "-n", "100000"};
        Server s = startServer(2, test);
        // a client in a JVM of its own, killed in the middle of its transfer
        List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-cp", System.getProperty("java.class.path"), "io.jrdma.tools.Main", "perf"));
        cmd.addAll(List.of(test));
        cmd.addAll(List.of("-d", "roce_lo", "-p", String.valueOf(s.port()), "--timeout", "20", "127.0.0.1"));
        Process child = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (receivedByServer() < 2_000) { // the transfer is under way: the server's counters file says so
                assertTrue(System.nanoTime() < deadline && child.isAlive(), "the child client never started: "
                        + s.out().text());
                Thread.sleep(5);
            }
        } finally {
            child.destroyForcibly();
        }
        long killed = System.nanoTime();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        while (!s.out().text().contains("client 1: failed")) {
            assertTrue(System.nanoTime() - killed < 10_000_000_000L, "the server did not notice: " + s.out().text());
            Thread.sleep(5);
        }
        long noticedMs = (System.nanoTime() - killed) / 1_000_000;
        System.out.println("perf --server: a killed client noticed after " + noticedMs + " ms");
        assertTrue(s.out().text().contains("the peer closed the side channel"), s.out().text());
        assertTrue(noticedMs < 1_000, "noticed after " + noticedMs + " ms, not within a second");
        // the server goes on: the next client is served (a short run of the same test)
        assertEquals(0, client(s.port(), test), s.out().text());
        s.thread().join(30_000);
        assertTrue(s.out().text().contains("client 2: done"), s.out().text());
        assertEquals(1, s.rc().get(), "one client failed: exit code 1");
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
        Server s = startServer(inputs + 1, test);
        java.util.SplittableRandom r = new java.util.SplittableRandom(16);
        long t0 = System.nanoTime();
        for (int i = 0; i < inputs; i++) {
            byte[] in = switch (i % 3) {
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
            };
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
        System.out.println("perf --server fuzz: " + inputs + " hostile exchanges in " + ms + " ms, then a real client: "
                + tail(s).lines().filter(l -> l.startsWith(" client " + (inputs + 1))).findFirst().orElse("?"));
        assertTrue(s.out().text().contains(" client " + (inputs + 1) + ": done"), tail(s));
    }

    /** @return the packets received by this process's contexts (the in-process server's), from their counters files */
    private static long receivedByServer() throws Exception {
        long n = 0;
        for (var snap : io.jrdma.engine.core.StatsFile.readAll(io.jrdma.engine.core.StatsFile.directory(),
                ProcessHandle.current().pid())) {
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

    @Test
    void churnAgainstOneServerLeavesNothingBehind() throws Exception {
        int cycles = Integer.getInteger("jrdma.churn.cycles", 300);
        int warm = 20;
        String[] test = {"write_bw", "-s", "4096", "-n", "200"};
        Server s = startServer(warm + cycles, test);
        for (int i = 0; i < warm; i++) {
            assertEquals(0, client(s.port(), test), "warm-up cycle " + i + ": " + tail(s));
        }
        Resources before = Resources.now();
        long t0 = System.nanoTime();
        for (int i = 0; i < cycles; i++) {
            assertEquals(0, client(s.port(), test), "cycle " + i + ": " + tail(s));
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
        System.out.println("perf --server churn: " + cycles + " cycles in " + ms + " ms; before " + before + ", after "
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

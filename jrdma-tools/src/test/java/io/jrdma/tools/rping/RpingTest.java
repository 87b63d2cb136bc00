package io.jrdma.tools.rping;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma rping against itself over iwarp_lo: the lines rping prints, its buffer text, its errors. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RpingTest {
    record Run(int serverRc, String serverOut, String serverErr, int clientRc, String clientOut, String clientErr) {
    }

    static Run run(List<String> server, List<String> client) throws Exception {
        ByteArrayOutputStream so = new ByteArrayOutputStream();
        ByteArrayOutputStream se = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        List<String> sargs = new ArrayList<>(server);
        sargs.addAll(List.of("-s", "-a", "127.0.0.1", "-p", "0", "--timeout", "20"));
        CompletableFuture<Integer> serverRc = CompletableFuture.supplyAsync(() -> RpingCommand.run(sargs,
                new PrintStream(so, true, StandardCharsets.UTF_8), new PrintStream(se, true, StandardCharsets.UTF_8),
                port::complete));
        serverRc.thenRun(() -> port.completeExceptionally(new AssertionError("the server ended before listening: "
                + se.toString(StandardCharsets.UTF_8))));
        int p = port.get(20, TimeUnit.SECONDS);
        List<String> cargs = new ArrayList<>(client);
        cargs.addAll(List.of("-c", "-a", "127.0.0.1", "-p", String.valueOf(p), "--timeout", "20"));
        ByteArrayOutputStream co = new ByteArrayOutputStream();
        ByteArrayOutputStream ce = new ByteArrayOutputStream();
        int crc = RpingCommand.run(cargs, new PrintStream(co, true, StandardCharsets.UTF_8),
                new PrintStream(ce, true, StandardCharsets.UTF_8));
        int src = serverRc.get(30, TimeUnit.SECONDS);
        return new Run(src, so.toString(StandardCharsets.UTF_8), se.toString(StandardCharsets.UTF_8), crc,
                co.toString(StandardCharsets.UTF_8), ce.toString(StandardCharsets.UTF_8));
    }

    /** What rping puts in the buffer of ping {@code ping}, {@code size} bytes, its letters starting at {@code start}. */
    static String text(int ping, int start, int size) {
        StringBuilder b = new StringBuilder(String.format("rdma-ping-%d: ", ping));
        for (int c = start; b.length() < size - 1; c = c + 1 > 122 ? 65 : c + 1) {
            b.append((char) c);
        }
        return b.substring(0, size - 1);
    }

    @Test
    void pingsAreReadAndWrittenBackAndPrinted() throws Exception {
        String dev = "iwarp_lo";
        Run r = run(List.of("-v", "-D", dev), List.of("-v", "-V", "-C", "3", "-D", dev));
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        StringBuilder server = new StringBuilder();
        StringBuilder client = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            server.append("server ping data: ").append(text(i, 65 + i, 64)).append('\n');
            client.append("ping data: ").append(text(i, 65 + i, 64)).append('\n');
        }
        assertEquals(server.toString(), r.serverOut());
        assertEquals(client.toString(), r.clientOut());
        assertEquals("", r.serverErr() + r.clientErr());
    }

    /** rdma_cm over RoCE: the InfiniBand CM on roce_lo, with rping's sizes of the interop suite. */
    @Test
    void overRoceThroughTheInfinibandCm() throws Exception {
        String dev = "roce_lo";
        for (int size : new int[] {64, 4096, 65535}) {
            String s = String.valueOf(size);
            Run r = run(List.of("-v", "-S", s, "-D", dev), List.of("-v", "-V", "-C", "3", "-S", s, "-D", dev));
            assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
            assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
            String[] lines = r.clientOut().split("\n");
            assertEquals(3, lines.length, r.clientOut());
            assertEquals("ping data: " + text(2, 67, size), lines[2]);
            assertEquals("", r.serverErr() + r.clientErr());
        }
    }

    /** The client's disconnect reaches the server as rdma_cm's DISCONNECTED event (rping -d prints it, as rping does). */
    @Test
    void theServerSeesTheClientsDisconnectAsAnEvent() throws Exception {
        for (String dev : new String[] {"roce_lo", "iwarp_lo"}) {
            Run r = run(List.of("-d", "-D", dev), List.of("-C", "2", "-D", dev));
            assertEquals(0, r.clientRc(), r.clientErr());
            assertEquals(0, r.serverRc(), r.serverErr());
            assertTrue(r.serverErr().contains("server DISCONNECT EVENT..."), dev + ": " + r.serverErr());
        }
    }

    @Test
    void largestBufferAndManyPingsWrapTheLetters() throws Exception {
        Run r = run(List.of("-S", "65535"), List.of("-V", "-C", "60", "-S", "65535", "-v"));
        assertEquals(0, r.clientRc(), r.clientErr());
        assertEquals(0, r.serverRc(), r.serverErr());
        String[] lines = r.clientOut().split("\n");
        assertEquals(60, lines.length);
        assertEquals("ping data: " + text(58, 65, 65535), lines[58], "the first letter wraps from 'z' to 'A'");
        assertEquals("", r.serverOut(), "no -v on the server");
    }

    @Test
    void aClientBufferLargerThanTheServersFailsWithAMessage() throws Exception {
        Run r = run(List.of("-S", "64"), List.of("-C", "1", "-S", "128"));
        assertEquals(1, r.serverRc(), r.serverErr());
        assertTrue(r.serverErr().contains("use the same -S on both sides"), r.serverErr());
        assertEquals(1, r.clientRc(), r.clientErr());
    }

    /** One end of an rping connection written in the test: a QP, a 64-byte buffer, one receive posted. */
    static final class RawEnd implements AutoCloseable {
        final DeviceContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final Arena arena = Arena.ofShared();
        final MemorySegment buf = arena.allocate(64, 64);
        final MemoryRegion mr;
        final WorkCompletion wc = new WorkCompletion();
        ConnectionManager.Connection conn;

        RawEnd(String device) {
            ctx = DeviceChoice.named(device).open(DeviceOptions.defaults());
            pd = ctx.allocPd();
            cq = ctx.createCq(8);
            qp = pd.createQp(QpInitAttr.rc(cq).withDepth(4, 2));
            mr = pd.register(buf, Access.LOCAL_WRITE);
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0)
                    .portNum(DeviceChoice.portFor(ctx, InetAddress.getLoopbackAddress()))
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE));
            assertEquals(0, qp.postRecv(new RecvWorkRequest().wrId(1).sge(0, mr, 0, 32)));
        }

        /** The next completion, within 10 s. */
        WorkCompletion next() {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (cq.poll(wc) == 0) {
                assertTrue(System.nanoTime() - end < 0, "no completion within 10 s");
                Thread.onSpinWait();
            }
            return wc;
        }

        /** Sends {@code n} bytes of the buffer (from byte 32 on) in one SEND; returns its completion's status. */
        WcStatus send(int n) {
            assertEquals(0, qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, mr, 32, n)));
            while (next().wrId() != 2) {
                // the receive's completion, if any
            }
            return wc.status();
        }

        @Override
        public void close() {
            if (conn != null) {
                conn.close();
            }
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            ctx.close();
            arena.close();
        }
    }

    private static final List<String> DEVICES = List.of("roce_lo", "iwarp_lo");

    /**
     * rping's client_recv: a server message of another length than struct rping_rdma_info's 16 bytes is "Received
     * bogus data" at once, where a short one was taken as the go-ahead and the client went on (found in review).
     */
    @Test
    void theClientRefusesAServerMessageOfTheWrongLength() throws Exception {
        for (String dev : DEVICES) {
            for (int len : new int[] {8, 32}) {
                ByteArrayOutputStream ce = new ByteArrayOutputStream();
                try (RawEnd server = new RawEnd(dev); ConnectionManager.Listener l = server.ctx.rdmaCm().listen(
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
                    List<String> args = List.of("-c", "-a", "127.0.0.1", "-p", String.valueOf(l.address().getPort()),
                            "-D", dev, "-C", "1", "--timeout", "30");
                    CompletableFuture<Integer> client = CompletableFuture.supplyAsync(() -> RpingCommand.run(args,
                            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                            new PrintStream(ce, true, StandardCharsets.UTF_8)));
                    ConnectionManager.ConnectRequest req = l.poll(Duration.ofSeconds(20));
                    assertNotNull(req, dev + ": no request");
                    server.conn = req.accept(server.qp, ConnParam.defaults().withRdAtomic(1, 1), Duration.ofSeconds(20));
                    WorkCompletion wc = server.next(); // the client's first buffer
                    assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                    assertEquals(16, wc.byteLen());
                    WcStatus sent = server.send(len);
                    // the client ends well before its 30 s timeout, with rping's message
                    assertEquals(1, client.get(10, TimeUnit.SECONDS), dev + " " + len + ": " + ce);
                    String err = ce.toString(StandardCharsets.UTF_8);
                    if (len < 16) {
                        assertEquals(WcStatus.SUCCESS, sent);
                        assertTrue(err.contains("jrdma rping: Received bogus data, size " + len + " (rping's messages"
                                + " are the 16 bytes of struct rping_rdma_info)"), dev + ": " + err);
                    } else {
                        assertTrue(err.contains("jrdma rping: Received bogus data: a message longer than the 16 bytes"),
                                dev + ": " + err);
                    }
                }
            }
        }
    }

    /**
     * A client that connects and then sends nothing (gone without a disconnect: over RoCE no DREQ and no stream tell
     * the server) ends its connection after --timeout; the server waited for good between pings (found in review).
     */
    @Test
    void theServerGivesUpOnAClientThatSendsNothing() throws Exception {
        for (String dev : DEVICES) {
            ByteArrayOutputStream se = new ByteArrayOutputStream();
            CompletableFuture<Integer> port = new CompletableFuture<>();
            List<String> args = List.of("-s", "-a", "127.0.0.1", "-p", "0", "-D", dev, "--timeout", "2");
            CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> RpingCommand.run(args,
                    new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                    new PrintStream(se, true, StandardCharsets.UTF_8), port::complete));
            try (RawEnd client = new RawEnd(dev)) {
                client.conn = client.ctx.rdmaCm().connect(client.qp, new InetSocketAddress("127.0.0.1",
                        port.get(20, TimeUnit.SECONDS)), ConnParam.defaults().withRdAtomic(1, 1), Duration.ofSeconds(20));
                assertEquals(1, server.get(15, TimeUnit.SECONDS), dev + ": " + se);
                assertTrue(se.toString(StandardCharsets.UTF_8).contains("jrdma rping: timed out waiting for the client's"
                        + " next ping (it sent nothing and did not disconnect) (2 s)"), dev + ": " + se);
            }
        }
    }

    /**
     * rping -P: a failing client ends its own connection only (one line each, counted), the server serves the next
     * one, and each connection's buffers are freed and its PD closed when it ends, the server still running; it
     * exited at the first failing client and kept every connection's buffers until it exited (found in review).
     */
    @Test
    void aPersistentServerEndsOnlyAFailingClientsConnectionAndReleasesEachConnection() throws Exception {
        for (String dev : DEVICES) {
            ByteArrayOutputStream se = new ByteArrayOutputStream();
            Rping.Options o = RpingCommand.options(RpingCommand.PARSER.parse(List.of("-s", "-P", "-a", "127.0.0.1",
                    "-p", "0", "-D", dev, "--timeout", "20")));
            List<ProtectionDomain> pds = Collections.synchronizedList(new ArrayList<>());
            List<MemorySegment> buffers = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<Integer> port = new CompletableFuture<>();
            Rping server = new Rping(o, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                    new PrintStream(se, true, StandardCharsets.UTF_8), port::complete).watch((pd, b) -> {
                        pds.add(pd);
                        buffers.addAll(List.of(b));
                    });
            CompletableFuture<Integer> rc = new CompletableFuture<>();
            Thread t = Thread.ofPlatform().name("rping -s -P").start(() -> {
                try {
                    rc.complete(server.run());
                } catch (Throwable e) {
                    rc.completeExceptionally(e);
                }
            });
            try {
                String p = String.valueOf(port.get(20, TimeUnit.SECONDS));
                for (int round = 0; round < 2; round++) {
                    ByteArrayOutputStream ce = new ByteArrayOutputStream();
                    PrintStream cerr = new PrintStream(ce, true, StandardCharsets.UTF_8);
                    PrintStream cout = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
                    // a larger buffer than the server's: the server fails this client
                    assertEquals(1, RpingCommand.run(List.of("-c", "-a", "127.0.0.1", "-p", p, "-D", dev, "-C", "1",
                            "-S", "128", "--timeout", "20"), cout, cerr), ce.toString(StandardCharsets.UTF_8));
                    assertEquals(0, RpingCommand.run(List.of("-c", "-a", "127.0.0.1", "-p", p, "-D", dev, "-C", "3",
                            "-V", "--timeout", "20"), cout, cerr), dev + ": " + ce + "\nserver: " + se + ended(rc));
                }
                // each connection's buffers are freed once it ended, while the server runs on
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                assertEquals(4, pds.size(), se.toString(StandardCharsets.UTF_8));
                for (MemorySegment b : buffers) {
                    while (b.scope().isAlive() && System.nanoTime() - end < 0) {
                        LockSupport.parkNanos(1_000_000);
                    }
                    assertFalse(b.scope().isAlive(), dev + ": a connection's buffer is still allocated after its end");
                }
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment probe = a.allocate(64);
                    for (ProtectionDomain pd : pds) {
                        RdmaException e = assertThrows(RdmaException.class, () -> pd.register(probe, 0));
                        assertTrue(e.getMessage().contains("the protection domain is closed"), e.getMessage());
                    }
                }
                assertTrue(t.isAlive(), dev + ": the persistent server ended: " + se);
                String err = se.toString(StandardCharsets.UTF_8);
                assertEquals(2, err.lines().filter(line -> line.contains("failed client")).count(), err);
                assertTrue(err.contains("use the same -S on both sides; its connection is closed (1 failed client so"
                        + " far), serving the next"), err);
                assertTrue(err.contains("(2 failed clients so far)"), err);
            } finally {
                server.stop();
                t.join(Duration.ofSeconds(10));
            }
            assertEquals(0, rc.get(1, TimeUnit.SECONDS), se.toString(StandardCharsets.UTF_8));
        }
    }

    /** How a server that should still run ended, if it did. */
    private static String ended(CompletableFuture<Integer> rc) {
        if (!rc.isDone()) {
            return "";
        }
        try {
            return " (the server ended: " + rc.getNow(null) + ")";
        } catch (java.util.concurrent.CompletionException e) {
            java.io.StringWriter w = new java.io.StringWriter();
            e.getCause().printStackTrace(new java.io.PrintWriter(w));
            return " (the server ended: " + w + ")";
        }
    }

    @Test
    void theBufferTextIsRpings() {
        // ping 0 of a 64-byte buffer, as the READ Response in testdata/pcaps/iwarp-rping.pcap carries it
        byte[] captured = ("rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\0")
                .getBytes(StandardCharsets.US_ASCII);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(64);
            Rping.fill(buf, 0, 65);
            assertArrayEquals(captured, buf.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void usageErrors() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertEquals(2, RpingCommand.run(List.of("-c"), o, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("a client needs the server's address (-a)"));
        assertEquals(2, RpingCommand.run(List.of("-s", "-c"), o, e));
        assertEquals(2, RpingCommand.run(List.of("-s", "-S", "10"), o, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("outside 23..65535"), err.toString());
        assertEquals(2, RpingCommand.run(List.of("-c", "-a", "127.0.0.1", "-D", "nosuch"), o, e));
        if (io.jrdma.verbs.Rdma.devices().stream().anyMatch(d -> d.name().equals("shm0"))) {
            assertEquals(2, RpingCommand.run(List.of("-c", "-a", "127.0.0.1", "-D", "shm0"), o, e));
            assertTrue(err.toString(StandardCharsets.UTF_8).contains("rping runs over iWARP (iwarp_<interface>) and"
                    + " RoCE"), err.toString());
        }
    }
}

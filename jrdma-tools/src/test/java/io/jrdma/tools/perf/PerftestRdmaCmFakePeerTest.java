package io.jrdma.tools.perf;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
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
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jrdma with {@code -R} against a perftest peer written in the test, as ib_send_bw -R and
 * ib_read_bw -R run on Linux siw (perftest 4.5: perftest_communication.c's rdma_cm functions,
 * send_bw.c, read_bw.c; testdata/pcaps/iwarp-ib_*.pcap): a comm QP with one 56-byte receive,
 * every message one SEND, the zero-key syncs, the data QP's own connection on the same port
 * (the server listening for it only after its first sync, as perftest does), keys as
 * {@code struct pingpong_dest} with garbage in the padding, and ib_send_bw's credit WRITEs.
 */
class PerftestRdmaCmFakePeerTest {
    static final byte[] GID = HexFormat.of().parseHex("52540077011100000000000000000000"); // siw: MAC + zeros

    /** A perftest side's verbs over iwarp_lo: the comm QP and one data QP, each with its own CQs. */
    static final class CmEnd implements AutoCloseable {
        final DeviceContext ctx = Rdma.device("iwarp_lo").open(DeviceOptions.defaults()
                .withThreadingMode(ThreadingMode.DEDICATED));
        final ProtectionDomain pd = ctx.allocPd();
        final Arena arena = Arena.ofShared();
        final CompletionQueue commSendCq = ctx.createCq(4);
        final CompletionQueue commRecvCq = ctx.createCq(4);
        final QueuePair comm = pd.createQp(new QpInitAttr(QpType.RC, commSendCq, commRecvCq, 1, 1, 1, 1, 0, false));
        final MemorySegment commBuf = arena.allocate(112, 64);
        final MemoryRegion commMr = pd.register(commBuf, Access.LOCAL_WRITE);
        final CompletionQueue dataSendCq = ctx.createCq(256);
        final CompletionQueue dataRecvCq = ctx.createCq(256);
        final QueuePair data = pd.createQp(new QpInitAttr(QpType.RC, dataSendCq, dataRecvCq, 64, 64, 1, 1, 0, false));
        final MemorySegment buf = arena.allocate(1 << 16, 4096);
        final MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        final MemorySegment ctrl = arena.allocate(8, 64);
        final MemoryRegion creditMr = pd.register(ctrl, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        final WorkCompletion wc = new WorkCompletion();
        ConnectionManager.Connection commConn;
        ConnectionManager.Connection dataConn;

        CmEnd() {
            int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
            comm.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(access));
            data.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(access));
            postCommRecv(); // post_one_recv_wqe, before connecting
        }

        static ConnParam param(int rd) {
            return new ConnParam(null, rd, rd, 7, 7, Mtu.MTU_4096);
        }

        void postCommRecv() {
            assertEquals(0, comm.postRecv(new RecvWorkRequest().wrId(5).sge(0, commBuf.address(), 56, commMr.lkey())));
        }

        /** rdma_write_data: one signaled SEND, then its completion. */
        void send(byte[] m) {
            MemorySegment.copy(m, 0, commBuf, ValueLayout.JAVA_BYTE, 56, m.length);
            assertEquals(0, comm.postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, commBuf.address() + 56, m.length, commMr.lkey())));
            assertEquals(WcOpcode.SEND, await(commSendCq).opcode());
        }

        /** rdma_read_data: the next receive (which must have {@code n} bytes), then the receive again. */
        byte[] recv(int n) {
            await(commRecvCq);
            assertEquals(5, wc.wrId());
            assertEquals(n, wc.byteLen(), "message length");
            byte[] m = commBuf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
            postCommRecv();
            return m;
        }

        WorkCompletion await(CompletionQueue cq) {
            long end = System.nanoTime() + 10_000_000_000L;
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() - end > 0) {
                    throw new AssertionError("no completion within 10 s");
                }
                Thread.onSpinWait();
            }
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            return wc;
        }

        static ConnectionManager.ConnectRequest next(ConnectionManager.Listener l) {
            ConnectionManager.ConnectRequest r = l.poll(Duration.ofSeconds(20));
            assertNotNull(r, "no connection request");
            return r;
        }

        @Override
        public void close() {
            // destroy_ctx(data): disconnect; then the comm QP
            for (AutoCloseable c : new AutoCloseable[] {dataConn, commConn, data, comm, mr, creditMr, commMr,
                    dataSendCq, dataRecvCq, commSendCq, commRecvCq, pd}) {
                try {
                    if (c != null) {
                        c.close();
                    }
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }
            arena.close();
            ctx.close();
        }
    }

    static byte[] version() {
        return PerftestWire.version("6.06");
    }

    /**
     * {@return jrdma perf running {@code o} on another thread, printing into {@code out} and {@code err}}: its exit
     * status; a server reports the port it listens on to {@code listening}
     */
    private static CompletableFuture<Integer> start(PerftestOptions o, ByteArrayOutputStream out,
                                                    ByteArrayOutputStream err, IntConsumer listening) {
        return CompletableFuture.supplyAsync(() -> PerftestCommand.execute(o,
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                listening));
    }

    /**
     * ib_send_bw -R's server: posts rx_depth receives, reposts each, and writes its receive count
     * (little-endian) into the client's credit word with a 4-byte RDMA WRITE every rx_depth/3
     * receives, except that it holds the first credit back until rx_depth - 1 SENDs are in. The
     * jrdma client must stop there (a SEND more would find no receive) and go on once it sees
     * the credit; at every receive the client is within the credits written.
     */
    @Test
    @Timeout(60)
    void jrdmaClientAgainstAHandWrittenIbSendBwServer() throws Exception {
        int rx = 8;
        int iters = 40;
        int size = 64;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (CmEnd s = new CmEnd()) {
            ConnectionManager.Listener l = s.ctx.connectionManager().listen(new InetSocketAddress("127.0.0.1", 0));
            int port = l.address().getPort();
            PerftestOptions o = PerfCommand.parsePerftest("send_bw", "-R", "-d", "iwarp_lo", "-s", "64", "-n", "40",
                    "-r", "8", "-p", String.valueOf(port), "--timeout", "20", "127.0.0.1");
            CompletableFuture<Integer> client = start(o, out, err, listening -> { });
            ConnectionManager.ConnectRequest req = CmEnd.next(l);
            assertEquals(0, req.peerParam().responderResources(), "comm QP: IRD/ORD 0/0");
            assertEquals(0, req.peerParam().initiatorDepth());
            s.commConn = req.accept(s.comm, CmEnd.param(0), Duration.ofSeconds(10));
            l.close(); // rdma_server_connect destroys its listener after the first request
            assertArrayEquals(version(), s.recv(16));
            s.send(version());
            assertArrayEquals(new byte[] {0, 0, 0x10, 0}, s.recv(4));
            s.send(new byte[] {0, 0, 0x10, 0});
            assertArrayEquals(new byte[] {0, 0, 0, 64}, s.recv(4));
            s.send(new byte[] {0, 0, 0, 64});
            assertEquals(2, s.recv(2).length);
            s.send(new byte[] {'3', 0}); // siw: IBV_MTU_1024
            assertArrayEquals(new byte[56], s.recv(56), "the sync before the rdma_cm connection: zeroed keys");
            s.send(new byte[56]);
            // only now does perftest listen for the data QP (the client retries a refused connect)
            l = s.ctx.connectionManager().listen(new InetSocketAddress("127.0.0.1", port));
            req = CmEnd.next(l);
            assertEquals(0, req.peerParam().responderResources(), "send_bw's data QP: IRD/ORD 0/0");
            assertEquals(0, req.peerParam().initiatorDepth());
            s.dataConn = req.accept(s.data, CmEnd.param(0), Duration.ofSeconds(10));
            l.close();
            assertArrayEquals(new byte[56], s.recv(56), "the sync after the rdma_cm connection");
            s.send(new byte[56]);
            // ctx_alloc_credit: this side's keys name its credit word; the padding is stack garbage
            byte[] mine = PerftestWire.encodeDest(new PerftestWire.Dest(0, 1, s.data.qpn(), 0x123456,
                    s.creditMr.rkey(), s.ctrl.address() + 4, GID, 0), 0xe8550000);
            PerftestWire.Dest c = PerftestWire.decodeDest(s.recv(56)); // per QP
            s.send(mine);
            assertEquals(1, c.outReads());
            assertEquals(c, PerftestWire.decodeDest(s.recv(56)));
            s.send(mine);
            assertEquals(c, PerftestWire.decodeDest(s.recv(56))); // per QP, printed
            s.send(mine);
            for (int j = 0; j < rx; j++) {
                assertEquals(0, s.data.postRecv(new RecvWorkRequest().wrId(0).sge(0, s.buf.address(), size,
                        s.mr.lkey())));
            }
            assertEquals(c, PerftestWire.decodeDest(s.recv(56))); // the sync before the run
            s.send(mine);
            long written = 0;
            long posted = rx;
            int creditCnt = rx / 3;
            SendWorkRequest credit = new SendWorkRequest();
            for (long rcnt = 1; rcnt <= iters; rcnt++) {
                assertEquals(size, s.await(s.dataRecvCq).byteLen());
                assertTrue(rcnt <= written + rx - 1, "SEND " + rcnt + " came with only " + written + " credits for "
                        + rx + " receives");
                if (posted < iters) {
                    assertEquals(0, s.data.postRecv(new RecvWorkRequest().wrId(0).sge(0, s.buf.address(), size,
                            s.mr.lkey())));
                    posted++;
                }
                if (rcnt >= rx - 1 && (rcnt == rx - 1 || rcnt % rx % creditCnt == 0)) {
                    s.ctrl.set(ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN), 0, (int) rcnt);
                    assertEquals(0, s.data.postSend(credit.reset().wrId(0).opcode(WrOpcode.RDMA_WRITE)
                            .flags(SendFlags.SIGNALED).sge(0, s.ctrl.address(), 4, s.creditMr.lkey())
                            .remote(c.vaddr(), c.rkey())));
                    s.await(s.dataSendCq);
                    written = rcnt;
                }
            }
            assertEquals(c, PerftestWire.decodeDest(s.recv(56))); // ctx_close_connection: keys only
            s.send(mine);
            assertEquals(0, client.get(30, TimeUnit.SECONDS), out + "\n" + err);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains(" Number of qps   : 1\t\tTransport type : IW\n"), text);
        assertTrue(text.contains(" Mtu             : 1024[B]\n"), text);
        assertTrue(text.contains(" rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n"), text);
        assertTrue(text.lines().anyMatch(line -> line.matches(" remote address: LID 0000 QPN 0x[0-9a-f]{4,6} PSN"
                + " 0x123456")), text);
        assertTrue(text.contains("\n GID: 82:84:00:119:01:17:00:00:00:00:00:00:00:00:00:00\n"), text);
        assertTrue(text.lines().anyMatch(line -> line.startsWith(" 64         40 ")), text);
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }

    /**
     * The perftest side of a send_bw handshake up to the run, as ib_send_bw -R does it on a device that is not
     * iWARP (perftest without -d on a host whose first device is rxe0, while rdma_cm connects over siw0): no
     * credit word, so its keys name its buffer instead. As server: {@code l} listens, the first request is the
     * comm QP; as client: {@code at} is the server.
     */
    private static PerftestWire.Dest handshakeWithoutCredits(CmEnd e, ConnectionManager.Listener l,
                                                             InetSocketAddress at, byte[] mine) throws Exception {
        boolean server = l != null;
        InetSocketAddress me = server ? l.address() : null;
        if (server) {
            e.commConn = CmEnd.next(l).accept(e.comm, CmEnd.param(0), Duration.ofSeconds(10));
            l.close(); // rdma_server_connect destroys its listener after the first request
        } else {
            e.commConn = e.ctx.connectionManager().connect(e.comm, at, CmEnd.param(0), Duration.ofSeconds(10));
        }
        byte[][] params = {version(), PerftestWire.int32(4096), PerftestWire.int32(64), {'3', 0}, new byte[56]};
        for (byte[] m : params) {
            xchg(e, server, m);
        }
        if (server) { // only now does perftest listen for the data QP (the client retries a refused connect)
            ConnectionManager.Listener dl = e.ctx.connectionManager().listen(me);
            e.dataConn = CmEnd.next(dl).accept(e.data, CmEnd.param(0), Duration.ofSeconds(10));
            dl.close();
        } else {
            e.dataConn = e.ctx.connectionManager().connect(e.data, at, CmEnd.param(0), Duration.ofSeconds(10));
        }
        xchg(e, server, new byte[56]);
        PerftestWire.Dest peer = null;
        for (int i = 0; i < 3; i++) { // keys each, keys, keys each (printed)
            peer = PerftestWire.decodeDest(xchg(e, server, mine));
        }
        return peer;
    }

    /** {@code ctx_xchg_data} on the comm QP: the client sends first. */
    private static byte[] xchg(CmEnd e, boolean server, byte[] m) {
        if (server) {
            byte[] theirs = e.recv(m.length);
            e.send(m);
            return theirs;
        }
        e.send(m);
        return e.recv(m.length);
    }

    /**
     * A jrdma client against an ib_send_bw -R server that writes no credits (perftest on a non-iWARP device, as in
     * the guests' run of 2026-11-26 10:08-10:25, whose ib_send_bw had no -d and took rxe0's transport): the client
     * sends rx_depth - 1 SENDs, waits for a credit that never comes, and says so, naming -d, when its time is up.
     */
    @Test
    @Timeout(60)
    void aJrdmaClientSaysWhyAServerWithoutCreditsStallsIt() throws Exception {
        int rx = 8;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (CmEnd s = new CmEnd()) {
            ConnectionManager.Listener l = s.ctx.connectionManager().listen(new InetSocketAddress("127.0.0.1", 0));
            int port = l.address().getPort();
            PerftestOptions o = PerfCommand.parsePerftest("send_bw", "-R", "-d", "iwarp_lo", "-s", "64", "-n", "40",
                    "-r", String.valueOf(rx), "-p", String.valueOf(port), "--timeout", "2", "127.0.0.1");
            CompletableFuture<Integer> client = start(o, out, err, listening -> { });
            byte[] mine = PerftestWire.encodeDest(new PerftestWire.Dest(0, 1, s.data.qpn(), 0x123456, s.mr.rkey(),
                    s.buf.address() + 4096, GID, 0));
            handshakeWithoutCredits(s, l, null, mine);
            for (int j = 0; j < 40; j++) { // every receive posted: a client that sent all 40 would pass
                assertEquals(0, s.data.postRecv(new RecvWorkRequest().wrId(0).sge(0, s.buf.address(), 64,
                        s.mr.lkey())));
            }
            xchg(s, true, mine); // the sync before the run
            for (int rcnt = 1; rcnt < rx; rcnt++) {
                assertEquals(64, s.await(s.dataRecvCq).byteLen());
            }
            assertTrue(client.get(30, TimeUnit.SECONDS) != 0, out + "\n" + err);
            // the client closed: the receives left are flushed, none may have taken an eighth SEND
            long end = System.nanoTime() + 5_000_000_000L;
            int flushed = 0;
            while (flushed < 40 - (rx - 1) && System.nanoTime() - end < 0) {
                if (s.dataRecvCq.poll(s.wc) == 1) {
                    assertEquals(WcStatus.WR_FLUSH_ERR, s.wc.status(), "a SEND beyond rx_depth - 1 without credits");
                    flushed++;
                }
            }
        }
        String e = err.toString(StandardCharsets.UTF_8);
        assertTrue(e.contains("the receiver's credits held QP 0 back after 7 SENDs (its credit word reads 0)"), e);
        assertTrue(e.contains(Perftest.NO_CREDITS_FROM_PEER), e);
    }

    /**
     * A jrdma server against an ib_send_bw -R client that has no credit word (perftest on a non-iWARP device): its
     * keys name its receive buffer, registered without remote write access (a SEND test's buffer), so the jrdma
     * server's first credit WRITE (after rx_depth/3 receives) is refused with a TERMINATE, its QP fails, and it
     * says why, naming -d.
     */
    @Test
    @Timeout(60)
    void aJrdmaServerSaysWhyAClientWithoutACreditWordFailsIt() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        PerftestOptions o = PerfCommand.parsePerftest("send_bw", "-R", "-d", "iwarp_lo", "-s", "64", "-n", "40",
                "-r", "8", "-p", "0", "--timeout", "10");
        CompletableFuture<Integer> server = start(o, out, err, port::complete);
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", port.get(20, TimeUnit.SECONDS));
        try (CmEnd c = new CmEnd()) {
            MemorySegment rxBuf = c.arena.allocate(4096, 4096);
            // perftest's buffer in a SEND test: no remote access
            try (MemoryRegion sendMr = c.pd.register(rxBuf, Access.LOCAL_WRITE)) {
                byte[] mine = PerftestWire.encodeDest(new PerftestWire.Dest(0, 1, c.data.qpn(), 0xabcdef, sendMr.rkey(),
                        rxBuf.address(), GID, 0));
                handshakeWithoutCredits(c, null, at, mine);
                xchg(c, false, mine); // the sync before the run
                SendWorkRequest wr = new SendWorkRequest();
                for (int i = 0; i < 2; i++) { // rx_depth / 3: the server writes its first credit after these
                    assertEquals(0, c.data.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                            .sge(0, c.buf.address(), 64, c.mr.lkey())));
                    c.await(c.dataSendCq);
                }
                assertTrue(server.get(30, TimeUnit.SECONDS) != 0, out + "\n" + err);
            }
        }
        String e = err.toString(StandardCharsets.UTF_8);
        assertTrue(e.contains(Perftest.CREDIT_REFUSED_BY_PEER), e);
    }

    /**
     * ib_read_bw -R's client against a jrdma server: the data QP connects right after the first
     * sync without a retry (so the server must listen already), asks for IRD/ORD 128/128, READs
     * 16 times from the advertised buffer with all 16 outstanding, and sends its report.
     */
    @Test
    @Timeout(60)
    void handWrittenIbReadBwClientAgainstAJrdmaServer() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        PerftestOptions o = PerfCommand.parsePerftest("read_bw", "-R", "-d", "iwarp_lo", "-s", "4096", "-n", "16",
                "-p", "0", "--timeout", "20");
        CompletableFuture<Integer> server = start(o, out, err, port::complete);
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", port.get(20, TimeUnit.SECONDS));
        int qpn;
        try (CmEnd c = new CmEnd()) {
            qpn = c.data.qpn();
            c.commConn = c.ctx.connectionManager().connect(c.comm, at, CmEnd.param(0), Duration.ofSeconds(10));
            c.send(version());
            assertArrayEquals(version(), c.recv(16));
            c.send(PerftestWire.int32(4096));
            assertEquals(4096, PerftestWire.int32(c.recv(4)));
            c.send(PerftestWire.int32(64));
            assertEquals(64, PerftestWire.int32(c.recv(4)));
            c.send(new byte[] {'3', 0});
            assertArrayEquals(new byte[] {'5', 0}, c.recv(2), "the server's own MTU code");
            c.send(new byte[56]);
            assertArrayEquals(new byte[56], c.recv(56));
            c.dataConn = c.ctx.connectionManager().connect(c.data, at, CmEnd.param(128), Duration.ofSeconds(10));
            assertEquals(128, c.dataConn.peerParam().responderResources(), "the server's IRD");
            assertEquals(128, c.dataConn.peerParam().initiatorDepth(), "the server's ORD");
            c.send(new byte[56]);
            assertArrayEquals(new byte[56], c.recv(56));
            byte[] mine = PerftestWire.encodeDest(new PerftestWire.Dest(0, 128, qpn, 0xabcdef, c.mr.rkey(),
                    c.buf.address() + 4096, GID, 0), 0xff7f0000);
            c.send(mine); // per QP
            PerftestWire.Dest s = PerftestWire.decodeDest(c.recv(56));
            assertEquals(128, s.outReads());
            assertEquals(0, s.lid());
            c.send(mine); // per QP, printed
            assertEquals(s, PerftestWire.decodeDest(c.recv(56)));
            c.send(mine);
            assertEquals(s, PerftestWire.decodeDest(c.recv(56)));
            SendWorkRequest wr = new SendWorkRequest();
            for (int i = 0; i < 16; i++) {
                assertEquals(0, c.data.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                        .sge(0, c.buf.address(), 4096, c.mr.lkey()).remote(s.vaddr(), s.rkey())));
            }
            for (int i = 0; i < 16; i++) {
                assertEquals(4096, c.await(c.dataSendCq).byteLen());
            }
            c.send(mine);
            assertEquals(s, PerftestWire.decodeDest(c.recv(56)));
            for (byte[] v : new byte[][] {PerftestWire.int64(4096), PerftestWire.int64(16), PerftestWire.float64(1.5),
                    PerftestWire.float64(1.25), PerftestWire.float64(0.0003)}) {
                c.send(v);
                assertEquals(8, c.recv(8).length);
            }
            c.send(mine); // ctx_close_connection: keys only
            assertEquals(s, PerftestWire.decodeDest(c.recv(56)));
        }
        assertEquals(0, server.get(30, TimeUnit.SECONDS), out + "\n" + err);
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains(" Data ex. method : rdma_cm\n" + PerftestReport.RESULT_LINE
                + "\n Waiting for client rdma_cm QP to connect\n Please run the same command with the IB/RoCE interface"
                + " IP\n" + PerftestReport.RESULT_LINE + "\n"), text);
        assertTrue(text.contains(" Outstand reads  : 128\n"), text);
        assertTrue(text.contains(String.format(" remote address: LID 0000 QPN %#06x PSN 0xabcdef\n", qpn)), text);
        assertTrue(text.contains("\n" + PerftestReport.bwRow(4096, 16, 1.5, 1.25, 0.0003, false) + "\n"), text);
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }
}

package io.jrdma.rdmacore;

import io.jrdma.rdmacore.tck.RdmaCoreFixture;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * rdma_cm through librdmacm on a real device (-Djrdma.tck.rdmacore.device=rxe0 or siw0; skipped without one):
 * two contexts of the device meet on its first IPv4 address, the client's QP connects to a listener of the
 * other context with private data both ways, a SEND crosses, and a disconnect reaches the peer as DISCONNECTED
 * (its QP in ERROR) then TIMEWAIT_EXIT; a rejection carries its private data; nobody listening is ECONNREFUSED;
 * an address nothing answers is an error that names it, within the timeout.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RdmaCmConnectionTest {
    private static final Duration WAIT = Duration.ofSeconds(15);
    private RdmaCoreDevice dev;
    private RdmaCoreContext server, client;
    private InetAddress address;
    private final Arena arena = Arena.ofShared();
    private final java.util.List<AutoCloseable> toClose = new java.util.ArrayList<>();

    @BeforeEach
    void open() {
        dev = RdmaCoreFixture.requireDevice();
        server = dev.open();
        client = dev.open();
        address = RdmaCoreFixture.ipv4Of(dev);
        org.junit.jupiter.api.Assumptions.assumeTrue(address != null, "skipped: no IPv4 address of " + dev.name());
    }

    @AfterEach
    void close() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        arena.close();
    }

    private <T extends AutoCloseable> T track(T t) {
        toClose.add(t);
        return t;
    }

    /** A PD, a CQ, a 4 KiB region and an RC QP of {@code ctx}. */
    private record Side(ProtectionDomain pd, CompletionQueue cq, MemoryRegion mr, QueuePair qp) {
    }

    private Side side(RdmaCoreContext ctx) {
        ProtectionDomain pd = track(ctx.allocPd());
        CompletionQueue cq = track(ctx.createCq(16));
        MemoryRegion mr = track(pd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE
                | Access.REMOTE_READ));
        QueuePair qp = track(pd.createQp(QpInitAttr.rc(cq)));
        return new Side(pd, cq, mr, qp);
    }

    private static byte[] data(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed + 3 * i);
        }
        return b;
    }

    private static WorkCompletion await(CompletionQueue cq) {
        WorkCompletion wc = new WorkCompletion();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "no completion within " + WAIT);
            Thread.onSpinWait();
        }
        return wc;
    }

    @Test
    void connectAcceptSendThenTheDisconnectReachesThePeer() throws Exception {
        Side s = side(server);
        Side c = side(client);
        boolean iwarp = dev.transport() == Transport.IWARP;
        byte[] fromClient = data(40, 1);
        byte[] fromServer = data(100, 7);
        ConnectionManager.Listener l = track(server.rdmaCm().listen(new InetSocketAddress(address, 0)));
        assertTrue(l.address().getPort() > 0, "the port the listener got: " + l.address());
        CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() -> {
            ConnectionManager.ConnectRequest req = l.poll(WAIT);
            assertNotNull(req, "a connection request");
            assertArrayEquals(fromClient, Arrays.copyOf(req.peerParam().privateData(), fromClient.length));
            ConnectionManager.Connection conn = req.accept(s.qp, ConnParam.defaults().withPrivateData(fromServer),
                    WAIT);
            assertEquals(0, s.qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, s.mr, 0, 4096)), "post the receive");
            return conn;
        });
        ConnectionManager.Connection cc = client.rdmaCm().connect(c.qp, l.address(),
                ConnParam.defaults().withPrivateData(fromClient), WAIT);
        ConnectionManager.Connection sc = accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertEquals(QpState.RTS, c.qp.state(), "client QP after connect");
        assertEquals(QpState.RTS, s.qp.state(), "server QP after accept");
        byte[] got = cc.peerParam().privateData();
        assertArrayEquals(fromServer, Arrays.copyOf(got, fromServer.length), "the server's private data");
        if (iwarp) {
            assertEquals(fromServer.length, got.length, "iWARP carries the exact length (the jrdma trailer stripped)");
        }
        assertEquals(s.qp.qpn(), cc.peerQpn(), "the client's peer QPN");
        assertEquals(c.qp.qpn(), sc.peerQpn(), "the server's peer QPN");

        c.mr.segment().asSlice(0, 64).fill((byte) 0x5A);
        assertEquals(0, c.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, c.mr, 0, 64)));
        WorkCompletion sent = await(c.cq);
        assertEquals(WcStatus.SUCCESS, sent.status(), sent.toString());
        WorkCompletion recv = await(s.cq);
        assertEquals(WcStatus.SUCCESS, recv.status(), recv.toString());
        assertEquals(WcOpcode.RECV, recv.opcode());
        assertEquals(64, recv.byteLen());
        assertEquals((byte) 0x5A, s.mr.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63));

        long t0 = System.nanoTime();
        cc.close();
        assertEquals(ConnectionManager.Event.DISCONNECTED, sc.pollEvent(WAIT), "the server sees the disconnect");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 5_000, "DISCONNECTED after " + ms + " ms");
        assertEquals(QpState.ERROR, s.qp.state(), "the server's QP after the peer disconnected");
        assertEquals(ConnectionManager.Event.TIMEWAIT_EXIT, sc.pollEvent(Duration.ofSeconds(30)));
        assertNull(sc.pollEvent(Duration.ZERO), "nothing after TIMEWAIT_EXIT");
        assertEquals(ConnectionManager.Event.DISCONNECTED, cc.pollEvent(WAIT), "the client's own disconnect");
        assertEquals(QpState.ERROR, c.qp.state());
        sc.close();
    }

    /**
     * The watcher: a server that only polls its CQ (no pollEvent, no call on the manager) learns of the client's
     * disconnect by its posted receive completing WR_FLUSH_ERR, as with librdmacm; DISCONNECTED and TIMEWAIT_EXIT
     * are filed meanwhile; closing the contexts ends the watcher threads and closes every rdma_cm descriptor.
     */
    @Test
    void aPeersDisconnectFlushesTheQpOfAServerThatOnlyPollsItsCq() throws Exception {
        long cmFds0 = rdmaCmFds();
        Side s = side(server);
        Side c = side(client);
        ConnectionManager.Listener l = track(server.rdmaCm().listen(new InetSocketAddress(address, 0)));
        CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() -> {
            ConnectionManager.ConnectRequest req = l.poll(WAIT);
            assertNotNull(req, "a connection request");
            ConnectionManager.Connection conn = req.accept(s.qp, ConnParam.defaults(), WAIT);
            assertEquals(0, s.qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, s.mr, 0, 4096)), "post the receive"
                    + " (after accept: a QP in RESET takes none)");
            return conn;
        });
        ConnectionManager.Connection cc = client.rdmaCm().connect(c.qp, l.address(), ConnParam.defaults(), WAIT);
        ConnectionManager.Connection sc = accepted.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        String watcher = "jrdma-rdmacm-" + dev.name();
        assertTrue(threads(watcher) >= 1, "a watcher thread runs once a connection is established");

        long t0 = System.nanoTime();
        cc.close();
        WorkCompletion flushed = await(s.cq); // the server's thread waits on its CQ only
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status(), flushed.toString());
        assertEquals(9, flushed.wrId());
        assertTrue(ms < 5_000, "the receive flushed " + ms + " ms after the client's disconnect");
        assertEquals(QpState.ERROR, s.qp.state());
        assertEquals(ConnectionManager.Event.DISCONNECTED, sc.pollEvent(WAIT), "filed by the watcher");
        assertEquals(ConnectionManager.Event.TIMEWAIT_EXIT, sc.pollEvent(Duration.ofSeconds(30)));
        assertEquals(ConnectionManager.Event.DISCONNECTED, cc.pollEvent(WAIT), "the client's own disconnect");
        assertEquals(ConnectionManager.Event.TIMEWAIT_EXIT, cc.pollEvent(Duration.ofSeconds(30)));
        assertNull(cc.pollEvent(Duration.ZERO), "nothing after TIMEWAIT_EXIT");
        sc.close();
        l.close();

        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        toClose.clear();
        client.close();
        server.close();
        assertEquals(0, threads(watcher), "watcher threads after both contexts closed");
        assertEquals(cmFds0, rdmaCmFds(), "descriptors of /dev/infiniband/rdma_cm before and after");
    }

    private static long threads(String name) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name) && t.isAlive())
                .count();
    }

    /** {@return this process's open descriptors of /dev/infiniband/rdma_cm (one per rdma_cm event channel)} */
    private static long rdmaCmFds() throws java.io.IOException {
        try (var s = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return s.filter(p -> {
                try {
                    return java.nio.file.Files.readSymbolicLink(p).toString().equals("/dev/infiniband/rdma_cm");
                } catch (java.io.IOException e) {
                    return false;
                }
            }).count();
        }
    }

    @Test
    void aRejectionCarriesItsPrivateDataAndLeavesTheQpToConnectAgain() throws Exception {
        Side c = side(client);
        byte[] why = data(30, 5);
        ConnectionManager.Listener l = track(server.rdmaCm().listen(new InetSocketAddress(address, 0)));
        CompletableFuture<Void> rejected = CompletableFuture.runAsync(() -> {
            ConnectionManager.ConnectRequest req = l.poll(WAIT);
            assertNotNull(req);
            req.reject(why);
            assertThrows(RdmaException.class, () -> req.reject(new byte[0]), "a second answer");
        });
        var e = assertThrows(ConnectionRejectedException.class,
                () -> client.rdmaCm().connect(c.qp, l.address(), ConnParam.defaults(), WAIT));
        rejected.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertEquals(RdmaException.Errno.ECONNREFUSED, e.errno());
        assertArrayEquals(why, Arrays.copyOf(e.privateData(), why.length), e.toString());
        QpState st = c.qp.state();
        if (client.device().transport() == io.jrdma.verbs.Transport.IWARP) {
            // Linux siw moves the QP of a rejected connect to ERROR (siw_qp_llp_close), which it never leaves
            assertEquals(QpState.ERROR, st, "after a rejection on iWARP (siw)");
        } else {
            assertTrue(st == QpState.RESET || st == QpState.INIT, "after a rejection: " + st);
        }
    }

    @Test
    void nobodyListeningIsEconnrefused() throws Exception {
        Side c = side(client);
        int port;
        try (ConnectionManager.Listener l = server.rdmaCm().listen(new InetSocketAddress(address, 0))) {
            port = l.address().getPort();
        }
        var e = assertThrows(RdmaException.class, () -> client.rdmaCm().connect(c.qp,
                new InetSocketAddress(address, port), ConnParam.defaults(), WAIT));
        assertEquals(RdmaException.Errno.ECONNREFUSED, e.errno(), e.toString());
    }

    @Test
    void anAddressNothingAnswersIsAnErrorThatNamesIt() throws Exception {
        Side c = side(client);
        InetAddress nowhere = InetAddress.getByName("192.0.2.1"); // TEST-NET-1: nobody there
        long t0 = System.nanoTime();
        var e = assertThrows(RdmaException.class, () -> client.rdmaCm().connect(c.qp,
                new InetSocketAddress(nowhere, 7174), ConnParam.defaults(), Duration.ofSeconds(5)));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(e.errno() == RdmaException.Errno.ENETUNREACH || e.errno() == RdmaException.Errno.EHOSTUNREACH
                || e.errno() == RdmaException.Errno.ETIMEDOUT, e.toString());
        assertTrue(e.getMessage().contains("192.0.2.1"), e.getMessage());
        assertTrue(ms < 20_000, "gave up after " + ms + " ms");
    }

    @Test
    void privateDataBeyondWhatTheCmCarriesIsEinvalNamingTheLimit() {
        Side c = side(client);
        int limit = dev.transport() == Transport.IWARP ? 251 : 56;
        var e = assertThrows(RdmaException.class, () -> client.rdmaCm().connect(c.qp,
                new InetSocketAddress(address, 7174), ConnParam.defaults().withPrivateData(new byte[limit + 1]), WAIT));
        assertEquals(RdmaException.Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().contains("at most " + limit), e.getMessage());
    }
}

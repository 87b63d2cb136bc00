package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The connection manager: listen, connect, accept and reject, private data both ways, and the
 * state both QPs are left in.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class ConnectionTck extends TckSupport {
    /** For subclasses. */
    protected ConnectionTck() {
    }

    private static byte[] data(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed + i * 7);
        }
        return b;
    }

    @ParameterizedTest(name = "{0} bytes of private data")
    @ValueSource(ints = {0, 1, 200, ConnParam.MAX_PRIVATE_DATA})
    void privateDataGoesBothWaysAndBothQpsEndInRts(int asked) {
        int size = asked;
        if (asked == ConnParam.MAX_PRIVATE_DATA && fx.deviation(ProviderFixture.Deviation.LESS_PRIVATE_DATA).isPresent()) {
            size = fx.maxPrivateData(); // declared: the most this provider's connection manager carries
            byte[] tooMuch = data(size + 1, 1);
            CompletionQueue cq = client.newCq(16);
            QueuePair qp = client.newQp(QpInitAttr.rc(cq));
            RdmaException e = assertThrows(RdmaException.class, () -> client.ctx.connectionManager().connect(qp,
                    new InetSocketAddress(fx.address(), 9), ConnParam.defaults().withPrivateData(tooMuch), WAIT),
                    "a connect with one byte more than the declared limit");
            assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.toString());
        }
        byte[] fromClient = data(size, 1);
        byte[] fromServer = data(size, 100);
        Link l = link().clientParam(ConnParam.defaults().withPrivateData(fromClient))
                .serverParam(ConnParam.defaults().withPrivateData(fromServer)).connect();

        assertArrayEquals(fromClient, l.requestParam.privateData(), "private data in the connection request");
        assertArrayEquals(fromClient, l.sconn.peerParam().privateData(), "private data the server's connection saw");
        assertArrayEquals(fromServer, l.cconn.peerParam().privateData(), "private data the client's connection saw");

        assertEquals(QpState.RTS, l.cqp.state(), "client QP after connect");
        assertEquals(QpState.RTS, l.sqp.state(), "server QP after accept");
        assertSame(l.cqp, l.cconn.qp(), "the client connection's QP");
        assertSame(l.sqp, l.sconn.qp(), "the server connection's QP");
        if (size <= fx.maxPrivateDataWithPeerQpn()) {
            assertEquals(l.sqp.qpn(), l.cconn.peerQpn(), "client connection's peer QPN");
            assertEquals(l.cqp.qpn(), l.sconn.peerQpn(), "server connection's peer QPN");
            assertEquals(l.sqp.qpn(), l.cqp.query().destQpn(), "client QP's destination QPN");
            assertEquals(l.cqp.qpn(), l.sqp.query().destQpn(), "server QP's destination QPN");
        }
        assertEquals(QpState.RTS, l.cqp.query().state(), "client QP state as queried");
    }

    @Test
    void rejectionIsEconnrefusedWithThePrivateData() {
        byte[] why = data(40, 9);
        CompletionQueue cq = client.newCq(16);
        QueuePair qp = client.newQp(QpInitAttr.rc(cq));
        Accepting acc = startServer(req -> {
            req.reject(why);
            return null;
        });
        RdmaException e = assertThrows(RdmaException.class, () -> client.ctx.connectionManager()
                .connect(qp, acc.address(), ConnParam.defaults().withPrivateData(data(5, 3)), WAIT));
        assertEquals(RdmaException.Errno.ECONNREFUSED, e.errno(), "errno of a rejected connect: " + e);
        assertNull(acc.result(), "the server side");
        Optional<byte[]> seen = fx.rejectionPrivateData(e);
        seen.ifPresent(b -> assertArrayEquals(why, b, "private data of the rejection"));
        assertNotEquals(QpState.RTS, qp.state(), "a rejected connect must not leave the QP in RTS");
    }

    @Test
    void aQpRejectedOnceCanConnectAgain() {
        CompletionQueue cq = client.newCq(16);
        QueuePair qp = client.newQp(QpInitAttr.rc(cq));
        Accepting rejecting = startServer(req -> {
            req.reject(new byte[0]);
            return null;
        });
        RdmaException e = assertThrows(RdmaException.class,
                () -> client.ctx.connectionManager().connect(qp, rejecting.address(), ConnParam.defaults(), WAIT));
        assertEquals(RdmaException.Errno.ECONNREFUSED, e.errno(), e.toString());
        QueuePair again = qp;
        java.util.Optional<String> inError = fx.deviation(ProviderFixture.Deviation.A_REJECTED_CONNECT_LEAVES_THE_QP_IN_ERROR);
        if (inError.isPresent()) {
            assertEquals(QpState.ERROR, qp.state(), "after a rejection (declared: " + inError.get() + ")");
            RdmaException twice = assertThrows(RdmaException.class, () -> client.ctx.connectionManager()
                    .connect(qp, rejecting.address(), ConnParam.defaults(), WAIT), "a second connect of the QP in ERROR");
            assertEquals(RdmaException.Errno.EINVAL, twice.errno(), twice.toString());
            again = client.newQp(QpInitAttr.rc(cq)); // the QP that connects instead
        } else {
            assertTrue(qp.state() == QpState.RESET || qp.state() == QpState.INIT,
                    "after a rejection the QP is still RESET or INIT, not " + qp.state());
        }

        CompletionQueue scq = server.newCq(16);
        QueuePair sqp = server.newQp(QpInitAttr.rc(scq));
        Accepting accepting = startServer(req -> req.accept(sqp, ConnParam.defaults(), WAIT));
        QueuePair connecting = again;
        ConnectionManager.Connection c = track(client, "connection",
                client.ctx.connectionManager().connect(connecting, accepting.address(), ConnParam.defaults(), WAIT));
        track(server, "connection", accepting.result());
        assertEquals(QpState.RTS, connecting.state());
        assertEquals(sqp.qpn(), c.peerQpn());
    }

    @Test
    void connectingWhereNobodyListensIsEconnrefused() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(fx.address(), 0));
            port = s.getLocalPort();
        }
        CompletionQueue cq = client.newCq(16);
        QueuePair qp = client.newQp(QpInitAttr.rc(cq));
        RdmaException e = assertThrows(RdmaException.class, () -> client.ctx.connectionManager()
                .connect(qp, new InetSocketAddress(fx.address(), port), ConnParam.defaults(), WAIT));
        assertEquals(RdmaException.Errno.ECONNREFUSED, e.errno(), "connect to a closed port: " + e);
        assertNotEquals(QpState.RTS, qp.state());
    }

    @Test
    void listenerPollTimesOutWithNull() {
        ConnectionManager.Listener l = track(server, "listener",
                server.ctx.connectionManager().listen(new InetSocketAddress(fx.address(), 0)));
        assertNotNull(l.address(), "listener address");
        assertTrue(l.address().getPort() > 0, "a listener on port 0 reports the port it got: " + l.address());
        long start = System.nanoTime();
        assertNull(l.poll(Duration.ofMillis(50)), "poll with nobody connecting");
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms < 5_000, "poll(50 ms) took " + ms + " ms");
    }

    @Test
    void theSmallerMtuOfBothSidesIsUsed() {
        Link l = link().clientParam(ConnParam.defaults().withMtu(Mtu.MTU_1024)).connect();
        assertEquals(Mtu.MTU_1024, l.cqp.query().pathMtu(), "client path MTU");
        assertEquals(Mtu.MTU_1024, l.sqp.query().pathMtu(), "server path MTU");
    }

    @Test
    void retryCountsOfTheConnParamReachTheQp() {
        Link l = link().clientParam(ConnParam.defaults().withRetry(3, 5)).connect();
        QpAttr a = l.cqp.query();
        java.util.Optional<String> none = fx.deviation(ProviderFixture.Deviation.NO_RETRY_COUNTS);
        if (none.isPresent()) {
            assertEquals(QpState.RTS, a.state(), "connected with retry counts 3 and 5: " + a);
            assertEquals(0, a.retryCnt(), "retry count (declared: " + none.get() + "): " + a);
            assertEquals(0, a.rnrRetry(), "RNR retry count (declared: " + none.get() + "): " + a);
            return;
        }
        assertEquals(3, a.retryCnt(), "retry count: " + a);
        assertEquals(5, a.rnrRetry(), "RNR retry count: " + a);
    }

    @Test
    void anInitQpKeepsTheReceivesPostedBeforeAccept() {
        RecvWorkRequest rwr = new RecvWorkRequest();
        Link l = link().beforeAccept(qp -> {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
            assertEquals(QpState.INIT, qp.state());
            post(qp, rwr.reset().wrId(77).sge(0, server.mr, 0, 4096));
        }).connect();
        fill(client.buf, 0, 300, 5);
        post(l.cqp, new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 300));
        WorkCompletion sent = awaitCompletion(l.ccq, "the SEND");
        assertCompletion(sent, WcStatus.SUCCESS, WcOpcode.SEND, 1, l.cqp.qpn(), "SEND");
        WorkCompletion got = awaitCompletion(l.scq, "the receive posted in INIT");
        assertCompletion(got, WcStatus.SUCCESS, WcOpcode.RECV, 77, l.sqp.qpn(), "receive");
        assertEquals(300, got.byteLen());
        assertPattern(server.buf, 0, 300, 5, "received data");
    }

    @Test
    void twoConnectionsBetweenTheSameContextsAreIndependent() {
        Link a = connect();
        Link b = connect();
        assertNotEquals(a.cqp.qpn(), b.cqp.qpn());
        assertEquals(a.sqp.qpn(), a.cconn.peerQpn());
        assertEquals(b.sqp.qpn(), b.cconn.peerQpn());
        byte[] none = new byte[0];
        assertTrue(Arrays.equals(none, a.cconn.peerParam().privateData()), "no private data was sent");
        for (Link l : new Link[] {a, b}) {
            putLong(server.buf, 64, 0);
            putLong(client.buf, 0, l.cqp.qpn());
            post(l.cqp, new SendWorkRequest().wrId(5).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, client.mr, 0, 8).remote(server.addr(64), server.mr.rkey()));
            assertCompletion(awaitCompletion(l.ccq, "WRITE"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 5, l.cqp.qpn(),
                    "WRITE on link 0x" + Integer.toHexString(l.cqp.qpn()));
            awaitPlaced(() -> getLong(server.buf, 64) == l.cqp.qpn(), "the WRITE to be placed");
            assertEquals(l.cqp.qpn(), getLong(server.buf, 64));
        }
    }

    /**
     * rdma_cm's event stream on an established connection: when the client disconnects, the server's
     * connection reports DISCONNECTED within a second with its QP in ERROR, then TIMEWAIT_EXIT, and nothing more;
     * the client's own connection reports the same two after its disconnect.
     */
    @Test
    void aPeersDisconnectIsAnEventWithinASecond() {
        Link l = connect();
        assertNull(l.sconn.pollEvent(java.time.Duration.ZERO), "no event while connected");
        assertNull(l.cconn.pollEvent(java.time.Duration.ofMillis(5)), "no event while connected");
        long t0 = System.nanoTime();
        l.cconn.close();
        assertEquals(io.jrdma.verbs.ConnectionManager.Event.DISCONNECTED, l.sconn.pollEvent(WAIT), "server's event");
        long took = System.nanoTime() - t0;
        assertTrue(took < 1_000_000_000L, "the server learned of the disconnect in " + took / 1_000_000 + " ms");
        assertEquals(QpState.ERROR, l.sqp.state(), "server QP after the peer disconnected");
        assertEquals(io.jrdma.verbs.ConnectionManager.Event.TIMEWAIT_EXIT, l.sconn.pollEvent(WAIT));
        assertNull(l.sconn.pollEvent(java.time.Duration.ZERO), "nothing after TIMEWAIT_EXIT");
        // the client's own: its engine and the server's run meanwhile (an INVOKER context answers only so)
        java.util.List<io.jrdma.verbs.ConnectionManager.Event> mine = new java.util.ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (mine.size() < 2 && System.nanoTime() - deadline < 0) {
            server.ctx.progress();
            io.jrdma.verbs.ConnectionManager.Event e = l.cconn.pollEvent(java.time.Duration.ofMillis(1));
            if (e != null) {
                mine.add(e);
            }
        }
        assertEquals(java.util.List.of(io.jrdma.verbs.ConnectionManager.Event.DISCONNECTED,
                io.jrdma.verbs.ConnectionManager.Event.TIMEWAIT_EXIT), mine, "client's events");
        assertEquals(QpState.ERROR, l.cqp.state(), "client QP after its disconnect");
        l.sconn.close(); // idempotent after the peer's disconnect
    }
}

package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.wire.iwarp.Mpa;
import io.jrdma.wire.iwarp.MpaEnhanced;
import io.jrdma.wire.iwarp.MpaRequestReply;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a peer that is not jrdma (Linux siw under rdma_cm) sees of a jrdma client's MPA Request, and
 * what jrdma makes of its Reply: the application's private data comes first, the jrdma trailer
 * (ending in "JRD1") after it, and without a trailer in the Reply the extensions stay off.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IwarpPrivateDataTest {
    private Context ctx;
    private ProtectionDomain pd;
    private CompletionQueue cq;
    private IwarpQp qp;
    private ServerSocketChannel raw;

    @BeforeEach
    void open() throws IOException {
        InetAddress lo = InetAddress.getLoopbackAddress();
        ctx = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
        pd = ctx.allocPd();
        cq = ctx.createCq(16);
        qp = (IwarpQp) pd.createQp(QpInitAttr.rc(cq));
        raw = ServerSocketChannel.open().bind(new InetSocketAddress(lo, 0));
    }

    @AfterEach
    void close() throws IOException {
        raw.close();
        qp.close();
        cq.close();
        pd.close();
        ctx.close();
    }

    /** Plays a siw server: reads the Request, answers with a plain enhanced Reply; @return the Request */
    private MpaRequestReply serveOnce(byte[] replyData) throws Exception {
        try (SocketChannel ch = raw.accept()) {
            MpaRequestReply req = RawMpa.read(ch, false);
            RawMpa.write(ch, MpaRequestReply.enhanced(true, false, false, 1, 1, false, false, false, false,
                    replyData));
            // hold the connection until the client has taken the Reply: the test ends it
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one);
            return req;
        }
    }

    private MpaRequestReply connectTo(byte[] app, byte[] replyData, ConnParam[] peer) throws Exception {
        CompletableFuture<MpaRequestReply> server = CompletableFuture.supplyAsync(() -> {
            try {
                return serveOnce(replyData);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        ConnectionManager.Connection c = ctx.connectionManager().connect(qp, (InetSocketAddress) raw.getLocalAddress(),
                ConnParam.defaults().withPrivateData(app), Duration.ofSeconds(10));
        assertEquals(QpState.RTS, qp.state());
        peer[0] = c.peerParam();
        assertFalse((qp.refusedOps == 0), "no trailer in the Reply: a plain iWARP peer, no extensions");
        c.close();
        return server.get(10, TimeUnit.SECONDS);
    }

    @Test
    void theApplicationsDataComesFirstAndTheTrailerLast() throws Exception {
        byte[] app = "hello siw".getBytes(StandardCharsets.US_ASCII);
        byte[] replyData = {1, 2, 3};
        ConnParam[] peer = new ConnParam[1];
        MpaRequestReply req = connectTo(app, replyData, peer);
        byte[] pd = req.privateData();
        assertEquals(MpaEnhanced.LENGTH + app.length + IwarpConnectionManager.EXT_LENGTH, pd.length);
        assertArrayEquals(app, Arrays.copyOfRange(pd, MpaEnhanced.LENGTH, MpaEnhanced.LENGTH + app.length),
                "an rdma_cm application parses its private data from the start: it must find its own bytes there");
        assertEquals("JRD1", new String(pd, pd.length - 4, 4, StandardCharsets.US_ASCII));
        assertEquals(qp.qpn, ByteBuffer.wrap(pd, pd.length - 12, 4).getInt(), "the trailer carries the client's QPN");
        assertArrayEquals(replyData, peer[0].privateData(), "the server's private data reaches the client alone");
    }

    @Test
    void applicationDataThatLeavesNoRoomForTheTrailerGoesAlone() throws Exception {
        byte[] app = new byte[IwarpConnectionManager.MAX_DATA_WITH_TRAILER + 1];
        Arrays.fill(app, (byte) 'x');
        MpaRequestReply req = connectTo(app, new byte[0], new ConnParam[1]);
        byte[] pd = req.privateData();
        assertEquals(MpaEnhanced.LENGTH + app.length, pd.length, "siw accepts at most 256 bytes of private data");
        assertArrayEquals(app, Arrays.copyOfRange(pd, MpaEnhanced.LENGTH, pd.length));
    }

    @Test
    void theTrailerIsParsedAndStrippedBetweenJrdmaPeers() {
        byte[] app = "abc".getBytes(StandardCharsets.US_ASCII);
        byte[] withTrailer = IwarpConnectionManager.appData(true, 0x1234, Mtu.MTU_1024, app);
        byte[] pd = new byte[MpaEnhanced.LENGTH + withTrailer.length];
        MpaEnhanced.write(MemorySegment.ofArray(pd), 0, 3, 5, false, false, false, false);
        System.arraycopy(withTrailer, 0, pd, MpaEnhanced.LENGTH, withTrailer.length);
        IwarpConnectionManager.Peer p = IwarpConnectionManager.parse(
                new MpaRequestReply(false, Mpa.FLAG_ENHANCED, Mpa.REVISION_2, pd));
        assertTrue(p.jrdma());
        assertEquals(0x1234, p.qpn());
        assertEquals(Mtu.MTU_1024, p.mtu());
        assertEquals(3, p.ird());
        assertEquals(5, p.ord());
        assertArrayEquals(app, p.appData());
        IwarpConnectionManager.Peer plain = IwarpConnectionManager.parse(
                new MpaRequestReply(false, Mpa.FLAG_ENHANCED, Mpa.REVISION_2, Arrays.copyOf(pd, MpaEnhanced.LENGTH + 3)));
        assertFalse(plain.jrdma());
        assertArrayEquals(app, plain.appData());
    }

    @Test
    void aRequestThatComesAfterThePollTimeoutIsStillServed() throws Exception {
        ConnectionManager.Listener l = ctx.connectionManager().listen(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        try (SocketChannel client = SocketChannel.open(l.address())) {
            // a peer that resolves its route before it speaks: its MPA Request comes after the TCP connection
            // and after the poll that accepted it returned empty-handed; the connection waits, half-open, for it
            assertNull(l.poll(Duration.ofMillis(50)), "no request was sent yet");
            assertEquals(1, ((io.jrdma.engine.core.Handshakes.Bounded) l).halfOpen(), "the poll accepted the connection");
            RawMpa.write(client, MpaRequestReply.enhanced(false, false, false, 1, 1, false, false, false,
                    false, new byte[] {42}));
            ConnectionManager.ConnectRequest r = l.poll(Duration.ofSeconds(10));
            assertTrue(r != null, "the connection that was accepted must be served, not dropped at the poll's deadline");
            assertArrayEquals(new byte[] {42}, r.peerParam().privateData());
            r.reject(new byte[0]);
        } finally {
            l.close();
        }
    }
}

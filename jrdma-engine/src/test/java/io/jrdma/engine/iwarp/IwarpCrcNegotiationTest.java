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
import io.jrdma.wire.iwarp.MpaRequestReply;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * MPA CRC between jrdma peers (docs/iwarp-design.md, "Wire choices"): a jrdma client asks for CRC
 * (C = 1, what a Linux siw server has always seen) and says in its trailer that it can go without; a
 * jrdma server then answers C = 0 and both streams run without CRC, as two siw peers do by default.
 * {@code -Djrdma.iwarp.crc=true} on either side keeps CRC; a Request without the trailer's flag (a
 * Linux siw client, an older jrdma) gets exactly the C bit it asked for.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IwarpCrcNegotiationTest {
    private Context server;
    private Context client;
    private ProtectionDomain spd;
    private ProtectionDomain cpd;
    private CompletionQueue scq;
    private CompletionQueue ccq;
    private IwarpQp sqp;
    private IwarpQp cqp;
    private ConnectionManager.Listener listener;

    @BeforeEach
    void open() {
        InetAddress lo = InetAddress.getLoopbackAddress();
        server = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
        client = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED));
        spd = server.allocPd();
        cpd = client.allocPd();
        scq = server.createCq(16);
        ccq = client.createCq(16);
        sqp = (IwarpQp) spd.createQp(QpInitAttr.rc(scq));
        cqp = (IwarpQp) cpd.createQp(QpInitAttr.rc(ccq));
        listener = server.connectionManager().listen(new InetSocketAddress(lo, 0));
    }

    @AfterEach
    void close() {
        System.clearProperty(IwarpConnectionManager.CRC_PROPERTY);
        listener.close();
        sqp.close();
        cqp.close();
        scq.close();
        ccq.close();
        spd.close();
        cpd.close();
        server.close();
        client.close();
    }

    /** The server's side of one connection, accepted on another thread with whatever the property says then. */
    private CompletableFuture<ConnectionManager.Connection> acceptOne() {
        return CompletableFuture.supplyAsync(() ->
                listener.poll(Duration.ofSeconds(10)).accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10)));
    }

    /** Connects the two jrdma contexts; @return whether the client's and the server's streams use CRC (must agree) */
    private boolean connectJrdma() throws Exception {
        CompletableFuture<ConnectionManager.Connection> accepted = acceptOne();
        try (ConnectionManager.Connection c = client.connectionManager().connect(cqp, listener.address(),
                ConnParam.defaults(), Duration.ofSeconds(10));
             ConnectionManager.Connection s = accepted.get(10, TimeUnit.SECONDS)) {
            assertEquals(QpState.RTS, cqp.state());
            assertTrue((cqp.refusedOps == 0) && (sqp.refusedOps == 0), "both sides are jrdma");
            boolean crc = cqp.iw.crc;
            assertEquals(crc, sqp.iw.crc, "both directions use CRC or neither (the Reply's C bit)");
            return crc;
        }
    }

    @Test
    void jrdmaPeersGoWithoutCrcByDefault() throws Exception {
        assertFalse(connectJrdma());
    }

    @Test
    void aClientThatRequiresCrcGetsIt() throws Exception {
        System.setProperty(IwarpConnectionManager.CRC_PROPERTY, "true");
        assertTrue(connectJrdma());
    }

    @Test
    void aClientThatAsksForNoCrcGetsNone() throws Exception {
        System.setProperty(IwarpConnectionManager.CRC_PROPERTY, "false");
        assertFalse(connectJrdma());
    }

    /** A raw client with the jrdma trailer ({@code flags}) and the C bit {@code askCrc}; @return the Reply's C bit */
    private boolean rawClient(boolean askCrc, int flags) throws Exception {
        CompletableFuture<ConnectionManager.Connection> accepted = acceptOne();
        try (SocketChannel peer = SocketChannel.open(listener.address())) {
            byte[] trailer = IwarpConnectionManager.appData(true, flags, 0x55, Mtu.MTU_1024, new byte[0]);
            MpaRequestReply reply = RawMpa.request(peer, askCrc, trailer);
            try (ConnectionManager.Connection s = accepted.get(10, TimeUnit.SECONDS)) {
                assertEquals(reply.crc(), sqp.iw.crc, "the server's stream does what its Reply said");
                return reply.crc();
            }
        }
    }

    @Test
    void aServerDropsCrcOnlyForAClientThatSaysItCanGoWithout() throws Exception {
        int both = IwarpConnectionManager.EXT_FLAG_RFC7306 | IwarpConnectionManager.EXT_FLAG_CRC_OPTIONAL;
        assertFalse(rawClient(true, both), "a jrdma client that can go without: no CRC");
    }

    @Test
    void aServerKeepsCrcForAJrdmaClientWithoutTheFlag() throws Exception {
        assertTrue(rawClient(true, IwarpConnectionManager.EXT_FLAG_RFC7306), "an older jrdma asked for CRC: it gets it");
    }

    @Test
    void aServerThatRequiresCrcKeepsIt() throws Exception {
        System.setProperty(IwarpConnectionManager.CRC_PROPERTY, "true");
        int both = IwarpConnectionManager.EXT_FLAG_RFC7306 | IwarpConnectionManager.EXT_FLAG_CRC_OPTIONAL;
        assertTrue(rawClient(true, both));
    }

    @Test
    void aPlainClientGetsTheCBitItAskedFor() throws Exception {
        for (boolean ask : new boolean[] {true, false}) {
            CompletableFuture<ConnectionManager.Connection> accepted = acceptOne();
            try (SocketChannel peer = SocketChannel.open(listener.address())) {
                MpaRequestReply reply = RawMpa.request(peer, ask, new byte[0]); // no trailer: Linux siw
                assertEquals(ask, reply.crc(), "a siw client's C bit is answered as before");
                accepted.get(10, TimeUnit.SECONDS).close();
            }
            sqp.close();
            sqp = (IwarpQp) spd.createQp(QpInitAttr.rc(scq));
        }
    }

    @Test
    void whatALinuxSiwServerSeesIsUnchanged() throws Exception {
        // a jrdma client still sends C = 1 (siw then uses CRC, as before); the flag rides in the trailer's
        // flags word, which a peer that is not jrdma does not read (IwarpPrivateDataTest: it follows the app's data)
        try (ServerSocketChannel raw = ServerSocketChannel.open().bind(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            CompletableFuture<MpaRequestReply> seen = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel ch = raw.accept()) {
                    MpaRequestReply req = RawMpa.read(ch, false);
                    RawMpa.write(ch, MpaRequestReply.enhanced(true, req.crc(), false, 1, 1, false, false, false,
                            false, new byte[0])); // siw's default: the C bit of the Request
                    ch.read(ByteBuffer.allocate(1)); // until the client is done
                    return req;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            ConnectionManager.Connection c = client.connectionManager().connect(cqp,
                    (InetSocketAddress) raw.getLocalAddress(), ConnParam.defaults(), Duration.ofSeconds(10));
            assertTrue(cqp.iw.crc, "a plain server answered C = 1: CRC on");
            assertFalse((cqp.refusedOps == 0));
            c.close();
            MpaRequestReply req = seen.get(10, TimeUnit.SECONDS);
            assertTrue(req.crc(), "the Request asks for CRC");
            IwarpConnectionManager.Peer p = IwarpConnectionManager.parse(req);
            assertTrue(p.jrdma());
            assertEquals(IwarpConnectionManager.EXT_FLAG_RFC7306 | IwarpConnectionManager.EXT_FLAG_CRC_OPTIONAL,
                    p.flags());
        }
    }

    @Test
    void theFlagIsLeftOutWhenCrcIsRequired() {
        System.setProperty(IwarpConnectionManager.CRC_PROPERTY, "true");
        assertEquals(IwarpConnectionManager.EXT_FLAG_RFC7306, IwarpConnectionManager.extFlags());
        System.clearProperty(IwarpConnectionManager.CRC_PROPERTY);
        assertEquals(IwarpConnectionManager.EXT_FLAG_RFC7306 | IwarpConnectionManager.EXT_FLAG_CRC_OPTIONAL,
                IwarpConnectionManager.extFlags());
    }
}

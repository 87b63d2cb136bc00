package io.jrdma.engine.cm;

import io.jrdma.engine.core.Handshakes;
import io.jrdma.engine.roce.SoftRoceDevice;
import io.jrdma.soft.SoftRoceOptions;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import org.junit.jupiter.api.Test;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma's TCP side channel (soft-RoCE's {@code connectionManager()}) under silent, stalled and garbage clients. */
class TcpListenerHostageTest extends HostileListenerTests {
    @Override
    protected DeviceContext open() {
        return SoftRoceDevice.forTest("lo", () -> List.of(LO))
                .open(DeviceOptions.defaults().with(SoftRoceOptions.defaults().withUdpPort(0, true)));
    }

    @Override
    protected Listener listen(DeviceContext ctx, InetSocketAddress at, Handshakes.Limits limits) {
        return ((TcpConnectionManager) ctx.connectionManager()).listen(at, limits);
    }

    /** A REQ's header announcing a 40-byte hello, and 10 bytes of it. */
    @Override
    protected byte[] halfRequest() {
        ByteBuffer b = ByteBuffer.allocate(17);
        b.putInt(TcpConnectionManager.MAGIC).put((byte) TcpConnectionManager.REQ).putShort((short) 40);
        b.put((byte) TcpConnectionManager.VERSION);
        return b.array();
    }

    /** A REQ (QPN 0x100 + i, no private data) that a client then never follows with its RTU. */
    @Override
    protected byte[] fullRequest(int i) {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        try {
            TcpConnectionManager.write(new java.io.DataOutputStream(b), TcpConnectionManager.REQ,
                    new TcpConnectionManager.Hello(0x100 + i, 1000 + i, io.jrdma.verbs.Gid.of(LO), 9,
                            io.jrdma.verbs.ConnParam.defaults()));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return b.toByteArray();
    }

    /**
     * Without a listener polled (it is closed after the request), the connection's own events keep the RTU's
     * deadline: one whose client never confirms ends at it, one whose client confirms outlives it.
     */
    @Test
    void anUnconfirmedConnectionEndsAtItsDeadlineThroughItsOwnEvents() throws Exception {
        Duration confirm = Duration.ofMillis(500);
        try (DeviceContext s = open(); ProtectionDomain pd = s.allocPd(); CompletionQueue cq = s.createCq(16);
             QueuePair silentQp = pd.createQp(QpInitAttr.rc(cq)); QueuePair confirmedQp = pd.createQp(QpInitAttr.rc(cq));
             SocketChannel silent = SocketChannel.open(); SocketChannel confirming = SocketChannel.open()) {
            ConnectionManager.ConnectRequest r1;
            ConnectionManager.ConnectRequest r2;
            try (Listener l = listen(s, new InetSocketAddress(LO, 0), new Handshakes.Limits(Duration.ofSeconds(5), 64))) {
                InetSocketAddress at = new InetSocketAddress(LO, l.address().getPort());
                silent.connect(at);
                silent.write(ByteBuffer.wrap(fullRequest(0)));
                r1 = l.poll(Duration.ofSeconds(5));
                confirming.connect(at);
                confirming.write(ByteBuffer.wrap(fullRequest(1)));
                r2 = l.poll(Duration.ofSeconds(5));
            }
            assertNotNull(r1);
            assertNotNull(r2);
            long t0 = System.nanoTime();
            Connection c1 = r1.accept(silentQp, ConnParam.defaults(), confirm);
            long acceptMs = (System.nanoTime() - t0) / 1_000_000;
            Connection c2 = r2.accept(confirmedQp, ConnParam.defaults(), confirm);
            ByteBuffer rtu = ByteBuffer.allocate(7).putInt(TcpConnectionManager.MAGIC).put((byte) TcpConnectionManager.RTU)
                    .putShort((short) 0).flip();
            confirming.write(rtu);
            try (c1; c2) {
                assertTrue(acceptMs < confirm.toMillis(), "accept waited " + acceptMs + " ms for the client's RTU");
                assertEquals(QpState.RTS, c1.qp().state());
                assertNull(c1.pollEvent(Duration.ofMillis(100)), "an event before the deadline");
                assertEquals(ConnectionManager.Event.DISCONNECTED, c1.pollEvent(Duration.ofSeconds(5)));
                long endedMs = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(endedMs >= confirm.toMillis() && endedMs < confirm.toMillis() + 1_000,
                        "ended after " + endedMs + " ms, the deadline is " + confirm);
                assertEquals(QpState.ERROR, c1.qp().state());
                assertEquals(ConnectionManager.Event.TIMEWAIT_EXIT, c1.pollEvent(Duration.ZERO));
                // the confirmed one outlives the deadline
                assertNull(c2.pollEvent(Duration.ofMillis(Math.max(1, confirm.toMillis() + 200 - endedMs))));
                assertEquals(QpState.RTS, c2.qp().state());
                assertEquals(1L, s.counters().get("cm_rtu_timed_out"));
            }
        }
    }

    @Override
    protected boolean confirmsAfterAccept() {
        return true;
    }

    @Override
    protected String name() {
        return "TCP side channel (soft-RoCE)";
    }
}

package io.jrdma.engine.ibcm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.soft.SoftRoceOptions;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionManager.ConnectRequest;
import io.jrdma.verbs.ConnectionManager.Event;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.Bth;
import io.jrdma.wire.Deth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.mad.CmMessage;
import io.jrdma.wire.mad.CmPath;
import io.jrdma.wire.mad.CmRej;
import io.jrdma.wire.mad.CmRep;
import io.jrdma.wire.mad.CmReq;
import io.jrdma.wire.mad.CmRtu;
import io.jrdma.wire.mad.CmaHeader;
import io.jrdma.wire.mad.Mad;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * rdma_cm over RoCE between two soft-RoCE contexts on loopback, and against a raw peer that speaks
 * MADs through a plain UDP socket (as a Linux rxe peer would put them on the wire).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IbCmTest {
    static final Duration T = Duration.ofSeconds(10);
    static final InetAddress LO = InetAddress.getLoopbackAddress();

    static DeviceContext open(ThreadingMode mode) throws Exception {
        return Rdma.resolve(InetAddress.getByName("127.0.0.1"), io.jrdma.verbs.Transport.ROCE_V2).device()
                .open(DeviceOptions.defaults().withThreadingMode(mode)
                        .with(SoftRoceOptions.defaults().withAnyIpv4Id(true)));
    }

    /** One side: PD, CQ, an RC QP, 4 KiB registered. */
    static final class Side implements AutoCloseable {
        final DeviceContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final Arena arena = Arena.ofShared();
        final MemorySegment buf;
        final MemoryRegion mr;

        Side(ThreadingMode mode) throws Exception {
            ctx = open(mode);
            pd = ctx.allocPd();
            cq = ctx.createCq(64);
            qp = pd.createQp(QpInitAttr.rc(cq));
            buf = arena.allocate(4096, 4096);
            mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        }

        /** Waits for a completion, driving {@code other}'s engine too (INVOKER mode). */
        WorkCompletion await(Side other) {
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + T.toNanos();
            while (cq.poll(wc) == 0) {
                ctx.progress();
                other.ctx.progress();
                assertTrue(System.nanoTime() - deadline < 0, "no completion within " + T + ": " + ctx.counters()
                        + " QP " + qp.query());
                Thread.onSpinWait();
            }
            return wc;
        }

        @Override
        public void close() {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            ctx.close();
            arena.close();
        }
    }

    /**
     * The passive side takes the REQ's path MTU (a REP carries none): an accept that asks a smaller one is refused
     * with REJ 26 (invalid MTU) and an exception saying why, where before the server's QP took the smaller MTU and
     * the client's the REQ's, and each side then NAKed the other's full packets (found in review). A client asking
     * the smaller MTU connects, both QPs at it, and a message of several packets goes through.
     */
    @Test
    void thePassiveSideTakesTheRequestsMtuOrRejectsIt() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); Side c = new Side(ThreadingMode.DEDICATED);
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            CompletableFuture<Connection> client = CompletableFuture.supplyAsync(() -> c.ctx.rdmaCm().connect(c.qp,
                    l.address(), ConnParam.defaults(), T));
            ConnectRequest r = l.poll(T);
            assertNotNull(r, "no request");
            RdmaException e = assertThrows(RdmaException.class,
                    () -> r.accept(s.qp, ConnParam.defaults().withMtu(io.jrdma.verbs.Mtu.MTU_1024), T));
            assertTrue(e.getMessage().contains("invalid MTU"), e.getMessage());
            java.util.concurrent.ExecutionException x = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> client.get(20, TimeUnit.SECONDS));
            assertTrue(x.getCause() instanceof io.jrdma.verbs.ConnectionRejectedException, x.getCause().toString());
        }
        try (Side s = new Side(ThreadingMode.INVOKER); Side c = new Side(ThreadingMode.INVOKER);
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            CompletableFuture<Connection> client = CompletableFuture.supplyAsync(() -> c.ctx.rdmaCm().connect(c.qp,
                    l.address(), ConnParam.defaults().withMtu(io.jrdma.verbs.Mtu.MTU_1024), T));
            ConnectRequest r = l.poll(T);
            assertNotNull(r, "no request");
            Connection sc = r.accept(s.qp, ConnParam.defaults(), T);
            Connection cc = client.get(20, TimeUnit.SECONDS);
            assertEquals(c.qp.query().pathMtu(), s.qp.query().pathMtu(), "both QPs at one MTU");
            assertEquals(io.jrdma.verbs.Mtu.MTU_1024, s.qp.query().pathMtu());
            assertEquals(0, s.qp.postRecv(new RecvWorkRequest().wrId(1).sge(0, s.mr, 0, 4096)));
            c.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, c.mr, 0, 3000));
            assertEquals(WcStatus.SUCCESS, c.await(s).status());
            assertEquals(WcStatus.SUCCESS, s.await(c).status());
            cc.close();
            sc.close();
        }
    }

    @Test
    void connectSendAndPeerDisconnectIsAnEvent() throws Exception {
        for (ThreadingMode mode : new ThreadingMode[] {ThreadingMode.DEDICATED, ThreadingMode.INVOKER}) {
            try (Side s = new Side(mode); Side c = new Side(mode);
                 Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
                byte[] hello = "hello".getBytes();
                CompletableFuture<Connection> client = CompletableFuture.supplyAsync(() -> c.ctx.rdmaCm().connect(c.qp,
                        l.address(), ConnParam.defaults().withPrivateData(hello), T));
                ConnectRequest r = l.poll(T);
                assertNotNull(r, mode + ": no request");
                assertArrayEquals(hello, Arrays.copyOf(r.peerParam().privateData(), 5));
                assertEquals(CmaHeader.USER_DATA, r.peerParam().privateData().length);
                assertEquals(LO, r.peerAddress().getAddress());
                Connection sc = r.accept(s.qp, ConnParam.defaults().withPrivateData(new byte[] {7, 8}), T);
                assertEquals(0, s.qp.postRecv(new RecvWorkRequest().wrId(1).sge(0, s.mr, 0, 64)));
                Connection cc = client.get(20, TimeUnit.SECONDS);
                assertEquals(QpState.RTS, c.qp.state());
                assertEquals(QpState.RTS, s.qp.state());
                assertEquals(c.qp.qpn(), sc.peerQpn());
                assertEquals(s.qp.qpn(), cc.peerQpn());
                assertEquals(7, cc.peerParam().privateData()[0]);
                assertEquals(CmRep.PRIVATE_DATA, cc.peerParam().privateData().length);

                c.buf.setString(0, "over the IB CM");
                c.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, c.mr, 0, 15));
                assertEquals(WcStatus.SUCCESS, c.await(s).status());
                WorkCompletion rw = s.await(c);
                assertEquals(WcStatus.SUCCESS, rw.status());
                assertEquals("over the IB CM", s.buf.getString(0));

                assertNull(sc.pollEvent(Duration.ZERO), "no event while connected");
                long t0 = System.nanoTime();
                cc.close(); // DREQ
                assertEquals(Event.DISCONNECTED, sc.pollEvent(T));
                assertTrue(System.nanoTime() - t0 < 1_000_000_000L, mode + ": the server learned of it within a second");
                assertEquals(QpState.ERROR, s.qp.state());
                assertEquals(Event.TIMEWAIT_EXIT, sc.pollEvent(T));
                assertNull(sc.pollEvent(Duration.ZERO));
                assertEquals(Event.DISCONNECTED, event(cc, s)); // the DREP
                assertEquals(Event.TIMEWAIT_EXIT, event(cc, s));
                sc.close(); // idempotent after the peer's disconnect
                Long sent = c.ctx.counters().get("gsi_mads_sent");
                assertTrue(sent != null && sent >= 3, "REQ, RTU, DREQ sent: " + sent);
            }
        }
    }

    /** The next event of {@code conn}, while the peer's engine runs too (its DREP leaves only then in INVOKER mode). */
    static Event event(Connection conn, Side peer) {
        long deadline = System.nanoTime() + T.toNanos();
        while (System.nanoTime() - deadline < 0) {
            peer.ctx.progress();
            Event e = conn.pollEvent(Duration.ofMillis(1));
            if (e != null) {
                return e;
            }
        }
        return null;
    }

    @Test
    void rejectsCarryTheReasonLinuxChecks() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); Side c = new Side(ThreadingMode.DEDICATED);
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            CompletableFuture<Connection> client = CompletableFuture.supplyAsync(() -> c.ctx.rdmaCm().connect(c.qp,
                    l.address(), ConnParam.defaults(), T));
            ConnectRequest r = l.poll(T);
            r.reject(new byte[] {42, 43});
            assertThrows(RdmaException.class, () -> r.reject(null), "answered once");
            Exception e = assertThrows(Exception.class, () -> client.get(20, TimeUnit.SECONDS));
            ConnectionRejectedException rej = (ConnectionRejectedException) e.getCause();
            assertEquals(CmRej.REASON_CONSUMER_DEFINED, rej.reason());
            assertEquals(42, rej.privateData()[0]);
            assertEquals(CmRej.PRIVATE_DATA, rej.privateData().length);

            // nobody listens on that port: REJ, invalid service ID (a raw peer: a jrdma client finds only listeners' UDP ports)
            try (RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort())) {
                int unused = l.address().getPort() == 65000 ? 65001 : 65000;
                raw.send(raw.req(0x5150, unused, 0x77).toMad(3));
                byte[] m = raw.receive(5000);
                assertNotNull(m, "a REJ");
                CmRej none = (CmRej) CmMessage.decode(m, 0, Mad.LENGTH);
                assertEquals(CmRej.REASON_INVALID_SERVICE_ID, none.reason());
                assertEquals(0x5150, none.remoteCommId());
                assertEquals(CmRej.REJECTED_REQ, none.messageRejected());
                assertEquals(3, Mad.decode(m, 0, Mad.LENGTH).tid());
            }

            // private data beyond what a REQ carries is a usage error that says so
            QueuePair qp3 = c.pd.createQp(QpInitAttr.rc(c.cq));
            RdmaException big = assertThrows(RdmaException.class, () -> c.ctx.rdmaCm().connect(qp3, l.address(),
                    ConnParam.defaults().withPrivateData(new byte[57]), T));
            assertEquals(RdmaException.Errno.EINVAL, big.errno());
            assertTrue(big.getMessage().contains("56"), big.getMessage());
            qp3.close();
        }
    }

    // ------------------------------------------------------------------ a raw peer on a UDP socket

    /** Sends MADs to QP 1 of a context as a Linux peer would, from a plain UDP socket, and reads the answers. */
    static final class RawPeer implements AutoCloseable {
        final DatagramChannel ch = DatagramChannel.open();
        final InetSocketAddress target;
        final Icrc icrc = new Icrc();
        int psn;

        RawPeer(int targetPort) throws Exception {
            ch.bind(new InetSocketAddress(LO, 0));
            ch.socket().setSoTimeout(100);
            target = new InetSocketAddress(LO, targetPort);
        }

        int port() {
            return ch.socket().getLocalPort();
        }

        void send(byte[] mad) throws Exception {
            ByteBuffer b = ByteBuffer.allocateDirect(Bth.LENGTH + Deth.LENGTH + mad.length + Icrc.LENGTH);
            MemorySegment s = MemorySegment.ofBuffer(b);
            Bth.write(s, 0, IbOpcode.UD_SEND_ONLY, false, false, 0, 0xFFFF, 1, true, psn++);
            Deth.write(s, Bth.LENGTH, Deth.GSI_QKEY, 1);
            MemorySegment.copy(mad, 0, s, ValueLayout.JAVA_BYTE, Bth.LENGTH + Deth.LENGTH, mad.length);
            int len = Bth.LENGTH + Deth.LENGTH + mad.length;
            int ip = 0x7F000001;
            Icrc.write(s, len, icrc.computeIpv4(ip, ip, 0, port(), target.getPort(), b, 0, len));
            b.clear();
            ch.send(b, target);
        }

        /** Sends an RC SEND_ONLY of {@code data} (a multiple of 4 bytes) to {@code destQp}, as a connected client's QP. */
        void sendRc(int destQp, int psn, byte[] data) throws Exception {
            ByteBuffer b = ByteBuffer.allocateDirect(Bth.LENGTH + data.length + Icrc.LENGTH);
            MemorySegment s = MemorySegment.ofBuffer(b);
            Bth.write(s, 0, IbOpcode.RC_SEND_ONLY, false, false, 0, 0xFFFF, destQp, true, psn);
            MemorySegment.copy(data, 0, s, ValueLayout.JAVA_BYTE, Bth.LENGTH, data.length);
            int len = Bth.LENGTH + data.length;
            int ip = 0x7F000001;
            Icrc.write(s, len, icrc.computeIpv4(ip, ip, 0, port(), target.getPort(), b, 0, len));
            b.clear();
            ch.send(b, target);
        }

        /** @return the next MAD received within {@code ms} (packets for other QPs, such as ACKs, skipped), or null */
        byte[] receive(long ms) throws Exception {
            long end = System.nanoTime() + ms * 1_000_000;
            while (true) {
                long left = (end - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return null;
                }
                byte[] m = receiveOne(left);
                if (m != null && m.length > 0) {
                    return m;
                }
                if (m == null) {
                    return null;
                }
            }
        }

        /** @return the next MAD received within {@code ms}, an empty array for a packet to another QP, or null */
        private byte[] receiveOne(long ms) throws Exception {
            ByteBuffer b = ByteBuffer.allocate(2048);
            ch.socket().setSoTimeout((int) Math.max(1, ms));
            java.net.DatagramPacket p = new java.net.DatagramPacket(b.array(), b.capacity());
            try {
                ch.socket().receive(p);
            } catch (SocketTimeoutException e) {
                return null;
            }
            MemorySegment s = MemorySegment.ofArray(b.array());
            if (Bth.destQp(s, 0) != 1) {
                return new byte[0];
            }
            assertEquals(1, Bth.destQp(s, 0));
            assertEquals(Deth.GSI_QKEY, Deth.qkey(s, Bth.LENGTH));
            assertEquals(1, Deth.srcQp(s, Bth.LENGTH));
            assertEquals(Bth.LENGTH + Deth.LENGTH + Mad.LENGTH + Icrc.LENGTH, p.getLength());
            return Arrays.copyOfRange(b.array(), Bth.LENGTH + Deth.LENGTH, Bth.LENGTH + Deth.LENGTH + Mad.LENGTH);
        }

        CmReq req(int commId, int port, int qpn) throws Exception {
            byte[] g = io.jrdma.verbs.Gid.of(LO).raw();
            CmaHeader cma = new CmaHeader(0, 4, 40000, LO, LO);
            return new CmReq(commId, CmaHeader.tcpServiceId(port), 0x1122334455667788L, 0, qpn, 1, 0, 1, 0, 20, 0,
                    false, 0x123456, 20, 7, 0xFFFF, 3, false, 7, 15, false, 0,
                    new CmPath(port(), CmPath.PERMISSIVE_LID, g, g, 0, 0, 0, 64, 0, false, 14), CmPath.NONE,
                    cma.withUserData(new byte[] {1}));
        }

        @Override
        public void close() throws Exception {
            ch.close();
        }
    }

    /** Waits (10 s at most) until the manager has taken the first waiting request for withdrawn by its client. */
    private static void awaitWithdrawn(java.util.Queue<?> backlog, Side s) throws Exception {
        Object request = backlog.peek();
        java.lang.reflect.Field idField = request.getClass().getDeclaredField("id");
        idField.setAccessible(true);
        Object id = idField.get(request);
        java.lang.reflect.Field withdrawn = id.getClass().getDeclaredField("withdrawn");
        withdrawn.setAccessible(true);
        long deadline = System.nanoTime() + T.toNanos();
        while (!withdrawn.getBoolean(id)) {
            assertTrue(System.nanoTime() - deadline < 0, "the request was not withdrawn: " + s.ctx.counters());
            Thread.onSpinWait();
        }
    }

    /** @return the listener's queue of waiting requests, once a request is in it (10 s at most) */
    private static java.util.Queue<?> awaitBacklog(Listener l) throws Exception {
        java.lang.reflect.Field f = l.getClass().getDeclaredField("backlog");
        f.setAccessible(true);
        java.util.Queue<?> backlog = (java.util.Queue<?>) f.get(l);
        long deadline = System.nanoTime() + T.toNanos();
        while (backlog.isEmpty()) {
            assertTrue(System.nanoTime() - deadline < 0, "the request never reached the listener");
            Thread.onSpinWait();
        }
        return backlog;
    }

    /**
     * A listener closed after its context closed ends at once (found in review): its waiting requests used to be
     * rejected through the manager's thread, which a closed context's manager no longer has, and the close waited
     * 30 s for that, then threw ETIMEDOUT.
     */
    @Test
    void aListenerClosedAfterItsContextEndsAtOnce() throws Exception {
        DeviceContext ctx = open(ThreadingMode.DEDICATED);
        try (RawPeer raw = new RawPeer(ctx.queryPort().udpPort())) {
            Listener l = ctx.rdmaCm().listen(new InetSocketAddress(LO, 0));
            raw.send(raw.req(0x1234, l.address().getPort(), 0x55).toMad(9));
            awaitBacklog(l);
            ctx.close();
            long t0 = System.nanoTime();
            l.close();
            assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "the listener's close took "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms");
        }
    }

    /**
     * A REJ right behind the REP, before the client's RTU (a server that accepted and then gave up: Linux's
     * cm_destroy_id in REP_SENT): the connect fails with the rejection and sends no RTU, as Linux's CM refuses the
     * RTU there (found in review: it sent the RTU and returned a connection whose id was gone, which never gave an
     * event nor sent a DREQ). The server here is a raw peer, which the client finds through the listeners' map.
     */
    @Test
    void aRejectBetweenTheReplyAndTheReadyToUseFailsTheConnect() throws Exception {
        for (int round = 0; round < 5; round++) {
            try (Side c = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(c.ctx.queryPort().udpPort())) {
                InetSocketAddress server = new InetSocketAddress(LO, 45_000 + round);
                java.lang.reflect.Field f = IbConnectionManager.class.getDeclaredField("LISTENING");
                f.setAccessible(true);
                @SuppressWarnings("unchecked")
                java.util.Map<InetSocketAddress, Integer> listening = (java.util.Map<InetSocketAddress, Integer>) f.get(null);
                listening.put(server, raw.port());
                try {
                    CompletableFuture<Connection> client = CompletableFuture.supplyAsync(
                            () -> c.ctx.rdmaCm().connect(c.qp, server, ConnParam.defaults(), T));
                    byte[] m = raw.receive(10_000);
                    assertNotNull(m, "the REQ");
                    CmReq req = (CmReq) CmMessage.decode(m, 0, Mad.LENGTH);
                    long tid = Mad.decode(m, 0, Mad.LENGTH).tid();
                    raw.send(new CmRep(0x5151, req.localCommId(), 0, 0x77, 0, 0x10, 1, 1, 20, 0, false, 7, false, 0,
                            new byte[CmRep.PRIVATE_DATA]).toMad(tid));
                    raw.send(new CmRej(0x5151, req.localCommId(), CmRej.REJECTED_REP, 0,
                            CmRej.REASON_CONSUMER_DEFINED, null, null).toMad(tid));
                    java.util.concurrent.ExecutionException x = assertThrows(
                            java.util.concurrent.ExecutionException.class, () -> client.get(20, TimeUnit.SECONDS));
                    assertTrue(x.getCause() instanceof io.jrdma.verbs.ConnectionRejectedException,
                            "round " + round + ": " + x.getCause());
                    assertEquals(QpState.ERROR, c.qp.state());
                    for (byte[] more; (more = raw.receive(300)) != null; ) {
                        assertTrue(!(CmMessage.decode(more, 0, Mad.LENGTH) instanceof io.jrdma.wire.mad.CmRtu),
                                "round " + round + ": an RTU went out");
                    }
                } finally {
                    listening.remove(server);
                }
            }
        }
    }

    /**
     * A client that gives up on its REQ rejects it with remote comm ID 0 (Linux's cm_destroy_id in REQ_SENT: it does
     * not know the server's comm ID yet): the request is found by the client's comm ID and address and withdrawn, and
     * the listener's poll passes over it (found in review: the REJ was dropped as bad, and the request was handed out
     * and accepted for a client that was gone).
     */
    @Test
    void aRequestItsClientWithdrewIsNotHandedOut() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            raw.send(raw.req(0x9999, l.address().getPort(), 0x68).toMad(11));
            java.util.Queue<?> backlog = awaitBacklog(l);
            long bad = s.ctx.counters().get("cm_mads_bad");
            raw.send(new CmRej(0x9999, 0, CmRej.REJECTED_OTHER, 8, CmRej.REASON_TIMEOUT, new byte[8], null).toMad(11));
            awaitWithdrawn(backlog, s);
            assertNull(l.poll(Duration.ofMillis(500)), "the withdrawn request is not handed out");
            assertEquals(bad, s.ctx.counters().get("cm_mads_bad"), "the REJ is not counted as bad");
        }
    }

    /**
     * A connect that gives up (its timeout) withdraws its request with a REJ, as Linux's cm_destroy_id does in
     * REQ_SENT (found in review: it sent nothing, and the server later handed out and accepted the request of a
     * client that was gone): a listener nobody polled passes over it.
     */
    @Test
    void aConnectThatTimesOutWithdrawsItsRequest() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); Side c = new Side(ThreadingMode.DEDICATED);
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            RdmaException e = assertThrows(RdmaException.class, () -> c.ctx.rdmaCm().connect(c.qp, l.address(),
                    ConnParam.defaults(), Duration.ofMillis(300)));
            assertEquals(RdmaException.Errno.ETIMEDOUT, e.errno(), e.getMessage());
            awaitWithdrawn(awaitBacklog(l), s);
            assertNull(l.poll(Duration.ofMillis(300)), "the withdrawn request is not handed out");
        }
    }

    /** The listeners' map of this JVM, where a test puts a raw peer as the server a client finds. */
    @SuppressWarnings("unchecked")
    static java.util.Map<InetSocketAddress, Integer> listening() throws Exception {
        java.lang.reflect.Field f = IbConnectionManager.class.getDeclaredField("LISTENING");
        f.setAccessible(true);
        return (java.util.Map<InetSocketAddress, Integer>) f.get(null);
    }

    /** @return the next REJ {@code raw} receives within {@code ms} (other MADs, such as REQ retries, skipped), or null */
    static CmRej nextRej(RawPeer raw, long ms) throws Exception {
        long end = System.nanoTime() + ms * 1_000_000;
        for (byte[] m; (m = raw.receive(Math.max(1, (end - System.nanoTime()) / 1_000_000))) != null; ) {
            if (CmMessage.decode(m, 0, Mad.LENGTH) instanceof CmRej j) {
                return j;
            }
        }
        return null;
    }

    /**
     * Each context has a CA GUID of its own (found in review: every context sent 0 in REQ and REP, so two jrdma
     * clients whose QPNs collided at one Linux server looked like one stale connection to it, which answered REJ 10 and
     * sent the live one a DREQ): nonzero, two contexts' differ, a REQ carries its client's, a REP its server's, and the
     * REJ 4 of a connect that gives up carries it as the ARI (what Linux matches the REJ by).
     */
    @Test
    void eachContextHasACaGuidOfItsOwnInItsRequestsRepliesAndRejects() throws Exception {
        try (Side a = new Side(ThreadingMode.DEDICATED); Side b = new Side(ThreadingMode.DEDICATED)) {
            long ga = ((IbConnectionManager) a.ctx.rdmaCm()).caGuid();
            long gb = ((IbConnectionManager) b.ctx.rdmaCm()).caGuid();
            assertTrue(ga != 0 && gb != 0 && ga != gb, Long.toHexString(ga) + " " + Long.toHexString(gb));
            assertEquals(0x02, ga >>> 56, "a locally assigned EUI-64");
            for (Side c : new Side[] {a, b}) {
                long guid = c == a ? ga : gb;
                try (RawPeer raw = new RawPeer(c.ctx.queryPort().udpPort())) {
                    InetSocketAddress server = new InetSocketAddress(LO, 46_000 + (c == a ? 0 : 1));
                    listening().put(server, raw.port());
                    try {
                        RdmaException e = assertThrows(RdmaException.class, () -> c.ctx.rdmaCm().connect(c.qp, server,
                                ConnParam.defaults(), Duration.ofMillis(300)));
                        assertEquals(RdmaException.Errno.ETIMEDOUT, e.errno());
                        byte[] m = raw.receive(5000);
                        assertNotNull(m, "the REQ");
                        assertEquals(guid, ((CmReq) CmMessage.decode(m, 0, Mad.LENGTH)).localCaGuid(), "the REQ's");
                        CmRej rej = nextRej(raw, 5000);
                        assertNotNull(rej, "the REJ withdrawing the request");
                        assertEquals(CmRej.REASON_TIMEOUT, rej.reason());
                        assertEquals(8, rej.rejectInfoLength());
                        assertEquals(guid, ByteBuffer.wrap(rej.ari()).getLong(), "the REJ's ARI");
                    } finally {
                        listening().remove(server);
                    }
                }
            }
            try (RawPeer raw = new RawPeer(a.ctx.queryPort().udpPort());
                 Listener l = a.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
                raw.send(raw.req(0x6161, l.address().getPort(), 0x61).toMad(6));
                ConnectRequest r = l.poll(T);
                assertNotNull(r);
                r.accept(a.qp, ConnParam.defaults(), T);
                byte[] m = raw.receive(5000);
                assertNotNull(m, "the REP");
                assertEquals(ga, ((CmRep) CmMessage.decode(m, 0, Mad.LENGTH)).localCaGuid(), "the REP's");
            }
        }
    }

    /**
     * A connect whose thread is interrupted while it waits for the REP withdraws its request as a timed-out one does
     * (REJ 4, remote comm ID 0, its CA GUID as the ARI: Linux's cm_destroy_id in REQ_SENT), lets go of its id, throws
     * EINTR with the thread's interrupt status set; a REP that comes after is dropped as Linux drops a REP for an id it
     * no longer has (no RTU, no answer), and nothing stays held. Found in review: it sent nothing, and the id of a
     * connect whose REP then came stayed for good (REP_RCVD, its timer re-armed hourly).
     */
    @Test
    void anInterruptedConnectWithdrawsItsRequestAndALateReplyFindsNothing() throws Exception {
        try (Side c = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(c.ctx.queryPort().udpPort())) {
            IbConnectionManager cm = (IbConnectionManager) c.ctx.rdmaCm();
            InetSocketAddress server = new InetSocketAddress(LO, 46_100);
            listening().put(server, raw.port());
            try {
                CompletableFuture<Object> outcome = new CompletableFuture<>();
                Thread t = new Thread(() -> {
                    try {
                        outcome.complete(cm.connect(c.qp, server, ConnParam.defaults(), T));
                    } catch (RuntimeException e) {
                        outcome.complete(java.util.List.of(e, Thread.currentThread().isInterrupted()));
                    }
                });
                t.start();
                byte[] m = raw.receive(5000);
                assertNotNull(m, "the REQ");
                CmReq req = (CmReq) CmMessage.decode(m, 0, Mad.LENGTH);
                long tid = Mad.decode(m, 0, Mad.LENGTH).tid();
                t.interrupt();
                Object o = outcome.get(20, TimeUnit.SECONDS);
                assertTrue(o instanceof java.util.List<?>, "connect returned " + o);
                java.util.List<?> failure = (java.util.List<?>) o;
                RdmaException e = (RdmaException) failure.get(0);
                assertEquals(RdmaException.Errno.EINTR, e.errno(), e.getMessage());
                assertEquals(Boolean.TRUE, failure.get(1), "the interrupt status is still set");
                t.join(10_000);

                CmRej rej = nextRej(raw, 5000);
                assertNotNull(rej, "a REJ withdraws the request");
                assertEquals(CmRej.REASON_TIMEOUT, rej.reason());
                assertEquals(req.localCommId(), rej.localCommId());
                assertEquals(0, rej.remoteCommId(), "the server's comm ID is not known yet");
                assertEquals(cm.caGuid(), ByteBuffer.wrap(rej.ari()).getLong());
                assertEquals(0, cm.heldIds(), "the id is let go");

                long bad = c.ctx.counters().get("cm_mads_bad");
                raw.send(new CmRep(0x5252, req.localCommId(), 0, 0x77, 0, 0x10, 1, 1, 20, 0, false, 7, false, 0x1234,
                        new byte[CmRep.PRIVATE_DATA]).toMad(tid));
                long until = System.nanoTime() + T.toNanos();
                while (c.ctx.counters().get("cm_mads_bad") == bad) {
                    assertTrue(System.nanoTime() - until < 0, "the late REP was not dropped: " + c.ctx.counters());
                    Thread.onSpinWait();
                }
                assertNull(raw.receive(700), "the late REP gets no answer (no RTU) and no REQ retry follows");
                assertEquals(0, cm.heldIds(), "nothing held after the late REP");

                // a connect entered with the interrupt status set: its REQ goes (the hand-off to the CM thread is not
                // cut short, so what it did is known) and is withdrawn at once, with the same outcome
                QueuePair qp2 = c.pd.createQp(QpInitAttr.rc(c.cq));
                try {
                    CompletableFuture<Object> second = new CompletableFuture<>();
                    Thread t2 = new Thread(() -> {
                        Thread.currentThread().interrupt();
                        try {
                            second.complete(cm.connect(qp2, server, ConnParam.defaults(), T));
                        } catch (RuntimeException x) {
                            second.complete(java.util.List.of(x, Thread.currentThread().isInterrupted()));
                        }
                    });
                    t2.start();
                    java.util.List<?> f2 = (java.util.List<?>) second.get(20, TimeUnit.SECONDS);
                    assertEquals(RdmaException.Errno.EINTR, ((RdmaException) f2.get(0)).errno(), f2.toString());
                    assertEquals(Boolean.TRUE, f2.get(1), "the interrupt status is still set");
                    t2.join(10_000);
                    byte[] m2 = raw.receive(5000);
                    assertNotNull(m2, "the REQ");
                    CmReq req2 = (CmReq) CmMessage.decode(m2, 0, Mad.LENGTH);
                    CmRej rej2 = nextRej(raw, 5000);
                    assertNotNull(rej2, "a REJ withdraws the request");
                    assertEquals(req2.localCommId(), rej2.localCommId());
                    assertEquals(CmRej.REASON_TIMEOUT, rej2.reason());
                    assertEquals(0, cm.heldIds(), "the id is let go");
                } finally {
                    qp2.close();
                }
            } finally {
                listening().remove(server);
            }
        }
    }

    /**
     * A request the application leaves unanswered is rejected in a form a Linux client in REQ_SENT matches: its
     * cm_acquire_rejected_id matches a REJ with reason timeout by the ARI's CA GUID and the server's comm ID, which a
     * client learns only from a REP, and any other REJ rejecting its REQ by its own comm ID alone. So the REJ
     * rejects the REQ with reason 28 (what Linux's passive side sends when it gives up on a request, cm_destroy_id in
     * REQ_RCVD), and the listener's poll passes over the request. Found in review: reason timeout, which such a client
     * dropped, its next REQ retry becoming a second request.
     */
    @Test
    void anUnansweredRequestIsRejectedInAFormTheClientMatches() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            IbConnectionManager cm = (IbConnectionManager) s.ctx.rdmaCm();
            cm.unansweredRequestNanos = 300_000_000L;
            raw.send(raw.req(0x7171, l.address().getPort(), 0x71).toMad(21));
            awaitBacklog(l);
            CmRej rej = nextRej(raw, 10_000);
            assertNotNull(rej, "the unanswered request is rejected");
            assertEquals(0x7171, rej.remoteCommId(), "the client's comm ID, which it is matched by");
            assertEquals(CmRej.REJECTED_REQ, rej.messageRejected());
            assertEquals(CmRej.REASON_CONSUMER_DEFINED, rej.reason(), "not timeout, which the client cannot match");
            assertNull(l.poll(Duration.ofMillis(300)), "the rejected request is not handed out");
            assertEquals(0, cm.heldIds());
        }
    }

    /**
     * Closing a context lets each of its connections go as Linux's cm_destroy_id does: an established one with a DREQ
     * (its comm IDs and the peer's QPN), one accepted and not confirmed with a REJ 28 withdrawing the REP, a request
     * still waiting for the application with a REJ 28 rejecting it; at once, without waiting for answers. Found in review: established connections were dropped without a DREQ, so
     * the peer held its side until its own traffic failed.
     */
    @Test
    void closingTheContextDisconnectsItsConnectionsAndRejectsItsWaitingRequests() throws Exception {
        DeviceContext ctx = open(ThreadingMode.DEDICATED);
        ProtectionDomain pd = ctx.allocPd();
        CompletionQueue cq = ctx.createCq(16);
        QueuePair qp = pd.createQp(QpInitAttr.rc(cq));
        try (RawPeer raw = new RawPeer(ctx.queryPort().udpPort())) {
            IbConnectionManager cm = (IbConnectionManager) ctx.rdmaCm();
            Listener l = cm.listen(new InetSocketAddress(LO, 0));
            raw.send(raw.req(0x8181, l.address().getPort(), 0x81).toMad(31));
            ConnectRequest r = l.poll(T);
            assertNotNull(r);
            Connection c = r.accept(qp, ConnParam.defaults(), T);
            byte[] m = raw.receive(5000);
            assertNotNull(m, "the REP");
            CmRep rep = (CmRep) CmMessage.decode(m, 0, Mad.LENGTH);
            raw.send(new CmRtu(0x8181, rep.localCommId(), null).toMad(31));
            long until = System.nanoTime() + T.toNanos();
            while (cm.stateOf(c) != IbConnectionManager.State.ESTABLISHED) {
                assertTrue(System.nanoTime() - until < 0, "not established: " + cm.stateOf(c));
                Thread.onSpinWait();
            }
            // accepted, never confirmed (REP_SENT)
            QueuePair qp3 = pd.createQp(QpInitAttr.rc(cq));
            raw.send(raw.req(0x8383, l.address().getPort(), 0x83).toMad(33));
            ConnectRequest r3 = l.poll(T);
            assertNotNull(r3);
            Connection c3 = r3.accept(qp3, ConnParam.defaults(), T);
            // waiting for the application (REQ_RCVD)
            raw.send(raw.req(0x8282, l.address().getPort(), 0x82).toMad(32));
            awaitBacklog(l);

            qp3.close();
            qp.close();
            cq.close();
            pd.close();
            long t0 = System.nanoTime();
            ctx.close();
            long took = System.nanoTime() - t0;
            assertTrue(took < 3_000_000_000L, "the context's close took " + took / 1_000_000 + " ms");

            io.jrdma.wire.mad.CmDreq dreq = null;
            CmRej rej = null;
            CmRej rej3 = null;
            for (byte[] x; (dreq == null || rej == null || rej3 == null) && (x = raw.receive(5000)) != null; ) {
                CmMessage msg = CmMessage.decode(x, 0, Mad.LENGTH);
                if (msg instanceof io.jrdma.wire.mad.CmDreq d) {
                    dreq = d;
                } else if (msg instanceof CmRej j && j.remoteCommId() == 0x8383) {
                    rej3 = j;
                } else if (msg instanceof CmRej j) {
                    rej = j;
                } // else the REP (and its retries) of the unconfirmed connection
            }
            assertNotNull(dreq, "a DREQ for the established connection");
            assertEquals(rep.localCommId(), dreq.localCommId());
            assertEquals(0x8181, dreq.remoteCommId());
            assertEquals(0x81, dreq.remoteQpn());
            assertNotNull(rej, "a REJ for the waiting request");
            assertEquals(0x8282, rej.remoteCommId());
            assertEquals(CmRej.REJECTED_REQ, rej.messageRejected());
            assertEquals(CmRej.REASON_CONSUMER_DEFINED, rej.reason());
            assertNotNull(rej3, "a REJ withdrawing the REP of the unconfirmed connection");
            assertEquals(CmRej.REJECTED_OTHER, rej3.messageRejected());
            assertEquals(CmRej.REASON_CONSUMER_DEFINED, rej3.reason());
            assertNull(raw.receive(300), "each once, nothing more");
            l.close();
            c.close();
            c3.close();
        }
    }

    @Test
    void reqRetryGetsTheSameRepAndBadMadsAreCounted() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            // bad input first: a MAD of another class, a short datagram, a REQ whose rdma_cm header is garbage
            byte[] sa = new byte[Mad.LENGTH];
            new Mad(1, 0x03, 2, 1, 0, 0, 9, 0x10, 0).encode(sa, 0);
            raw.send(sa);
            raw.send(new byte[100]);
            CmReq req = raw.req(0x0BADF00D, l.address().getPort(), 0x99);
            byte[] garbage = req.toMad(5);
            garbage[Mad.HEADER + 140 + 1] = 0x50; // IP version 5
            raw.send(garbage);
            assertNull(raw.receive(300), "bad MADs get no answer");
            long deadline = System.nanoTime() + T.toNanos();
            while (s.ctx.counters().get("cm_mads_bad") < 2 || s.ctx.counters().get("gsi_mads_dropped") < 1) {
                assertTrue(System.nanoTime() - deadline < 0, "counted: " + s.ctx.counters());
                Thread.onSpinWait();
            }

            raw.send(req.toMad(77));
            ConnectRequest r = l.poll(T);
            assertNotNull(r);
            assertEquals(new InetSocketAddress(LO, 40000), r.peerAddress());
            CompletableFuture<Connection> accepted = CompletableFuture.supplyAsync(() -> r.accept(s.qp,
                    ConnParam.defaults(), T));
            byte[] rep1 = raw.receive(5000);
            assertNotNull(rep1, "REP");
            CmRep rep = (CmRep) CmMessage.decode(rep1, 0, Mad.LENGTH);
            assertEquals(77, Mad.decode(rep1, 0, Mad.LENGTH).tid(), "the REP answers in the REQ's transaction");
            assertEquals(req.localCommId(), rep.remoteCommId());
            assertEquals(s.qp.qpn(), rep.localQpn());
            assertEquals(1, rep.responderResources()); // min(16, the REQ's initiator depth 1)
            raw.send(req.toMad(77)); // the REQ again: our REP was "lost"
            byte[] rep2 = raw.receive(5000);
            assertArrayEquals(rep1, rep2, "a REQ retry is answered with the REP already sent");
            raw.send(new CmRtu(req.localCommId(), rep.localCommId(), null).toMad(77));
            Connection c = accepted.get(20, TimeUnit.SECONDS);
            assertEquals(0x99, c.peerQpn());
            assertEquals(QpState.RTS, s.qp.state());
            // as Linux: the passive side sends from the REQ's starting PSN and receives from the REP's
            assertEquals(req.startingPsn(), s.qp.query().sqPsn());
            assertEquals(rep.startingPsn(), s.qp.query().rqPsn());
        }
    }

    @Test
    void aReqFloodIsBoundedAndAnUnansweredRepTimesOut() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            int n = 200;
            int rejected = 0;
            for (int i = 0; i < n; i++) {
                raw.send(raw.req(0x10000 + i, l.address().getPort(), 0x100 + i).toMad(i));
                if (i % 16 == 15) {
                    for (byte[] m; (m = raw.receive(50)) != null; ) {
                        CmRej rej = (CmRej) CmMessage.decode(m, 0, Mad.LENGTH);
                        assertEquals(IbConnectionManager.REASON_NO_RESOURCES, rej.reason());
                        rejected++;
                    }
                }
            }
            for (byte[] m; (m = raw.receive(500)) != null; ) {
                rejected++;
            }
            // the listener holds its backlog (64); the rest were refused, none kept (a ring overrun only drops)
            int held = 0;
            while (l.poll(Duration.ZERO) != null) {
                held++;
            }
            assertEquals(IbConnectionManager.BACKLOG, held);
            // what reached the engine (a loaded host's kernel may drop some of the flood before it) went into the
            // GSI's ring or was dropped at it; what went into the ring was held or refused, nothing kept beyond
            var c = s.ctx.counters();
            assertEquals((long) c.get("rcvd_pkts"), c.get("gsi_mads_rcvd") + c.get("gsi_mads_dropped"), c.toString());
            assertEquals((long) c.get("gsi_mads_rcvd"), held + rejected, "each REQ in the ring held or refused: " + c);
            assertTrue(rejected > 0 && c.get("rcvd_pkts") <= n, c.toString());
        }
        // half-open: the client sends no RTU; accept returns at once, and the connection ends at the deadline
        // through its own events, the client told with a REJ
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            raw.send(raw.req(0x4242, l.address().getPort(), 0x55).toMad(1));
            ConnectRequest r = l.poll(T);
            long t0 = System.nanoTime();
            Connection c = r.accept(s.qp, ConnParam.defaults(), Duration.ofMillis(700));
            long took = System.nanoTime() - t0;
            assertTrue(took < 500_000_000L, "accept waited " + took / 1_000_000 + " ms: it must not wait for the RTU");
            assertEquals(QpState.RTS, s.qp.state(), "accepted: the QP is in RTS before the RTU");
            assertNull(c.pollEvent(Duration.ZERO), "nothing before the deadline");
            assertEquals(Event.DISCONNECTED, c.pollEvent(T), "the unconfirmed connection ends");
            long ended = System.nanoTime() - t0;
            assertTrue(ended >= 700_000_000L && ended < 2_700_000_000L, "ended after " + ended / 1_000_000
                    + " ms, its deadline 700 ms");
            assertEquals(QpState.ERROR, s.qp.state());
            assertEquals(Event.TIMEWAIT_EXIT, c.pollEvent(T));
            assertNull(c.pollEvent(Duration.ZERO));
            assertEquals(1L, s.ctx.counters().get("ibcm_rtu_timed_out"));
            c.close(); // over already: nothing more is sent
            assertNull(c.pollEvent(Duration.ZERO));
            CmRej rej = null;
            for (byte[] m; rej == null && (m = raw.receive(2000)) != null; ) {
                if (CmMessage.decode(m, 0, Mad.LENGTH) instanceof CmRej j) {
                    rej = j; // after the REP and its retry
                }
            }
            assertNotNull(rej, "a REJ after the REP went unconfirmed");
            assertEquals(CmRej.REASON_TIMEOUT, rej.reason());
            assertEquals(0x4242, rej.remoteCommId());
            // a REJ 4 is matched by the ARI's CA GUID (Linux's cm_acquire_rejected_id): the one the REP carried
            assertEquals(((IbConnectionManager) s.ctx.rdmaCm()).caGuid(), ByteBuffer.wrap(rej.ari()).getLong());
        }
    }

    @Test
    void aRequestOnTheQpConfirmsAnAcceptedConnectionWhoseRtuWasLost() throws Exception {
        // IBA's "communication established": the client's RTU never comes, but its first SEND does
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            raw.send(raw.req(0x7777, l.address().getPort(), 0x66).toMad(9));
            ConnectRequest r = l.poll(T);
            assertNotNull(r);
            Duration deadline = Duration.ofMillis(1200);
            long t0 = System.nanoTime();
            Connection c = r.accept(s.qp, ConnParam.defaults(), deadline);
            assertEquals(0, s.qp.postRecv(new RecvWorkRequest().wrId(5).sge(0, s.mr, 0, 64)));
            byte[] m = raw.receive(5000);
            assertNotNull(m, "REP");
            CmRep rep = (CmRep) CmMessage.decode(m, 0, Mad.LENGTH);
            raw.sendRc(rep.localQpn(), rep.startingPsn(),
                    "hi, no RTU!!".getBytes(java.nio.charset.StandardCharsets.US_ASCII)); // 12 bytes, no pad
            WorkCompletion wc = new WorkCompletion();
            long until = System.nanoTime() + T.toNanos();
            while (s.cq.poll(wc) == 0) {
                assertTrue(System.nanoTime() - until < 0, "the SEND did not arrive: " + s.ctx.counters());
                Thread.onSpinWait();
            }
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals("hi, no RTU!!", s.buf.getString(0).substring(0, 12));
            // past the deadline, the connection is up: the request confirmed it
            long left = t0 + deadline.toNanos() + 800_000_000L - System.nanoTime();
            assertNull(c.pollEvent(Duration.ofNanos(Math.max(0, left))), "a confirmed connection stays up");
            assertEquals(QpState.RTS, s.qp.state());
            assertEquals(0L, s.ctx.counters().get("ibcm_rtu_timed_out"));
            for (byte[] x; (x = raw.receive(100)) != null; ) {
                assertTrue(CmMessage.decode(x, 0, Mad.LENGTH) instanceof CmRep, "only REP retries, no REJ: "
                        + CmMessage.decode(x, 0, Mad.LENGTH));
            }
        }
    }

    @Test
    void closingAnUnconfirmedConnectionWithdrawsTheRepWithAReject() throws Exception {
        try (Side s = new Side(ThreadingMode.DEDICATED); RawPeer raw = new RawPeer(s.ctx.queryPort().udpPort());
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(LO, 0))) {
            raw.send(raw.req(0x8888, l.address().getPort(), 0x67).toMad(4));
            ConnectRequest r = l.poll(T);
            assertNotNull(r);
            Connection c = r.accept(s.qp, ConnParam.defaults(), T);
            assertNotNull(raw.receive(5000), "REP");
            c.close();
            assertEquals(Event.DISCONNECTED, c.pollEvent(T));
            assertEquals(Event.TIMEWAIT_EXIT, c.pollEvent(T));
            assertEquals(QpState.ERROR, s.qp.state());
            CmRej rej = null;
            for (byte[] m; rej == null && (m = raw.receive(2000)) != null; ) {
                if (CmMessage.decode(m, 0, Mad.LENGTH) instanceof CmRej j) {
                    rej = j;
                }
            }
            assertNotNull(rej, "a REJ withdraws the REP");
            assertEquals(CmRej.REASON_CONSUMER_DEFINED, rej.reason());
            assertEquals(0x8888, rej.remoteCommId());
            assertEquals(0L, s.ctx.counters().get("ibcm_rtu_timed_out"), "closed by the application, not timed out");
            // the RTU that comes after is for nobody: dropped and counted
            long bad = s.ctx.counters().get("cm_mads_bad");
            raw.send(new CmRtu(0x8888, rej.localCommId(), null).toMad(4));
            long until = System.nanoTime() + T.toNanos();
            while (s.ctx.counters().get("cm_mads_bad") == bad) {
                assertTrue(System.nanoTime() - until < 0, "counted: " + s.ctx.counters());
                Thread.onSpinWait();
            }
            assertNull(c.pollEvent(Duration.ZERO));
        }
    }
}

package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.wire.iwarp.Crc32c;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.MpaRequestReply;
import io.jrdma.wire.iwarp.Rdmap;
import io.jrdma.wire.iwarp.Terminate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Malformed bytes fed into an established iWARP connection by a hand-written MPA peer: each must
 * be answered with exactly the TERMINATE siw would send (layer, type, code, the copied DDP header),
 * move the jrdma QP to ERROR with its receives flushed, and leave registered memory untouched.
 * The jrdma side runs in INVOKER mode: the test thread drives it, no sleeps.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IwarpErrorPathTest {
    private static final long DEADLINE = Duration.ofSeconds(10).toNanos();
    /** The tag of a test whose context sends every FPDU's payload copied (zero copy off). */
    private static final String COPYING = "copying";
    private Arena arena;
    private Context ctx;
    private ProtectionDomain pd;
    private MemorySegment buf;
    private MemoryRegion mr;
    private CompletionQueue cq;
    private QueuePair qp;
    private ConnectionManager.Listener listener;
    private ConnectionManager.Connection conn;
    private SocketChannel peer;
    private boolean crc;

    @BeforeEach
    void open(TestInfo test) {
        arena = Arena.ofShared();
        InetAddress lo = InetAddress.getLoopbackAddress();
        // the direct-placement tests need zero copy; the copying transmitter's test needs it off; the rest do not care
        System.setProperty(IwarpEngine.ZERO_COPY_PROPERTY, String.valueOf(!test.getTags().contains(COPYING)));
        try {
            ctx = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                    .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        } finally {
            System.clearProperty(IwarpEngine.ZERO_COPY_PROPERTY);
        }
        pd = ctx.allocPd();
        buf = arena.allocate(1 << 16, 4096);
        buf.fill((byte) 0xA5);
        mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        cq = ctx.createCq(16);
        qp = pd.createQp(QpInitAttr.rc(cq));
        listener = ctx.connectionManager().listen(new InetSocketAddress(lo, 0));
    }

    @AfterEach
    void close() throws IOException {
        if (peer != null) {
            peer.close();
        }
        if (conn != null) {
            conn.close();
        }
        listener.close();
        qp.close();
        cq.close();
        mr.close();
        pd.close();
        ctx.close();
        arena.close();
    }

    /** Connects a raw MPA client (no jrdma block: a plain iWARP peer) and waits for the accept. */
    private void connectRawPeer(boolean wantCrc) throws Exception {
        CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() -> {
            ConnectionManager.ConnectRequest r = listener.poll(Duration.ofSeconds(10));
            return r.accept(qp, ConnParam.defaults(), Duration.ofSeconds(10));
        });
        peer = SocketChannel.open(listener.address());
        MpaRequestReply reply = RawMpa.request(peer, wantCrc, new byte[0]);
        assertEquals(wantCrc, reply.crc(), "the server uses CRC exactly when the initiator asked for it");
        conn = accepted.get(10, TimeUnit.SECONDS);
        assertEquals(QpState.RTS, qp.state());
        crc = wantCrc;
        peer.configureBlocking(false);
    }

    private void send(MemorySegment fpdu, int len) throws IOException {
        ByteBuffer b = fpdu.asSlice(0, len).asByteBuffer();
        while (b.hasRemaining()) {
            peer.write(b);
        }
    }

    /** An FPDU around a ULPDU already written at offset 2 of {@code f}; @return its length */
    private int seal(MemorySegment f, int ulpdu) {
        Fpdu.writeHeader(f, 0, ulpdu);
        return Fpdu.seal(f, 0, ulpdu, crc);
    }

    /** Drives the jrdma engine until the peer has read one whole FPDU; @return it */
    private MemorySegment readFpdu() throws IOException {
        ByteBuffer in = ByteBuffer.allocate(4096);
        MemorySegment s = MemorySegment.ofBuffer(in);
        long end = System.nanoTime() + DEADLINE;
        while (System.nanoTime() - end < 0) {
            ctx.progress();
            if (peer.read(in) < 0 && in.position() == 0) {
                fail("the connection closed without a TERMINATE");
            }
            int total = Fpdu.scan(s, 0, in.position(), Fpdu.MAX_ULPDU_LENGTH);
            if (total > 0) {
                return s.asSlice(0, total);
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no FPDU from the jrdma side within 10 s");
    }

    /** Reads the TERMINATE and checks its headers; @return the offset of its Terminate header in it */
    private MemorySegment expectTerminate(int layer, int etype, int code, int hdrCtl) throws IOException {
        MemorySegment f = readFpdu();
        int ddp = Fpdu.ULPDU_OFFSET;
        int payload = Fpdu.check(f, 0, f.byteSize(), crc, Fpdu.MAX_ULPDU_LENGTH);
        assertTrue(payload > 0, "the TERMINATE is a valid FPDU (CRC " + crc + "): " + payload);
        assertEquals(Rdmap.TERMINATE, Rdmap.opcode(f, ddp), "opcode");
        assertEquals(Rdmap.QN_TERMINATE, Ddp.queueNumber(f, ddp), "QN 2");
        assertEquals(1, Ddp.msn(f, ddp), "the first TERMINATE has MSN 1");
        assertEquals(0, Ddp.messageOffset(f, ddp), "MO 0");
        assertTrue(Ddp.last(f, ddp), "L");
        int t = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        assertEquals(layer, Terminate.layer(f, t), "layer");
        assertEquals(etype, Terminate.errorType(f, t), "error type");
        assertEquals(code, Terminate.errorCode(f, t), "error code");
        assertEquals(hdrCtl, Terminate.headerControl(f, t) & 0xE0, "M/D/R bits");
        return f.asSlice(t);
    }

    /** The jrdma QP ends in ERROR, its posted receive is flushed, the connection is closed, memory untouched. */
    private void expectErrorAndFlush(long wrId) throws IOException {
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() - end > 0) {
                fail("the receive was not flushed; QP " + qp.state());
            }
        }
        assertEquals(wrId, wc.wrId());
        assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(), wc.toString());
        assertEquals(QpState.ERROR, qp.state());
        ByteBuffer rest = ByteBuffer.allocate(64);
        while (true) {
            ctx.progress();
            int n = peer.read(rest);
            if (n < 0) {
                break;
            }
            assertEquals(0, rest.position(), "nothing follows the TERMINATE");
            if (System.nanoTime() - end > 0) {
                fail("the jrdma side did not close the connection after its TERMINATE");
            }
        }
        for (long i = 0; i < buf.byteSize(); i++) {
            if (buf.get(ValueLayout.JAVA_BYTE, i) != (byte) 0xA5) {
                fail("byte " + i + " of the registered region was written");
            }
        }
    }

    private void postRecv(long wrId) {
        assertEquals(0, qp.postRecv(new RecvWorkRequest().wrId(wrId).sge(0, mr, 0, 4096)));
    }

    /** A SEND of {@code n} bytes with MSN {@code msn}, as a plain iWARP peer sends it. */
    private int sendFpdu(MemorySegment f, int msn, int n) {
        Ddp.writeUntagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.SEND), 0, Rdmap.QN_SEND, msn, 0);
        f.asSlice(Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH, n).fill((byte) 0x11);
        return seal(f, Ddp.UNTAGGED_HEADER_LENGTH + n);
    }

    @Test
    void wrongCrcIsAnLlpCrcError() throws Exception {
        connectRawPeer(true);
        postRecv(1);
        MemorySegment f = arena.allocate(256);
        int len = sendFpdu(f, 1, 40);
        int at = len - Crc32c.LENGTH;
        Crc32c.write(f, at, Crc32c.read(f, at) ^ 1);
        send(f, len);
        expectTerminate(Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_CRC_ERROR, 0);
        expectErrorAndFlush(1);
        assertEquals(1, ctx.counter(Counter.RCVD_MPA_CRC_ERR));
    }

    /** A WRITE of {@code n} bytes (pattern {@code seed}) to {@code mr} at offset {@code at}, as a plain peer sends it. */
    private int writeFpdu(MemorySegment f, int at, int n, int seed) {
        Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.WRITE), mr.rkey(), mr.address() + at);
        for (int i = 0; i < n; i++) {
            f.set(ValueLayout.JAVA_BYTE, Fpdu.ULPDU_OFFSET + Ddp.TAGGED_HEADER_LENGTH + i, (byte) (i * 7 + seed));
        }
        return seal(f, Ddp.TAGGED_HEADER_LENGTH + n);
    }

    /** Sends an FPDU in two pieces, driving the engine in between, so that its payload is read straight into the region. */
    private void sendSplit(MemorySegment f, int len, int first) throws IOException {
        send(f, first);
        for (int i = 0; i < 50; i++) {
            ctx.progress();
        }
        ByteBuffer b = f.asSlice(first, len - first).asByteBuffer();
        while (b.hasRemaining()) {
            peer.write(b);
        }
    }

    @Test
    void largeWriteIsReadStraightIntoTheRegion() throws Exception {
        connectRawPeer(true);
        MemorySegment f = arena.allocate(70_000);
        int n = 60_000;
        int len = writeFpdu(f, 100, n, 3);
        long placed = IwarpEngine.of(ctx).zeroCopyPlaced;
        sendSplit(f, len, 1000);
        long end = System.nanoTime() + DEADLINE;
        while (IwarpEngine.of(ctx).zeroCopyPlaced == placed) {
            ctx.progress();
            assertTrue(System.nanoTime() - end < 0, "the WRITE was not placed directly within 10 s");
        }
        for (int i = 0; i < n; i++) {
            assertEquals((byte) (i * 7 + 3), buf.get(ValueLayout.JAVA_BYTE, 100 + i), "byte " + i);
        }
        assertEquals((byte) 0xA5, buf.get(ValueLayout.JAVA_BYTE, 99));
        assertEquals((byte) 0xA5, buf.get(ValueLayout.JAVA_BYTE, 100 + n));
        assertEquals(QpState.RTS, qp.state());
        assertEquals(0, ctx.counter(Counter.RCVD_MPA_CRC_ERR));
    }

    @Test
    void wrongCrcOfADirectlyPlacedWriteIsStillAnLlpCrcError() throws Exception {
        connectRawPeer(true);
        postRecv(1);
        MemorySegment f = arena.allocate(70_000);
        int len = writeFpdu(f, 0, 60_000, 5);
        f.set(ValueLayout.JAVA_BYTE, len - 9, (byte) ~f.get(ValueLayout.JAVA_BYTE, len - 9)); // a payload byte
        long placed = IwarpEngine.of(ctx).zeroCopyPlaced;
        sendSplit(f, len, 1000);
        expectTerminate(Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_CRC_ERROR, 0);
        assertEquals(1, ctx.counter(Counter.RCVD_MPA_CRC_ERR));
        assertEquals(placed, IwarpEngine.of(ctx).zeroCopyPlaced, "the FPDU does not count as placed");
        // the payload went to the region before its CRC could be checked (as siw): only the error says it is bad
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            ctx.progress();
            assertTrue(System.nanoTime() - end < 0, "the receive was not flushed");
        }
        assertEquals(WcStatus.WR_FLUSH_ERR, wc.status());
        assertEquals(QpState.ERROR, qp.state());
    }

    @Test
    void writeToAnUnknownStagIsADdpTaggedInvalidStag() throws Exception {
        connectRawPeer(false);
        postRecv(2);
        MemorySegment f = arena.allocate(256);
        Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.WRITE), mr.rkey() ^ 0x0F00_0000,
                mr.address());
        int len = seal(f, Ddp.TAGGED_HEADER_LENGTH + 64);
        send(f, len);
        MemorySegment t = expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED,
                Terminate.DDP_TAGGED_INVALID_STAG, Terminate.FLAG_M | Terminate.FLAG_D);
        assertEquals(Ddp.TAGGED_HEADER_LENGTH + 64, Terminate.segmentLength(t, 0), "the failed DDP segment's length");
        assertArrayEquals(f.asSlice(Fpdu.ULPDU_OFFSET, Ddp.TAGGED_HEADER_LENGTH).toArray(ValueLayout.JAVA_BYTE),
                t.asSlice(Terminate.DDP_HEADER_OFFSET, Ddp.TAGGED_HEADER_LENGTH).toArray(ValueLayout.JAVA_BYTE),
                "the TERMINATE carries the failed DDP header");
        expectErrorAndFlush(2);
    }

    @Test
    void writePastTheRegionIsADdpTaggedBoundsError() throws Exception {
        connectRawPeer(false);
        postRecv(3);
        MemorySegment f = arena.allocate(256);
        Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.WRITE), mr.rkey(),
                mr.address() + mr.length() - 8);
        send(f, seal(f, Ddp.TAGGED_HEADER_LENGTH + 9));
        expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, Terminate.DDP_TAGGED_BASE_BOUNDS,
                Terminate.FLAG_M | Terminate.FLAG_D);
        expectErrorAndFlush(3);
    }

    @Test
    void msnGapIsADdpUntaggedMsnError() throws Exception {
        connectRawPeer(false);
        postRecv(4);
        MemorySegment f = arena.allocate(256);
        send(f, sendFpdu(f, 2, 16)); // the first SEND must carry MSN 1
        MemorySegment t = expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, Terminate.FLAG_M | Terminate.FLAG_D);
        assertEquals(2, Ddp.msn(t, Terminate.DDP_HEADER_OFFSET), "the copied header has the bad MSN");
        expectErrorAndFlush(4);
    }

    @Test
    void sendWithoutAReceiveIsNoBuffer() throws Exception {
        connectRawPeer(false);
        MemorySegment f = arena.allocate(256);
        send(f, sendFpdu(f, 1, 16));
        expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                Terminate.DDP_UNTAGGED_INVALID_MSN_NO_BUFFER, Terminate.FLAG_M | Terminate.FLAG_D);
        postRecv(5); // posted in ERROR: flushed
        expectErrorAndFlush(5);
    }

    @Test
    void truncatedFpduIsAnLlpLengthError() throws Exception {
        connectRawPeer(false);
        postRecv(6);
        MemorySegment f = arena.allocate(256);
        int len = sendFpdu(f, 1, 100);
        send(f, len / 2);
        peer.shutdownOutput(); // the stream ends inside the FPDU
        expectTerminate(Terminate.LAYER_LLP, Terminate.LLP_ETYPE_MPA, Terminate.LLP_ULPDU_LENGTH, 0);
        expectErrorAndFlush(6);
    }

    @Test
    void wellFormedSendIsPlacedThenAGoodPeerCloseFlushes() throws Exception {
        connectRawPeer(true);
        postRecv(7);
        postRecv(8);
        MemorySegment f = arena.allocate(256);
        send(f, sendFpdu(f, 1, 24));
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() - end < 0, "no receive completion");
        }
        assertEquals(7, wc.wrId());
        assertEquals(WcStatus.SUCCESS, wc.status());
        assertEquals(24, wc.byteLen());
        byte[] want = new byte[24];
        Arrays.fill(want, (byte) 0x11);
        assertArrayEquals(want, buf.asSlice(0, 24).toArray(ValueLayout.JAVA_BYTE));
        buf.asSlice(0, 24).fill((byte) 0xA5);
        peer.close(); // an orderly close between messages: ERROR and flush, no TERMINATE
        peer = null;
        end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() - end < 0, "the second receive was not flushed");
        }
        assertEquals(8, wc.wrId());
        assertEquals(WcStatus.WR_FLUSH_ERR, wc.status());
        assertEquals(0, ctx.counter(Counter.SENT_TERMINATES));
    }

    /**
     * A READ's sink looked up again when its response arrives (found in review): the sink region deregistered after
     * the READ Request left, its response (64 bytes, placed from the buffer; 60,000 bytes in two pieces, which the
     * direct placement would read straight into the region) writes nothing, the READ completes with LOC_PROT_ERR,
     * the peer gets a TERMINATE for the sink's STag (DDP, tagged buffer, invalid STag) and the QP enters ERROR.
     */
    @Test
    void aReadResponseIntoASinkDeregisteredMeanwhileIsALocalProtectionError() throws Exception {
        readIntoAGoneSink(64, false);
    }

    @Test
    void aLargeReadResponseIntoASinkDeregisteredMeanwhileIsNotPlacedDirectly() throws Exception {
        readIntoAGoneSink(60_000, true);
    }

    private void readIntoAGoneSink(int n, boolean split) throws Exception {
        connectRawPeer(false);
        MemoryRegion sink = pd.register(buf.asSlice(4096, n), Access.LOCAL_WRITE);
        assertEquals(0, qp.postSend(new io.jrdma.verbs.SendWorkRequest().wrId(7)
                .opcode(io.jrdma.verbs.WrOpcode.RDMA_READ).flags(io.jrdma.verbs.SendFlags.SIGNALED)
                .sge(0, sink, 0, n).remote(0x10000, 0x1234)));
        MemorySegment req = readFpdu();
        assertEquals(Rdmap.READ_REQUEST, Rdmap.opcode(req, Fpdu.ULPDU_OFFSET), "the READ Request left");
        sink.close();
        MemorySegment f = arena.allocate(n + 64);
        Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.READ_RESPONSE), sink.lkey(),
                sink.address());
        f.asSlice(Fpdu.ULPDU_OFFSET + Ddp.TAGGED_HEADER_LENGTH, n).fill((byte) 0x11);
        int len = seal(f, Ddp.TAGGED_HEADER_LENGTH + n);
        if (split) {
            sendSplit(f, len, 1000);
        } else {
            send(f, len);
        }
        expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, Terminate.DDP_TAGGED_INVALID_STAG,
                Terminate.FLAG_M | Terminate.FLAG_D);
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() - end < 0, "the READ did not complete");
        }
        assertEquals(7, wc.wrId());
        assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
        assertEquals(QpState.ERROR, qp.state());
        for (long i = 0; i < buf.byteSize(); i++) {
            if (buf.get(ValueLayout.JAVA_BYTE, i) != (byte) 0xA5) {
                fail("byte " + i + " of the buffer was written");
            }
        }
    }

    /**
     * A WRITE's source looked up again for each FPDU, copied (found in review): the region deregistered while the
     * WRITE is part way sent (the peer reads nothing, so the socket fills), the rest of it is not read: the WRITE
     * completes with LOC_PROT_ERR once the peer takes what was queued before, and the QP enters ERROR.
     */
    @Test
    @Tag(COPYING)
    void aWriteWhoseSourceIsDeregisteredPartWayIsALocalProtectionError() throws Exception {
        connectRawPeer(false);
        int n = 64 << 20; // more than both sockets' buffers hold
        MemorySegment big = arena.allocate(n, 4096);
        MemoryRegion src = pd.register(big, 0);
        assertEquals(0, qp.postSend(new io.jrdma.verbs.SendWorkRequest().wrId(9)
                .opcode(io.jrdma.verbs.WrOpcode.RDMA_WRITE).flags(io.jrdma.verbs.SendFlags.SIGNALED)
                .sge(0, src, 0, n).remote(0x10000, 0x1234)));
        WorkCompletion wc = new WorkCompletion();
        for (int i = 0; i < 2000; i++) {
            assertEquals(0, cq.poll(wc), "the WRITE completed with the peer reading nothing: " + wc);
        }
        src.close();
        ByteBuffer sink = ByteBuffer.allocate(1 << 20);
        long got = 0;
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            int r = peer.read(sink.clear());
            got += Math.max(r, 0);
            assertTrue(System.nanoTime() - end < 0, "the WRITE did not complete");
        }
        assertEquals(9, wc.wrId());
        assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
        assertEquals(QpState.ERROR, qp.state());
        assertTrue(got < n, "the peer got " + got + " bytes, fewer than the WRITE's " + n);
        big.fill((byte) 0); // still the test's: only the registration is gone
    }

    // ------------------------------------------------------------------ fast registration under queued or placed payloads

    /** Drives the engine until the send completion of {@code wrId} arrives; @return it */
    private WorkCompletion awaitCompletion(long wrId) {
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        while (true) {
            ctx.progress();
            if (cq.poll(wc) > 0) {
                assertEquals(wrId, wc.wrId(), wc.toString());
                return wc;
            }
            assertTrue(System.nanoTime() - end < 0, "no completion for " + wrId + " within 10 s");
        }
    }

    private static io.jrdma.verbs.SendWorkRequest signaled(long wrId) {
        return new io.jrdma.verbs.SendWorkRequest().wrId(wrId).flags(io.jrdma.verbs.SendFlags.SIGNALED);
    }

    /** REG_MR of {@code fast} onto {@code seg} with key {@code key}, completed SUCCESS. */
    private void fastRegister(MemoryRegion fast, MemorySegment seg, int key, int access) {
        assertEquals(0, qp.postSend(signaled(100).regMr(fast, seg, key, access)));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(100).status());
    }

    /**
     * The peer reads FPDUs (the engine driven meanwhile) until {@code n} WRITE payload bytes arrived, a TERMINATE
     * did, the connection closed or the deadline passed. @return the WRITE payload bytes received, in order
     */
    private byte[] peerReadsWrites(int n) throws IOException {
        ByteBuffer in = ByteBuffer.allocate(1 << 18);
        MemorySegment seg = MemorySegment.ofBuffer(in);
        byte[] got = new byte[n];
        int have = 0;
        int at = 0;
        long end = System.nanoTime() + DEADLINE;
        while (have < n && System.nanoTime() - end < 0) {
            ctx.progress();
            if (peer.read(in) < 0) {
                break;
            }
            int total;
            while ((total = Fpdu.scan(seg, at, in.position() - at, Fpdu.MAX_ULPDU_LENGTH)) > 0) {
                int ddp = at + Fpdu.ULPDU_OFFSET;
                int op = Rdmap.opcode(seg, ddp);
                if (op == Rdmap.TERMINATE) {
                    return Arrays.copyOf(got, have);
                }
                if (op == Rdmap.WRITE) {
                    int len = Fpdu.ulpduLength(seg, at) - Ddp.TAGGED_HEADER_LENGTH;
                    MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, ddp + Ddp.TAGGED_HEADER_LENGTH, got, have, len);
                    have += len;
                }
                at += total;
            }
            int keep = in.position() - at;
            MemorySegment.copy(seg, at, seg, 0, keep);
            in.position(keep);
            at = 0;
        }
        return Arrays.copyOf(got, have);
    }

    /**
     * A zero-copy WRITE payload queued from a fast-registration region and the region registered again onto other
     * memory before the socket took it (found in review): an unfenced WRITE of 60,000 bytes from F (mapping S1, all
     * 0x11) at offset 1000, then LOCAL_INV and REG_MR of F onto S2 (all 0x22), in one send queue. The transmitter
     * queues the FPDU (its header, a view of S1, its trailer) and runs both local operations before the socket is
     * written; the payload still leaves from S1, the memory it was queued from and its CRC was computed over,
     * where the write read S2 (the view's position added to the region's new address).
     */
    @Test
    void aPayloadQueuedBeforeItsRegionIsRegisteredElsewhereLeavesFromTheMemoryItWasQueuedFrom() throws Exception {
        connectRawPeer(false);
        MemoryRegion fast = pd.allocMr(1 << 16);
        try {
            MemorySegment s1 = arena.allocate(1 << 16, 4096).fill((byte) 0x11);
            MemorySegment s2 = arena.allocate(1 << 16, 4096).fill((byte) 0x22);
            int k1 = io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey());
            int k2 = io.jrdma.verbs.MemoryWindow.incRkey(k1);
            fastRegister(fast, s1, k1, Access.LOCAL_WRITE);
            int n = 60_000;
            long sent = IwarpEngine.of(ctx).zeroCopySent;
            assertEquals(0, qp.postSend(signaled(1).opcode(io.jrdma.verbs.WrOpcode.RDMA_WRITE)
                    .sge(0, s1.address() + 1000, n, k1).remote(0x10000, 0x1234)));
            assertEquals(0, qp.postSend(signaled(2).localInv(k1)));
            assertEquals(0, qp.postSend(signaled(3).regMr(fast, s2, k2, Access.LOCAL_WRITE)));
            byte[] got = peerReadsWrites(n);
            assertTrue(IwarpEngine.of(ctx).zeroCopySent > sent, "the payload was queued as a view of its region");
            for (int i = 0; i < got.length; i++) {
                assertEquals((byte) 0x11, got[i], "payload byte " + i + " (0x22: read from the new mapping)");
            }
            WorkCompletion write = awaitCompletion(1);
            if (got.length < n) {
                assertEquals(WcStatus.LOC_PROT_ERR, write.status(), "a WRITE cut short fails: " + write);
            } else {
                assertEquals(WcStatus.SUCCESS, write.status(), write.toString());
                assertEquals(WcStatus.SUCCESS, awaitCompletion(2).status());
                assertEquals(WcStatus.SUCCESS, awaitCompletion(3).status());
                assertEquals(QpState.RTS, qp.state());
            }
        } finally {
            fast.close();
        }
    }

    /**
     * A WRITE being read straight into a fast-registration region whose key is invalidated and registered again
     * onto other memory between two reads of its payload (found in review): the rest of the payload is not placed
     * (the direct placement looked the key up only at the FPDU's start, then placed through the region's new
     * mapping), the peer gets a TERMINATE (DDP, tagged buffer, invalid STag) and the QP enters ERROR. The new
     * mapping covers the old one, so that the new views would have taken the bytes.
     */
    @Test
    void aWriteBeingPlacedDirectlyIsCheckedAgainAfterItsKeyIsInvalidatedAndRegisteredElsewhere() throws Exception {
        connectRawPeer(true);
        MemoryRegion fast = pd.allocMr(1 << 17);
        try {
            MemorySegment big = arena.allocate(1 << 17, 4096).fill((byte) 0x33);
            MemorySegment s1 = big.asSlice(1 << 16, 1 << 16);
            int k1 = io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey());
            int k2 = io.jrdma.verbs.MemoryWindow.incRkey(k1);
            int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
            fastRegister(fast, s1, k1, access);
            int n = 60_000;
            MemorySegment f = arena.allocate(n + 64);
            Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.WRITE), k1, s1.address());
            f.asSlice(Fpdu.ULPDU_OFFSET + Ddp.TAGGED_HEADER_LENGTH, n).fill((byte) 0x44);
            int len = seal(f, Ddp.TAGGED_HEADER_LENGTH + n);
            int first = 1000;
            send(f, first);
            IwarpStream s = ((IwarpQp) qp).iw;
            long end = System.nanoTime() + DEADLINE;
            while (!s.dp) {
                ctx.progress();
                assertTrue(System.nanoTime() - end < 0, "the WRITE's direct placement did not start");
            }
            // both in one duty cycle of the send queue, between two reads
            assertEquals(0, qp.postSend(signaled(2).localInv(k1)));
            assertEquals(0, qp.postSend(signaled(3).regMr(fast, big, k2, access)));
            assertEquals(WcStatus.SUCCESS, awaitCompletion(2).status());
            assertEquals(WcStatus.SUCCESS, awaitCompletion(3).status());
            ByteBuffer rest = f.asSlice(first, len - first).asByteBuffer();
            while (rest.hasRemaining()) {
                peer.write(rest);
            }
            expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, Terminate.DDP_TAGGED_INVALID_STAG, 0);
            int here = first - Fpdu.ULPDU_OFFSET - Ddp.TAGGED_HEADER_LENGTH; // placed while the key was valid
            for (int i = 0; i < big.byteSize(); i++) {
                boolean placed = i >= (1 << 16) && i < (1 << 16) + here;
                assertEquals(placed ? (byte) 0x44 : (byte) 0x33, big.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            assertEquals(QpState.ERROR, qp.state());
        } finally {
            fast.close();
        }
    }

    /**
     * An orderly close after more complete FPDUs than one duty cycle processes (found in review): 300 SENDs written
     * at once, then the peer's FIN. Every SEND completes SUCCESS, then the QP enters ERROR and flushes, with no
     * TERMINATE and nothing counted malformed (the end of the stream was acted on before the FPDUs beyond the
     * cycle's budget of 256 were processed, and they were taken for a truncated one).
     */
    @Test
    void anOrderlyCloseAfterMoreFpdusThanOneCycleProcessesLosesNone() throws Exception {
        int sends = 300;
        qp.close();
        cq.close();
        cq = ctx.createCq(1024);
        qp = pd.createQp(QpInitAttr.rc(cq).withDepth(16, sends + 1));
        connectRawPeer(false);
        for (int i = 0; i <= sends; i++) {
            assertEquals(0, qp.postRecv(new RecvWorkRequest().wrId(i).sge(0, mr, 0, 64)));
        }
        MemorySegment all = arena.allocate(sends * 64L);
        MemorySegment f = arena.allocate(256);
        long at = 0;
        for (int i = 0; i < sends; i++) {
            int len = sendFpdu(f, i + 1, 16);
            MemorySegment.copy(f, 0, all, at, len);
            at += len;
        }
        send(all, (int) at);
        peer.shutdownOutput();
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        for (int i = 0; i <= sends; i++) {
            while (cq.poll(wc) == 0) {
                ctx.progress();
                assertTrue(System.nanoTime() - end < 0, "completion " + i + " did not come");
            }
            assertEquals(i, wc.wrId(), wc.toString());
            assertEquals(i < sends ? WcStatus.SUCCESS : WcStatus.WR_FLUSH_ERR, wc.status(), "receive " + i + ": " + wc);
        }
        assertEquals(QpState.ERROR, qp.state());
        assertEquals(0, ctx.counter(Counter.SENT_TERMINATES));
        assertEquals(0, ctx.counter(Counter.RCVD_MALFORMED));
        buf.asSlice(0, 16).fill((byte) 0xA5); // the SENDs' bytes, for the teardown's look
    }

    // ------------------------------------------------------------------ READ Responses from sources gone meanwhile

    /** A READ Request (MSN {@code msn}) as a plain peer sends it; @return its FPDU's length */
    private int readRequestFpdu(MemorySegment f, int msn, int srcStag, long srcTo, int size, int sinkStag) {
        Ddp.writeUntagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.READ_REQUEST), 0, Rdmap.QN_READ_REQUEST,
                msn, 0);
        io.jrdma.wire.iwarp.ReadRequest.write(f, Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH, sinkStag, 0, size,
                srcStag, srcTo);
        return seal(f, Ddp.UNTAGGED_HEADER_LENGTH + io.jrdma.wire.iwarp.ReadRequest.LENGTH);
    }

    /** What a reading peer saw: READ Response bytes per sink STag (1..4), how many were not 0x11, a TERMINATE, a SEND. */
    private static final class PeerLog {
        final long[] responseBytes = new long[5];
        /** READ Responses ended (L set), and how many had when the first SEND came (-1: none came) */
        int responses;
        int sendAfter = -1;
        /** the FPDU just read ended a READ Response */
        boolean responseEnded;
        long foreignBytes;
        int terminateLayer = -1;
        int terminateType = -1;
        int terminateCode = -1;
        boolean closed;
        /** opcodes of the FPDUs in order, up to 4096 of them */
        final int[] opcodes = new int[4096];
        int fpdus;
    }

    /**
     * The peer reads every FPDU (the engine driven meanwhile) until {@code done} says so, a TERMINATE arrives, the
     * connection closes or 10 s pass; for each FPDU {@code each} may send more.
     */
    private PeerLog peerReads(java.util.function.Predicate<PeerLog> done, java.util.function.Consumer<PeerLog> each)
            throws IOException {
        PeerLog log = new PeerLog();
        ByteBuffer in = ByteBuffer.allocate(1 << 20);
        MemorySegment seg = MemorySegment.ofBuffer(in);
        int at = 0;
        long end = System.nanoTime() + DEADLINE;
        while (!done.test(log)) {
            assertTrue(System.nanoTime() - end < 0, "the peer's reads did not end within 10 s");
            ctx.progress();
            if (peer.read(in) < 0) {
                log.closed = true;
                return log;
            }
            int total;
            while ((total = Fpdu.scan(seg, at, in.position() - at, Fpdu.MAX_ULPDU_LENGTH)) > 0) {
                int ddp = at + Fpdu.ULPDU_OFFSET;
                int op = Rdmap.opcode(seg, ddp);
                if (log.fpdus < log.opcodes.length) {
                    log.opcodes[log.fpdus] = op;
                }
                log.fpdus++;
                if (op == Rdmap.TERMINATE) {
                    int t = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
                    log.terminateLayer = Terminate.layer(seg, t);
                    log.terminateType = Terminate.errorType(seg, t);
                    log.terminateCode = Terminate.errorCode(seg, t);
                    return log;
                }
                log.responseEnded = op == Rdmap.READ_RESPONSE && Ddp.last(seg, ddp);
                if (log.responseEnded) {
                    log.responses++;
                }
                if (op == Rdmap.READ_RESPONSE) {
                    int len = Fpdu.ulpduLength(seg, at) - Ddp.TAGGED_HEADER_LENGTH;
                    int p = ddp + Ddp.TAGGED_HEADER_LENGTH;
                    for (int i = 0; i < len; i++) {
                        if (seg.get(ValueLayout.JAVA_BYTE, p + i) != (byte) 0x11) {
                            log.foreignBytes++;
                        }
                    }
                    log.responseBytes[Ddp.stag(seg, ddp) & 3] += len;
                }
                if (op == Rdmap.SEND && log.sendAfter < 0) {
                    log.sendAfter = log.responses;
                }
                at += total;
                each.accept(log);
            }
            int keep = in.position() - at;
            MemorySegment.copy(seg, at, seg, 0, keep);
            in.position(keep);
            at = 0;
        }
        return log;
    }

    /** Drives the engine until the socket refused some of what the jrdma side has to send (the peer reads nothing). */
    private void untilTheSocketIsFull() {
        long full = ctx.counter(Counter.SEND_ERR);
        long end = System.nanoTime() + DEADLINE;
        while (ctx.counter(Counter.SEND_ERR) == full) {
            ctx.progress();
            assertTrue(System.nanoTime() - end < 0, "the socket did not fill within 10 s");
        }
    }

    /**
     * A READ's source checked again when its response is sent (found in review): two READ Requests, the first of 64
     * MiB (more than the sockets hold, the peer reading nothing), the second of a region the application
     * deregisters while the first is still being answered. The second's response is not sent from the region gone
     * (the copying path read it anyway, the zero-copy path closed the stream without a word): the peer gets all of
     * the first response, then a TERMINATE (RDMAP, remote protection, invalid STag), and the QP enters ERROR.
     */
    @Test
    void aReadResponseFromASourceDeregisteredSinceTheRequestIsATerminate() throws Exception {
        readFromASourceDeregisteredSinceTheRequest();
    }

    @Test
    @Tag(COPYING)
    void aCopiedReadResponseFromASourceDeregisteredSinceTheRequestIsATerminate() throws Exception {
        readFromASourceDeregisteredSinceTheRequest();
    }

    private void readFromASourceDeregisteredSinceTheRequest() throws Exception {
        connectRawPeer(false);
        int bigN = 64 << 20;
        MemorySegment big = arena.allocate(bigN, 4096).fill((byte) 0x11);
        MemoryRegion bigMr = pd.register(big, Access.REMOTE_READ);
        MemorySegment src = arena.allocate(1 << 16, 4096).fill((byte) 0x11);
        MemoryRegion srcMr = pd.register(src, Access.REMOTE_READ);
        try {
            MemorySegment f = arena.allocate(256);
            send(f, readRequestFpdu(f, 1, bigMr.rkey(), big.address(), bigN, 1));
            send(f, readRequestFpdu(f, 2, srcMr.rkey(), src.address(), 60_000, 2));
            untilTheSocketIsFull();
            srcMr.close();
            PeerLog log = peerReads(l -> false, l -> { });
            assertEquals(bigN, log.responseBytes[1], "the first READ's response, whole");
            assertEquals(0, log.responseBytes[2], "no byte of the deregistered source");
            assertEquals(Terminate.LAYER_RDMAP, log.terminateLayer, "a TERMINATE came");
            assertEquals(Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, log.terminateType);
            assertEquals(Terminate.RDMAP_INVALID_STAG, log.terminateCode);
            assertEquals(QpState.ERROR, qp.state());
        } finally {
            srcMr.close();
            bigMr.close();
        }
    }

    /**
     * READs do not starve the send queue (found in review): the peer keeps two 16 MiB READs outstanding (a new one as
     * each response ends), more than the sockets hold, so the IRQ never empties; the application posts a SEND. It
     * goes out between two responses (the send queue gets a message after IRQ_MAXBURST_SQ_ACTIVE IRQ FPDUs, at the
     * end of the response being sent); it waited for an empty IRQ, which never came.
     */
    @Test
    void readsKeptOutstandingDoNotStarveTheSendQueue() throws Exception {
        connectRawPeer(false);
        assertTrue(((IwarpQp) qp).iw.irqCapacity >= 2, "IRD " + ((IwarpQp) qp).iw.irqCapacity);
        int size = 16 << 20;
        MemorySegment src = arena.allocate(size, 4096).fill((byte) 0x11);
        MemoryRegion srcMr = pd.register(src, Access.REMOTE_READ);
        try {
            MemorySegment f = arena.allocate(256);
            int[] msn = {1};
            for (; msn[0] <= 2; msn[0]++) {
                send(f, readRequestFpdu(f, msn[0], srcMr.rkey(), src.address(), size, 1));
            }
            untilTheSocketIsFull(); // the READs are being answered when the SEND is posted
            assertEquals(0, qp.postSend(signaled(5).opcode(io.jrdma.verbs.WrOpcode.SEND).sge(0, mr, 0, 64)));
            PeerLog log = peerReads(l -> l.sendAfter >= 0 || l.responses >= 8, l -> {
                if (l.responseEnded) { // another READ, so that two stay outstanding
                    try {
                        send(f, readRequestFpdu(f, msn[0]++, srcMr.rkey(), src.address(), size, 1));
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            });
            assertTrue(log.sendAfter >= 0, "no SEND within " + log.responses + " READ Responses");
            assertTrue(log.sendAfter <= 2, "the SEND came after " + log.sendAfter + " READ Responses");
            assertEquals(-1, log.terminateLayer, "no TERMINATE");
            assertEquals(0, log.foreignBytes);
            assertEquals(QpState.RTS, qp.state());
        } finally {
            srcMr.close();
        }
    }

    /**
     * A READ's source registered elsewhere between its request and its response (found in review; reachable once the
     * send queue is served between responses). The peer asks for 64 MiB from a fast-registration region F (key k1),
     * 1 MiB from a plain region B, and 64 bytes from F's end; the application posts LOCAL_INV(k1) and REG_MR (F onto
     * 1 MiB elsewhere, key k2). The first response ends, the LOCAL_INV runs, B's response goes whole, the REG_MR runs,
     * then F's second response is due: it is not built from F's new mapping (its offset computed against it threw
     * IndexOutOfBoundsException out of the duty cycle): a TERMINATE (RDMAP, remote protection, invalid STag).
     */
    @Test
    void aReadResponseFromASourceRegisteredElsewhereSinceTheRequestIsATerminate() throws Exception {
        connectRawPeer(false);
        assertTrue(((IwarpQp) qp).iw.irqCapacity >= 3, "IRD " + ((IwarpQp) qp).iw.irqCapacity);
        int size = 64 << 20; // more than the sockets hold: the first response is still being sent
        MemoryRegion fast = pd.allocMr(size);
        MemorySegment b = arena.allocate(1 << 20, 4096).fill((byte) 0x11);
        MemoryRegion bMr = pd.register(b, Access.REMOTE_READ);
        try {
            MemorySegment s1 = arena.allocate(size, 4096).fill((byte) 0x11);
            MemorySegment s2 = arena.allocate(1 << 20, 4096).fill((byte) 0x22);
            int k1 = io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey());
            int k2 = io.jrdma.verbs.MemoryWindow.incRkey(k1);
            fastRegister(fast, s1, k1, Access.REMOTE_READ);
            MemorySegment f = arena.allocate(256);
            send(f, readRequestFpdu(f, 1, k1, s1.address(), size, 1));
            send(f, readRequestFpdu(f, 2, bMr.rkey(), b.address(), (int) b.byteSize(), 2));
            send(f, readRequestFpdu(f, 3, k1, s1.address() + size - 64, 64, 3)); // outside S2
            untilTheSocketIsFull();
            assertEquals(3, ((IwarpQp) qp).iw.irqCount, "the three READs are queued, the first being answered");
            assertEquals(0, qp.postSend(signaled(2).localInv(k1)));
            assertEquals(0, qp.postSend(signaled(3).regMr(fast, s2, k2, Access.REMOTE_READ)));
            PeerLog log = peerReads(l -> false, l -> { });
            assertEquals(size, log.responseBytes[1], "the first response, whole");
            assertEquals(b.byteSize(), log.responseBytes[2], "B's response, whole");
            assertEquals(0, log.responseBytes[3], "nothing of F's second READ");
            assertEquals(0, log.foreignBytes, "no byte of F's new mapping");
            assertEquals(Terminate.LAYER_RDMAP, log.terminateLayer, "a TERMINATE came");
            assertEquals(Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, log.terminateType);
            assertEquals(Terminate.RDMAP_INVALID_STAG, log.terminateCode);
            assertEquals(QpState.ERROR, qp.state());
        } finally {
            fast.close();
            bMr.close();
        }
    }

    /**
     * A QP destroyed with zero-copy payloads still queued gives their views back (found in review): three times a
     * WRITE of 64 MiB from the same region stalls (the peer reads nothing; views of the region wait in the stream's
     * gather list) and the QP is closed; the region's views are all back once the stream is released (they never
     * went back, and a region whose 64 views were all lost that way had its payloads copied from then on). A WRITE
     * from the region to a reading peer then leaves from the region.
     */
    @Test
    void aQpClosedWithPayloadsQueuedGivesTheirViewsBack() throws Exception {
        int n = 64 << 20;
        MemorySegment big = arena.allocate(n, 4096).fill((byte) 0x11);
        MemoryRegion src = pd.register(big, 0);
        try {
            for (int round = 0; round < 3; round++) {
                if (round > 0) {
                    qp = pd.createQp(QpInitAttr.rc(cq));
                }
                connectRawPeer(false);
                assertEquals(0, qp.postSend(new io.jrdma.verbs.SendWorkRequest().wrId(round)
                        .opcode(io.jrdma.verbs.WrOpcode.RDMA_WRITE).sge(0, src, 0, n).remote(0x10000, 0x1234)));
                untilTheSocketIsFull();
                IwarpQp old = (IwarpQp) qp;
                io.jrdma.engine.core.RegionViews views = ((io.jrdma.engine.core.Mr) src).views;
                assertTrue(views.inUse() > 0, "payloads of the region are queued");
                qp.close();
                long end = System.nanoTime() + DEADLINE;
                while (old.iw != null) {
                    ctx.progress();
                    assertTrue(System.nanoTime() - end < 0, "the QP's stream was not released");
                }
                assertEquals(0, views.inUse(), "views of the region not given back after round " + round);
                conn.close();
                conn = null;
                peer.close();
                peer = null;
                WorkCompletion wc = new WorkCompletion();
                while (cq.poll(wc) > 0) {
                    // the closed QP's completions, if any
                }
            }
            qp = pd.createQp(QpInitAttr.rc(cq));
            connectRawPeer(false);
            long sent = IwarpEngine.of(ctx).zeroCopySent;
            int m = 256 << 10;
            assertEquals(0, qp.postSend(signaled(9).opcode(io.jrdma.verbs.WrOpcode.RDMA_WRITE).sge(0, src, 0, m)
                    .remote(0x10000, 0x1234)));
            assertEquals(m, peerReadsWrites(m).length);
            assertTrue(IwarpEngine.of(ctx).zeroCopySent > sent, "the WRITE left from its region (zero copy)");
            assertEquals(WcStatus.SUCCESS, awaitCompletion(9).status());
        } finally {
            src.close();
        }
    }

    /**
     * An invalidated STag is reported as invalid, not out of bounds (found in review): a fast-registration region
     * registered with REMOTE_WRITE and REMOTE_READ, then invalidated (LOCAL_INV), keeps its access bits, and the
     * check fell to the bounds test. The peer's WRITE to the old STag is a TERMINATE with DDP, tagged buffer, invalid
     * STag; its READ Request one with RDMAP, remote protection, invalid STag.
     */
    @Test
    void aWriteToAnInvalidatedStagIsADdpTaggedInvalidStag() throws Exception {
        connectRawPeer(false);
        MemoryRegion fast = pd.allocMr(1 << 16);
        try {
            MemorySegment s1 = arena.allocate(1 << 16, 4096).fill((byte) 0x33);
            int k = invalidated(fast, s1);
            MemorySegment f = arena.allocate(256);
            Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.WRITE), k, s1.address());
            send(f, seal(f, Ddp.TAGGED_HEADER_LENGTH + 64));
            expectTerminate(Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, Terminate.DDP_TAGGED_INVALID_STAG,
                    Terminate.FLAG_M | Terminate.FLAG_D);
            assertEquals(QpState.ERROR, qp.state());
            for (int i = 0; i < s1.byteSize(); i++) {
                assertEquals((byte) 0x33, s1.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
        } finally {
            fast.close();
        }
    }

    @Test
    void aReadOfAnInvalidatedStagIsAnRdmapInvalidStag() throws Exception {
        connectRawPeer(false);
        MemoryRegion fast = pd.allocMr(1 << 16);
        try {
            MemorySegment s1 = arena.allocate(1 << 16, 4096);
            int k = invalidated(fast, s1);
            MemorySegment f = arena.allocate(256);
            send(f, readRequestFpdu(f, 1, k, s1.address(), 64, 1));
            expectTerminate(Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_PROTECTION,
                    Terminate.RDMAP_INVALID_STAG, Terminate.FLAG_M | Terminate.FLAG_D | Terminate.FLAG_R);
            assertEquals(QpState.ERROR, qp.state());
        } finally {
            fast.close();
        }
    }

    /** REG_MR of {@code fast} onto {@code seg} with remote write and read, then its LOCAL_INV; @return its key */
    private int invalidated(MemoryRegion fast, MemorySegment seg) {
        int k = io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey());
        fastRegister(fast, seg, k, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        assertEquals(0, qp.postSend(signaled(4).localInv(k)));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(4).status());
        return k;
    }

    /**
     * An MPA Request asking for markers is answered with a Reject (found in review): RFC 5044 §7.1 lets a side that
     * cannot use markers refuse with a Reply whose R bit is set, which the listener meant to send, but its check of
     * the Request's header refused the M bit first and the connection was dropped without a word. The Reply comes
     * (R set, M clear, the Request's revision), then the connection closes; no connection request is offered.
     */
    @Test
    void anMpaRequestAskingForMarkersIsAnsweredWithAReject() throws Exception {
        try (SocketChannel ch = SocketChannel.open(listener.address())) {
            MpaRequestReply plain = MpaRequestReply.enhanced(false, true, false, 4, 4, false, false, false, false,
                    new byte[0]);
            RawMpa.write(ch, new MpaRequestReply(false, plain.flags() | io.jrdma.wire.iwarp.Mpa.FLAG_MARKERS,
                    plain.revision(), plain.privateData()));
            // the listener works while it is polled: poll until the jrdma side has answered and closed
            ch.configureBlocking(false);
            ByteBuffer in = ByteBuffer.allocate(256);
            long end = System.nanoTime() + DEADLINE;
            while (ch.read(in) >= 0) {
                assertEquals(null, listener.poll(Duration.ofMillis(1)), "no connection request is offered");
                assertTrue(System.nanoTime() - end < 0, "no Reply and close within 10 s; got " + in.position() + " bytes");
            }
            MpaRequestReply reply = MpaRequestReply.decode(MemorySegment.ofArray(in.array()), 0, in.position(), true);
            assertTrue(reply.reject(), "the Reply has R: " + reply);
            assertTrue(!reply.markers(), "and no M");
            assertEquals(io.jrdma.wire.iwarp.Mpa.REVISION_2, reply.revision());
            assertEquals(reply.length(), in.position(), "nothing but the Reply");
        }
        assertEquals(null, listener.poll(Duration.ZERO), "no connection request");
    }

    /**
     * A stream in ERROR whose peer reads nothing is closed after a bounded linger (found in review): a WRITE of 64
     * MiB fills the sockets (small buffers; the peer reads nothing), then the peer's malformed SEND makes the jrdma side queue a
     * TERMINATE behind it and enter ERROR. The stream was held open (and its QP serviced every duty cycle) until the
     * queued bytes left, which they never did; it is closed once the linger (here 100 ms) has passed.
     */
    @Test
    void aStreamInErrorWhosePeerReadsNothingIsClosedAfterTheLinger() throws Exception {
        IwarpEngine.of(ctx).errorLingerNanos = TimeUnit.MILLISECONDS.toNanos(100);
        connectRawPeer(false);
        // small socket buffers both ways: what the jrdma side has queued when it enters ERROR cannot all fit in them
        ((IwarpQp) qp).iw.channel.setOption(java.net.StandardSocketOptions.SO_SNDBUF, 1 << 14);
        peer.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 1 << 14);
        int n = 64 << 20;
        MemorySegment big = arena.allocate(n, 4096);
        MemoryRegion src = pd.register(big, 0);
        try {
            assertEquals(0, qp.postSend(signaled(1).opcode(io.jrdma.verbs.WrOpcode.RDMA_WRITE).sge(0, src, 0, n)
                    .remote(0x10000, 0x1234)));
            untilTheSocketIsFull();
            MemorySegment f = arena.allocate(256);
            send(f, sendFpdu(f, 2, 16)); // MSN 2 where 1 is due: a TERMINATE
            IwarpStream s = ((IwarpQp) qp).iw;
            long end = System.nanoTime() + DEADLINE;
            while (!s.closed) {
                ctx.progress();
                assertTrue(System.nanoTime() - end < 0, () -> "the stream is still open; QP " + qp.state()
                        + ", bytes queued " + s.txPending());
            }
            assertEquals(QpState.ERROR, qp.state());
            assertEquals(1, ctx.counter(Counter.SENT_TERMINATES), "a TERMINATE was queued");
            assertTrue(!s.txPending(), "what was queued is dropped");
        } finally {
            src.close();
        }
    }
}

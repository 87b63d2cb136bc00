package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.iwarp.AtomicRequest;
import io.jrdma.wire.iwarp.AtomicResponse;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.ImmediateData;
import io.jrdma.wire.iwarp.MpaRequestReply;
import io.jrdma.wire.iwarp.Rdmap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the engine puts on the wire for RFC 7306, read by a hand-written MPA peer that sends the
 * jrdma trailer (so the extensions are on) and answers with codec-built FPDUs: Atomic Requests on
 * QN 1 with the READ Requests' MSNs and the masks of a plain 64-bit operation (Add Mask 0 for
 * FetchAdd, Compare and Swap Mask all ones for CompareSwap), Atomic Responses on QN 3 with their
 * own MSNs echoing the Request Identifier, Immediate Data on QN 0 as the 8-byte header alone. The
 * jrdma side runs in INVOKER mode: the test thread drives it.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IwarpRfc7306WireTest {
    private static final long DEADLINE = Duration.ofSeconds(10).toNanos();
    private static final boolean CRC = true;
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
    private final ByteBuffer rx = ByteBuffer.allocate(1 << 16);

    @BeforeEach
    void open() throws Exception {
        arena = Arena.ofShared();
        InetAddress lo = InetAddress.getLoopbackAddress();
        ctx = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        pd = ctx.allocPd();
        buf = arena.allocate(1 << 16, 4096);
        mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        cq = ctx.createCq(16);
        qp = pd.createQp(QpInitAttr.rc(cq));
        listener = ctx.connectionManager().listen(new InetSocketAddress(lo, 0));
        connectJrdmaPeer();
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

    /** A raw MPA client whose private data ends with the jrdma trailer (RFC 7306 on), IRD = ORD = 4. */
    private void connectJrdmaPeer() throws Exception {
        CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() ->
                listener.poll(Duration.ofSeconds(10)).accept(qp, ConnParam.defaults(), Duration.ofSeconds(10)));
        peer = SocketChannel.open(listener.address());
        byte[] trailer = IwarpConnectionManager.appData(true, 0x77, Mtu.MTU_1024, new byte[0]);
        MpaRequestReply reply = RawMpa.request(peer, CRC, trailer);
        assertEquals(CRC, reply.crc());
        assertTrue(IwarpConnectionManager.parse(reply).jrdma(), "the jrdma server answers with its trailer");
        conn = accepted.get(10, TimeUnit.SECONDS);
        assertEquals(QpState.RTS, qp.state());
        peer.configureBlocking(false);
    }

    private void send(byte[] fpdu) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(fpdu);
        while (b.hasRemaining()) {
            peer.write(b);
        }
    }

    /** Drives the jrdma side until the peer has a whole FPDU; @return it (checked: framing, CRC, DDP/RDMAP). */
    private MemorySegment nextFpdu() throws IOException {
        long end = System.nanoTime() + DEADLINE;
        while (System.nanoTime() - end < 0) {
            MemorySegment s = MemorySegment.ofArray(rx.array());
            int total = Fpdu.scan(s, 0, rx.position(), Fpdu.MAX_ULPDU_LENGTH);
            if (total > 0) {
                MemorySegment f = MemorySegment.ofArray(s.asSlice(0, total).toArray(ValueLayout.JAVA_BYTE));
                rx.flip().position(total);
                rx.compact();
                assertTrue(Fpdu.check(f, 0, total, CRC, Fpdu.MAX_ULPDU_LENGTH) > 0, "a valid FPDU");
                assertTrue(Rdmap.check(f, Fpdu.ULPDU_OFFSET, Fpdu.ulpduLength(f, 0)) > 0, "valid DDP/RDMAP headers");
                return f;
            }
            assertTrue(total == 0, "framing " + total);
            ctx.progress();
            if (peer.read(rx) < 0) {
                fail("the jrdma side closed the connection");
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no FPDU from the jrdma side within 10 s");
    }

    private WorkCompletion completion() {
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() - end < 0, "no completion");
        }
        return wc;
    }

    /** One single-segment untagged FPDU with {@code hdr} bytes of RDMAP header, sealed with CRC. */
    private static MemorySegment untagged(int opcode, int qn, int msn, int hdr) {
        int ulpdu = Ddp.UNTAGGED_HEADER_LENGTH + hdr;
        MemorySegment f = MemorySegment.ofArray(new byte[Fpdu.length(ulpdu)]);
        Fpdu.writeHeader(f, 0, ulpdu);
        Ddp.writeUntagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(opcode), 0, qn, msn, 0);
        return f;
    }

    private static byte[] seal(MemorySegment f) {
        Fpdu.seal(f, 0, Fpdu.ulpduLength(f, 0), CRC);
        return f.toArray(ValueLayout.JAVA_BYTE);
    }

    private static void assertUntagged(MemorySegment f, int opcode, int qn, int msn, int rdmapHeader) {
        int ddp = Fpdu.ULPDU_OFFSET;
        assertEquals(opcode, Rdmap.opcode(f, ddp), "opcode");
        assertTrue(!Ddp.tagged(f, ddp) && Ddp.last(f, ddp), "untagged, one segment");
        assertEquals(qn, Ddp.queueNumber(f, ddp), "QN");
        assertEquals(msn, Ddp.msn(f, ddp), "MSN");
        assertEquals(0, Ddp.messageOffset(f, ddp), "MO");
        assertEquals(0, Ddp.ulpWord(f, ddp), "RsvdULP");
        assertEquals(Ddp.UNTAGGED_HEADER_LENGTH + rdmapHeader, Fpdu.ulpduLength(f, 0), "no payload");
    }

    @Test
    void requesterSendsAtomicRequestsOnQn1AndTakesResponsesFromQn3() throws Exception {
        SendWorkRequest wr = new SendWorkRequest();
        assertEquals(0, qp.postSend(wr.reset().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                .sge(0, mr, 0, 8).remote(0x1122_3344_5566_7780L, 0xA1B2C3D4).atomic(0x0102_0304_0506_0708L, 0)));
        assertEquals(0, qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
                .sge(0, mr, 8, 8).remote(0x1122_3344_5566_7788L, 0xA1B2C3D4)
                .atomic(0x0F0E_0D0C_0B0A_0908L, 0x7F7E_7D7C_7B7A_7978L)));

        int a = Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH;
        MemorySegment fa = nextFpdu();
        assertUntagged(fa, Rdmap.ATOMIC_REQUEST, Rdmap.QN_READ_REQUEST, 1, AtomicRequest.LENGTH);
        assertEquals(AtomicRequest.FETCH_ADD, fa.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(
                java.nio.ByteOrder.BIG_ENDIAN), a), "AOpCode FetchAdd, reserved bits zero");
        int id1 = AtomicRequest.requestId(fa, a);
        assertEquals(0xA1B2C3D4, AtomicRequest.remoteStag(fa, a));
        assertEquals(0x1122_3344_5566_7780L, AtomicRequest.remoteTaggedOffset(fa, a));
        assertEquals(0x0102_0304_0506_0708L, AtomicRequest.addOrSwapData(fa, a));
        assertEquals(0, AtomicRequest.addOrSwapMask(fa, a), "Add Mask 0: the carry crosses every bit");
        assertEquals(0, AtomicRequest.compareData(fa, a));
        assertEquals(0, AtomicRequest.compareMask(fa, a));

        // answered before the next is read: the ORD may be 1
        MemorySegment r = untagged(Rdmap.ATOMIC_RESPONSE, Rdmap.QN_ATOMIC_RESPONSE, 1, AtomicResponse.LENGTH);
        AtomicResponse.write(r, a, id1, 0x0000_0000_0000_00AAL);
        send(seal(r));

        MemorySegment cs = nextFpdu();
        assertUntagged(cs, Rdmap.ATOMIC_REQUEST, Rdmap.QN_READ_REQUEST, 2, AtomicRequest.LENGTH);
        assertEquals(AtomicRequest.COMPARE_SWAP, AtomicRequest.atomicOpcode(cs, a));
        int id2 = AtomicRequest.requestId(cs, a);
        assertTrue(id1 != id2, "distinct Request Identifiers");
        assertEquals(0x1122_3344_5566_7788L, AtomicRequest.remoteTaggedOffset(cs, a));
        assertEquals(0x7F7E_7D7C_7B7A_7978L, AtomicRequest.addOrSwapData(cs, a), "swap data");
        assertEquals(-1L, AtomicRequest.addOrSwapMask(cs, a), "Swap Mask: all 64 bits");
        assertEquals(0x0F0E_0D0C_0B0A_0908L, AtomicRequest.compareData(cs, a));
        assertEquals(-1L, AtomicRequest.compareMask(cs, a), "Compare Mask: all 64 bits");
        r = untagged(Rdmap.ATOMIC_RESPONSE, Rdmap.QN_ATOMIC_RESPONSE, 2, AtomicResponse.LENGTH);
        AtomicResponse.write(r, a, id2, 0x0F0E_0D0C_0B0A_0908L);
        send(seal(r));

        WorkCompletion wc = completion();
        assertEquals(1, wc.wrId());
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        assertEquals(WcOpcode.FETCH_ADD, wc.opcode());
        assertEquals(0xAAL, buf.get(ValueLayout.JAVA_LONG, 0), "the Original Remote Data Value");
        wc = completion();
        assertEquals(2, wc.wrId());
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        assertEquals(WcOpcode.COMP_SWAP, wc.opcode());
        assertEquals(0x0F0E_0D0C_0B0A_0908L, buf.get(ValueLayout.JAVA_LONG, 8));
    }

    @Test
    void responderAnswersOnQn3WithTheRequestIdentifier() throws Exception {
        buf.set(ValueLayout.JAVA_LONG, 64, 0x10);
        int a = Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH;
        MemorySegment f = untagged(Rdmap.ATOMIC_REQUEST, Rdmap.QN_READ_REQUEST, 1, AtomicRequest.LENGTH);
        AtomicRequest.write(f, a, AtomicRequest.FETCH_ADD, 0x5151, mr.rkey(), mr.address() + 64, 5, 0, 0, 0);
        send(seal(f));
        MemorySegment r = nextFpdu();
        assertUntagged(r, Rdmap.ATOMIC_RESPONSE, Rdmap.QN_ATOMIC_RESPONSE, 1, AtomicResponse.LENGTH);
        assertEquals(0x5151, AtomicResponse.originalRequestId(r, a));
        assertEquals(0x10, AtomicResponse.originalValue(r, a));
        assertEquals(0x15, buf.get(ValueLayout.JAVA_LONG, 64));

        // the next on QN 1 takes the next MSN (one at a time: the IRD may be 1)
        f = untagged(Rdmap.ATOMIC_REQUEST, Rdmap.QN_READ_REQUEST, 2, AtomicRequest.LENGTH);
        AtomicRequest.write(f, a, AtomicRequest.COMPARE_SWAP, 0x5252, mr.rkey(), mr.address() + 64, 0x99, -1L,
                0x15, -1L);
        send(seal(f));
        r = nextFpdu();
        assertUntagged(r, Rdmap.ATOMIC_RESPONSE, Rdmap.QN_ATOMIC_RESPONSE, 2, AtomicResponse.LENGTH);
        assertEquals(0x5252, AtomicResponse.originalRequestId(r, a));
        assertEquals(0x15, AtomicResponse.originalValue(r, a));
        assertEquals(0x99, buf.get(ValueLayout.JAVA_LONG, 64));
    }

    @Test
    void sendWithImmOfNoBytesIsAnImmediateDataMessage() throws Exception {
        SendWorkRequest wr = new SendWorkRequest();
        assertEquals(0, qp.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                .numSge(0).imm(0x1234_5678)));
        assertEquals(0, qp.postSend(wr.reset().wrId(4).opcode(WrOpcode.SEND_WITH_IMM)
                .flags(SendFlags.SIGNALED | SendFlags.SOLICITED).numSge(0).imm(0x9ABC_DEF0)));
        int h = Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH;
        MemorySegment f = nextFpdu();
        assertUntagged(f, Rdmap.IMMEDIATE_DATA, Rdmap.QN_SEND, 1, ImmediateData.LENGTH);
        assertEquals(0x1234_5678L, ImmediateData.value(f, h));
        f = nextFpdu();
        assertUntagged(f, Rdmap.IMMEDIATE_DATA_SE, Rdmap.QN_SEND, 2, ImmediateData.LENGTH);
        assertEquals(0x9ABC_DEF0L, ImmediateData.value(f, h));
    }

    @Test
    void plainImmediateDataCompletesAReceiveWithItsValue() throws Exception {
        assertEquals(0, qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, mr, 0, 4096)));
        MemorySegment f = untagged(Rdmap.IMMEDIATE_DATA_SE, Rdmap.QN_SEND, 1, ImmediateData.LENGTH);
        ImmediateData.write(f, Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH, 0xCAFE_BABEL);
        send(seal(f));
        WorkCompletion wc = completion();
        assertEquals(9, wc.wrId());
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        assertEquals(WcOpcode.RECV, wc.opcode());
        assertEquals(0, wc.byteLen());
        assertTrue(wc.hasImm());
        assertEquals(0xCAFE_BABE, wc.imm());
        assertTrue((wc.flags() & WorkCompletion.SOLICITED) != 0, "Immediate Data with SE");
    }
}

package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SEND/RECV through the receiver's inbound ring: immediate data, invalidate, multi-slot messages, RNR, errors. */
class ShmSendRecvTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void sendsOfEverySizeArriveInOrderWithImmediateData(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 22)) {
            int[] sizes = {0, 1, 8, 8191, 8192, 8193, 65536, 1 << 20};
            for (int i = 0; i < sizes.length; i++) {
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(100 + i).sge(0, p.b.mr, 2L << 20, 2 << 20)));
                for (int k = 0; k < sizes[i]; k++) {
                    p.a.buf.set(ValueLayout.JAVA_BYTE, k, (byte) (k * 13 + i));
                }
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM)
                        .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, sizes[i]).imm(0x1000 + i)));
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status());
                assertEquals(WcOpcode.RECV, r.opcode());
                assertEquals(100 + i, r.wrId());
                assertEquals(sizes[i], r.byteLen());
                assertEquals(0x1000 + i, r.imm());
                assertTrue((r.flags() & WorkCompletion.WITH_IMM) != 0);
                assertEquals(-1, p.a.buf.asSlice(0, sizes[i]).mismatch(p.b.buf.asSlice(2L << 20, sizes[i])), "size "
                        + sizes[i]);
                WorkCompletion s = p.await(p.a.cq);
                assertEquals(WcStatus.SUCCESS, s.status());
                assertEquals(WcOpcode.SEND, s.opcode());
                assertEquals(i, s.wrId());
            }
        }
    }

    @Test
    void writeWithImmediateConsumesAReceive() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9)));
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 4242);
            WorkCompletion s = p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address() + 64, p.b.mr.rkey()).imm(7));
            assertEquals(WcStatus.SUCCESS, s.status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode());
            assertEquals(7, r.imm());
            assertEquals(8, r.byteLen());
            assertEquals(4242, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
        }
    }

    @Test
    void sendWithInvalidateMakesTheKeyUnreachable() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion target = p.b.pd.register(p.b.buf.asSlice(8192, 4096), ShmPair.ALL | Access.REMOTE_INVALIDATE);
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(target.address(), target.rkey())).status());
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 64)));
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(2).opcode(WrOpcode.SEND_WITH_INV)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).invalidate(target.rkey())).status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status());
            assertTrue((r.flags() & WorkCompletion.WITH_INV) != 0);
            assertEquals(target.rkey(), r.imm());
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(3).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(target.address(), target.rkey())).status());
            target.close();
        }
    }

    /**
     * A region with a window bound to it cannot be invalidated by a peer's SEND_WITH_INV, as a fast-registration
     * region cannot (the window's access checks its region's close, not its invalidation, so an invalidated region
     * stayed writable through it): the SEND's receive completes with LOC_PROT_ERR and the sender's with
     * REM_ACCESS_ERR; before the SEND, the window's WRITE lands.
     */
    @Test
    void aRegionWithAWindowBoundIsNotInvalidatedBySendWithInvalidate() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion target = p.b.pd.register(p.b.buf.asSlice(8192, 4096),
                    ShmPair.ALL | Access.REMOTE_INVALIDATE | Access.MW_BIND);
            io.jrdma.verbs.MemoryWindow mw = p.b.pd.allocMw(io.jrdma.verbs.MwType.TYPE_2);
            try {
                int k = io.jrdma.verbs.MemoryWindow.incRkey(mw.rkey());
                assertEquals(0, p.b.qp.postSend(new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED)
                        .bindMw(mw, k, target, target.address(), 4096, Access.REMOTE_WRITE)));
                assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status(), "the bind");
                assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 8).remote(target.address(), k)).status(), "a WRITE through the window");
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 64)));
                assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(3).opcode(WrOpcode.SEND_WITH_INV)
                        .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).invalidate(target.rkey())).status(),
                        "the invalidation of a region with a window bound");
                assertEquals(WcStatus.LOC_PROT_ERR, p.await(p.b.cq).status(), "its receive");
            } finally {
                mw.close();
                target.close();
            }
        }
    }

    @Test
    void withoutAReceiveTheSenderRetriesAfterTheRnrTimer() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 20_000)));
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < 1000; i++) {
                p.a.ctx.progress();
                p.b.ctx.progress();
                assertEquals(0, p.a.cq.poll(wc), "a SEND completed with no receive posted");
            }
            assertTrue(p.b.ctx.counters().getOrDefault("send_rnr_err", 0L) > 0, "RNR counted: " + p.b.ctx.counters());
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 32768)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(20_000, r.byteLen());
            assertEquals(5, r.wrId());
        }
    }

    @Test
    void rnrRetriesRunOut() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().rnrRetry(2));
            WorkCompletion wc = p.run(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8));
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status());
            assertEquals(QpState.ERROR, p.a.qp.state());
        }
    }

    @Test
    void aMessageLongerThanTheReceiveIsRefused() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 16)));
            WorkCompletion s = p.run(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 17));
            assertEquals(WcStatus.REM_INV_REQ_ERR, s.status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.LOC_LEN_ERR, r.status());
            assertEquals(QpState.ERROR, p.b.qp.state());
        }
    }

    // ---------------------------------------------------------------- the small-SEND path (docs/shm-design.md)

    private static ShmTransport transport(ShmPair.Side s) {
        return (ShmTransport) ((io.jrdma.engine.core.Context) s.ctx).engine.transport;
    }

    private static int pendingWord(ShmPair.Side s) {
        return (int) ShmTransport.INT.getVolatile(transport(s).ctrl, Ctrl.H_PENDING);
    }

    private static int watchedFlag(ShmPair.Side s) {
        return (int) ShmTransport.INT.getVolatile(transport(s).ctrl, ((ShmQp) s.qp).dir + Ctrl.Q_WATCHED);
    }

    @Test
    void aSendToAWatchedQpFlagsNothingAndAnRnrEndsTheWatch() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(1).sge(0, p.b.mr, 0, 64)));
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(2).sge(0, p.b.mr, 64, 64)));
            p.b.ctx.progress(); // the scan after RTR finds the posted receives: b's engine watches the ring
            p.b.ctx.progress();
            assertEquals(1, watchedFlag(p.b), "a QP with receives posted is watched");
            assertEquals(0, pendingWord(p.b));
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(7).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)));
            assertEquals(0, pendingWord(p.b), "the sender stored the pending word for a watched QP");
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status());
            assertEquals(1, r.wrId());
            assertEquals(0x1122334455667788L, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            // the second message takes the last receive: the queue is empty, the QP stays watched (the application
            // may post its next receive before the next message comes)
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(8).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)).status());
            assertEquals(2, p.await(p.b.cq).wrId());
            assertEquals(1, watchedFlag(p.b), "a queue that just ran empty keeps the QP watched");
            // a SEND that finds no receive is refused with RNR: the QP leaves the list, the retry flags the pending word
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(9).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)));
            assertEquals(0, pendingWord(p.b), "the first try went to a watched QP");
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (pendingWord(p.b) == 0) { // a's engine sends again once the RNR timer (10 us) ran out
                p.b.ctx.progress();
                p.a.ctx.progress();
                assertTrue(System.nanoTime() < deadline, "no retry flagged the pending word");
            }
            assertEquals(0, watchedFlag(p.b), "a QP whose message found no receive is not watched");
            assertTrue(p.b.ctx.counters().getOrDefault("send_rnr_err", 0L) > 0, "RNR without a receive");
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(3).sge(0, p.b.mr, 128, 64)));
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(4).sge(0, p.b.mr, 192, 64)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            assertEquals(3, p.await(p.b.cq).wrId());
            assertEquals(1, watchedFlag(p.b), "the message placed while a receive is posted brings the QP back");
        }
    }

    /**
     * An application that posts one receive at a time, after each message: the QP is not watched before its first
     * message (no receive was posted when its ring was read), joins the list when that message is placed although
     * its queue is then empty, and its sender stores no pending word for the next one (before, the QP joined only
     * with a receive left, so every such message went by the pending word and a scan of every ring).
     */
    @Test
    void aQpThatPostsOneReceiveAtATimeStaysWatched() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.b.ctx.progress(); // the scan after RTR: no receive posted, the QP is not watched
            p.b.ctx.progress();
            assertEquals(0, watchedFlag(p.b), "a QP without receives is watched");
            for (int i = 0; i < 3; i++) {
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, 0, 64)));
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 1000 + i);
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 8)));
                assertEquals(i == 0 ? 1 : 0, pendingWord(p.b), i == 0 ? "the first message goes by the pending word"
                        : "the sender stored the pending word for message " + i + " to a QP that placed the one before");
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status());
                assertEquals(i, r.wrId());
                assertEquals(1000 + i, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
                assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
                assertEquals(1, watchedFlag(p.b), "a QP that placed message " + i + " into its last receive is not watched");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void messagesAroundTheInlineSizeArriveIntact(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            int n = 0;
            for (int size = 0; size <= 2 * Ctrl.INLINE + 1; size++) {
                for (WrOpcode op : new WrOpcode[] {WrOpcode.SEND, WrOpcode.SEND_WITH_IMM}) {
                    assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(1000 + n).sge(0, p.b.mr, 4096, 128)));
                    for (int k = 0; k < size; k++) {
                        p.a.buf.set(ValueLayout.JAVA_BYTE, 8 + k, (byte) (k * 31 + n));
                    }
                    WorkCompletion s = p.run(wr.reset().wrId(n).opcode(op).flags(SendFlags.SIGNALED)
                            .sge(0, p.a.mr, 8, size).imm(n));
                    assertEquals(WcStatus.SUCCESS, s.status(), "size " + size);
                    WorkCompletion r = p.await(p.b.cq);
                    assertEquals(WcStatus.SUCCESS, r.status());
                    assertEquals(1000 + n, r.wrId());
                    assertEquals(size, r.byteLen());
                    assertEquals(op == WrOpcode.SEND_WITH_IMM, (r.flags() & WorkCompletion.WITH_IMM) != 0);
                    if (op == WrOpcode.SEND_WITH_IMM) {
                        assertEquals(n, r.imm());
                    }
                    assertEquals(-1, p.a.buf.asSlice(8, size).mismatch(p.b.buf.asSlice(4096, size)), "size " + size);
                    n++;
                }
            }
        }
    }

    @Test
    void anInlineSizedMessageLeavesTheSlotsPayloadAreaUntouched() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(1).sge(0, p.b.mr, 0, 128)));
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(2).sge(0, p.b.mr, 0, 128)));
            for (int k = 0; k < 64; k++) {
                p.a.buf.set(ValueLayout.JAVA_BYTE, k, (byte) (k + 1));
            }
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, Ctrl.INLINE)).status());
            assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status());
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, Ctrl.INLINE + 1)).status());
            assertEquals(Ctrl.INLINE + 1, p.await(p.b.cq).byteLen());
            java.lang.foreign.MemorySegment c = transport(p.b).ctrl;
            ShmQp b = (ShmQp) p.b.qp;
            long first = b.ring + (b.ringBase & (Ctrl.RING_SLOTS - 1)) * Ctrl.SLOT; // the connection's first slot
            long second = b.ring + (b.ringBase + 1 & (Ctrl.RING_SLOTS - 1)) * Ctrl.SLOT;
            assertEquals(-1, p.a.buf.asSlice(0, Ctrl.INLINE).mismatch(c.asSlice(first + Ctrl.S_INLINE, Ctrl.INLINE)),
                    "40 bytes travel in the header's line");
            assertEquals(-1, c.asSlice(first + Ctrl.SLOT_HEADER, 64).mismatch(java.lang.foreign.MemorySegment.ofArray(
                    new byte[64])), "the payload area of an inline slot is not written");
            assertEquals(-1, p.a.buf.asSlice(0, Ctrl.INLINE + 1).mismatch(c.asSlice(second
                    + Ctrl.SLOT_HEADER, Ctrl.INLINE + 1)), "41 bytes go to the payload area");
        }
    }

    /**
     * The receiver's queue runs empty after every message, so a message that comes before the next receive is posted
     * is refused (RNR) and its QP leaves the watched list, and comes back with the next message placed, while the
     * sender's engine (another thread, DEDICATED) writes the next slot: a slot whose sender read the watched flag as
     * 1 just before it was cleared must still be found (the Dekker pair), or the run stops.
     */
    @Test
    void aReceiveQueueThatRunsEmptyAfterEveryMessageLosesNothing() {
        try (ShmPair p = new ShmPair(ThreadingMode.DEDICATED, 1 << 16)) {
            int n = 1000;
            int sent = 0;
            int received = 0;
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + 60_000_000_000L;
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(0).sge(0, p.b.mr, 0, 64)));
            int inFlight = 0;
            while (received < n) {
                assertTrue(System.nanoTime() < deadline, "stuck after " + received + " of " + n + " messages");
                if (sent < n && inFlight < 4) {
                    p.a.buf.set(ValueLayout.JAVA_INT, 0, sent);
                    assertEquals(0, p.a.qp.postSend(wr.reset().wrId(sent).opcode(WrOpcode.SEND)
                            .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 4)));
                    sent++;
                    inFlight++;
                }
                if (p.a.cq.poll(wc) == 1) {
                    assertEquals(WcStatus.SUCCESS, wc.status());
                    inFlight--;
                }
                if (p.b.cq.poll(wc) == 1) {
                    assertEquals(WcStatus.SUCCESS, wc.status(), "receive " + received);
                    assertEquals(received, wc.wrId());
                    received++;
                    if (received < n) {
                        assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(received).sge(0, p.b.mr, 0, 64)));
                    }
                }
                Thread.onSpinWait();
            }
            while (inFlight > 0) {
                assertTrue(System.nanoTime() < deadline, "SENDs did not complete");
                if (p.a.cq.poll(wc) == 1) {
                    assertEquals(WcStatus.SUCCESS, wc.status());
                    inFlight--;
                }
            }
        }
    }

    private static void connect(io.jrdma.verbs.QueuePair q, ShmPair.Side self, io.jrdma.verbs.QueuePair peer,
            ShmPair.Side other) {
        q.modify(new io.jrdma.verbs.QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ShmPair.ALL));
        q.modify(new io.jrdma.verbs.QpAttr().state(QpState.RTR).av(new io.jrdma.verbs.AddressVector(other.ctx.gid(0), 0,
                64, 0, 4791)).pathMtu(io.jrdma.verbs.Mtu.MTU_4096).destQpn(peer.qpn()).rqPsn(0).maxDestRdAtomic(16)
                .minRnrTimer(1));
        q.modify(new io.jrdma.verbs.QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(7)
                .maxRdAtomic(16));
    }

    /**
     * More QPs with receives posted than the watched list holds: the list stays at its bound, the others are
     * reached by the pending word, and every message arrives; a watched QP without receives gives its place up.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void moreReceivingQpsThanTheWatchedListHoldsAllReceive(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            int k = ShmTransport.WATCH_MAX + 4;
            io.jrdma.verbs.QueuePair[] as = new io.jrdma.verbs.QueuePair[k];
            io.jrdma.verbs.QueuePair[] bs = new io.jrdma.verbs.QueuePair[k];
            for (int i = 0; i < k; i++) {
                as[i] = p.a.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.a.cq).withDepth(8, 8));
                bs[i] = p.b.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.b.cq).withDepth(8, 8));
            }
            for (int i = 0; i < k; i++) {
                connect(as[i], p.a, bs[i], p.b);
                connect(bs[i], p.b, as[i], p.a);
            }
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < k; i++) {
                    assertEquals(0, bs[i].postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, 64L * i, 64)));
                }
                for (int i = 0; i < k; i++) {
                    p.a.buf.set(ValueLayout.JAVA_INT, 4096 + 8L * i, round * 100 + i);
                    assertEquals(0, as[i].postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                            .sge(0, p.a.mr, 4096 + 8L * i, 4)));
                }
                boolean[] got = new boolean[k];
                for (int i = 0; i < 2 * k; i++) {
                    WorkCompletion wc = p.await(i % 2 == 0 ? p.b.cq : p.a.cq);
                    assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                    if (wc.opcode() == WcOpcode.RECV) {
                        got[(int) wc.wrId()] = true;
                    }
                }
                for (int i = 0; i < k; i++) {
                    assertTrue(got[i], "QP " + i + " received nothing in round " + round);
                    assertEquals(round * 100 + i, p.b.buf.get(ValueLayout.JAVA_INT, 64L * i));
                }
            }
            if (mode == ThreadingMode.INVOKER) {
                int watched = 0;
                for (io.jrdma.verbs.QueuePair q : bs) {
                    watched += (int) ShmTransport.INT.getVolatile(transport(p.b).ctrl, ((ShmQp) q).dir + Ctrl.Q_WATCHED);
                }
                watched += watchedFlag(p.b);
                assertTrue(watched <= ShmTransport.WATCH_MAX, watched + " QPs watched");
            }
            for (int i = 0; i < k; i++) {
                as[i].close();
                bs[i].close();
            }
        }
    }

    /**
     * A receiver that destroys its QP right after its last receive (perftest's teardown): the SEND it consumed
     * succeeds (INVOKER: the sender's engine runs only when the test says, so it reads the result after the destroy).
     */
    @Test
    void aSendConsumedBeforeTheReceiverIsDestroyedSucceeds() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(1).sge(0, p.b.mr, 0, 64)));
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(7).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)));
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.b.cq.poll(wc) == 0) { // only b's engine runs: a does not read the result yet
                assertTrue(System.nanoTime() < deadline, "no receive");
                Thread.onSpinWait();
            }
            assertEquals(WcStatus.SUCCESS, wc.status());
            p.b.qp.close();
            WorkCompletion s = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, s.status(), "the SEND was consumed before the receiver's QP went away");
            assertEquals(7, s.wrId());
        }
    }

    /**
     * A ring slot no sender writes, as a peer process (which can write this context's rings) might leave it: a chunk
     * length past a slot's payload or negative, a WRITE with immediate data whose total is not a length. The message
     * is dropped and counted as malformed, its receive completes with LOC_LEN_ERR, the QP moves to ERROR (the invalid
     * request NAK's class), and nothing is copied: a copy of such a length would read the ring's next slots (or past
     * the control segment) into the receive's buffer.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aSlotWithALengthNoSenderWritesIsDroppedAndCounted(ThreadingMode mode) {
        long[][] slots = { // opcode, chunk length, total (WRITE with immediate data)
            {WrOpcode.SEND.ordinal(), Ctrl.CHUNK + 1, 0}, {WrOpcode.SEND.ordinal(), -8, 0},
            {WrOpcode.SEND.ordinal(), Integer.MAX_VALUE, 0}, {WrOpcode.RDMA_WRITE_WITH_IMM.ordinal(), 0, -1},
            {WrOpcode.RDMA_WRITE_WITH_IMM.ordinal(), 0, 1L << 40},
            {WrOpcode.RDMA_WRITE_WITH_IMM.ordinal(), 0, 1L << 31}}; // the last a message's largest length: taken
        for (long[] slot : slots) {
            int len = (int) slot[1];
            String what = WrOpcode.values()[(int) slot[0]] + ", length " + len + ", total " + slot[2];
            try (ShmPair p = new ShmPair(mode, 1 << 16)) {
                io.jrdma.engine.core.Context ctx = (io.jrdma.engine.core.Context) p.b.ctx;
                MemorySegment c = ((ShmTransport) ctx.engine.transport).ctrl;
                ShmQp q = (ShmQp) p.b.qp;
                p.b.buf.fill((byte) 0x5A);
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(3).sge(0, p.b.mr, 0, 1 << 16)));
                long pos = q.ringRead; // no message yet: the engine does not move it
                for (int k = 1; k < Ctrl.RING_SLOTS; k++) { // the other slots' payloads: what a long copy would take
                    long o = q.ring + ((pos + k) % Ctrl.RING_SLOTS) * Ctrl.SLOT;
                    c.asSlice(o + Ctrl.SLOT_HEADER, Ctrl.CHUNK).fill((byte) 0x33);
                }
                long malformed = ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED);
                long s = q.ring + (pos % Ctrl.RING_SLOTS) * Ctrl.SLOT;
                boolean writeImm = slot[0] == WrOpcode.RDMA_WRITE_WITH_IMM.ordinal();
                c.set(ValueLayout.JAVA_LONG, s + Ctrl.S_FLAGS_LEN, (Ctrl.F_FIRST | Ctrl.F_LAST
                        | (writeImm ? Ctrl.F_IMM : 0) | (int) slot[0] << 8) & 0xFFFFFFFFL | (long) len << 32);
                c.set(ValueLayout.JAVA_LONG, s + Ctrl.S_TOTAL, slot[2]);
                c.set(ValueLayout.JAVA_LONG, s + Ctrl.S_IMM_MSG, 1L << 32);
                ShmTransport.LONG.setVolatile(c, s + Ctrl.S_SEQ,
                        ShmTransport.seq(pos) & 0xFFFFFFFFL | (long) p.b.qp.qpn() << 32);
                ShmTransport.signal(c);
                WorkCompletion r = p.await(p.b.cq);
                if (slot[2] == 1L << 31) { // 2^31 bytes, byte_len's u32 0x80000000
                    assertEquals(WcStatus.SUCCESS, r.status(), what + ": " + r);
                    assertEquals(Integer.MIN_VALUE, r.byteLen(), what);
                    assertEquals(QpState.RTS, p.b.qp.state(), what);
                    assertEquals(malformed, ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED), what);
                    continue;
                }
                assertEquals(WcStatus.LOC_LEN_ERR, r.status(), what + ": " + r);
                assertEquals(3, r.wrId());
                long until = System.nanoTime() + 10_000_000_000L; // DEDICATED: the engine moves it after the push
                while (p.b.qp.state() != QpState.ERROR && System.nanoTime() - until < 0) {
                    p.b.ctx.progress();
                    Thread.onSpinWait();
                }
                assertEquals(QpState.ERROR, p.b.qp.state(), what);
                assertEquals(malformed + 1, ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED),
                        what + ": not counted as malformed");
                assertEquals(-1, p.b.buf.mismatch(MemorySegment.ofArray(new byte[1 << 16]).fill((byte) 0x5A)),
                        what + ": the receive's buffer was written");
            }
        }
    }

    /**
     * A receive with an SGE of negative length (a u32 of 2^31 or more in ibverbs) is refused at post with EINVAL, on a
     * QP's queue and on an SRQ (before, it was taken: a scatter read the length as a skip and placed the data after it).
     */
    @Test
    void aReceiveWithANegativeLengthIsRefused() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            int einval = io.jrdma.verbs.RdmaException.Errno.EINVAL.value();
            assertEquals(einval, p.b.qp.postRecv(rwr.reset().wrId(1).sge(0, p.b.mr, 64, -16)), "the QP's queue");
            var srq = p.b.pd.createSrq(io.jrdma.verbs.SrqInitAttr.of(16, 2));
            try {
                assertEquals(einval, srq.postRecv(rwr.reset().wrId(2).sge(0, p.b.mr, 64, -16)), "an SRQ");
                assertEquals(0, srq.postRecv(rwr.reset().wrId(3).sge(0, p.b.mr, 64, 16)), "a length of 0 or more is taken");
            } finally {
                srq.close();
            }
        }
    }

    /**
     * An INLINE request of zero bytes on a QP made without inline data (max_inline_data 0) is posted and completes
     * (before, its copy into the QP's inline area, which such a QP does not have, threw a NullPointerException out of
     * postSend).
     */
    @Test
    void anEmptyInlineSendOnAQpWithoutInlineDataIsPosted() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            var cq = p.a.ctx.createCq(16);
            var qp = p.a.pd.createQp(new io.jrdma.verbs.QpInitAttr(io.jrdma.verbs.QpType.RC, cq, cq, 16, 16, 1, 1, 0, false));
            try {
                qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ShmPair.ALL));
                qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.RTR).av(new io.jrdma.verbs.AddressVector(p.b.ctx.gid(0), 0, 64, 0, 4791))
                        .pathMtu(io.jrdma.verbs.Mtu.MTU_4096).destQpn(p.b.qp.qpn()).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
                qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.RTS).sqPsn(0).timeout(8).retryCnt(1).rnrRetry(0).maxRdAtomic(16));
                assertEquals(0, qp.postSend(new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE)
                        .flags(SendFlags.INLINE | SendFlags.SIGNALED).sge(0, p.a.mr, 0, 0)
                        .remote(p.b.buf.address(), p.b.mr.rkey())), "posted");
                WorkCompletion wc = p.await(cq);
                assertEquals(9, wc.wrId());
            } finally {
                qp.close();
                cq.close();
            }
        }
    }

    /**
     * A modify refused with EINVAL (a P_Key index or port the device does not have) changes nothing, the access flags
     * it also named included (before, they were written before the refusal).
     */
    @Test
    void aRefusedModifyLeavesTheAccessFlagsAsTheyWere() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            var qp = p.b.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.b.cq));
            try {
                qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ShmPair.ALL));
                io.jrdma.verbs.RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(io.jrdma.verbs.RdmaException.class,
                        () -> qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.INIT).accessFlags(Access.REMOTE_READ)
                                .pkeyIndex(1))); // INIT to INIT: P_Key index and access flags both allowed
                assertEquals(io.jrdma.verbs.RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
                assertEquals(ShmPair.ALL, qp.query().accessFlags(), "the refused modify's access flags");
            } finally {
                qp.close();
            }
        }
    }

    /** Writes a slot by hand at ring position {@code pos} of b's QP, as a peer process can: flags, opcode, length, message. */
    private static void forge(ShmPair p, long pos, int flags, WrOpcode op, int len, int msg) {
        MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
        ShmQp q = (ShmQp) p.b.qp;
        long s = q.ring + (pos % Ctrl.RING_SLOTS) * Ctrl.SLOT;
        c.set(ValueLayout.JAVA_LONG, s + Ctrl.S_FLAGS_LEN, (flags | op.ordinal() << 8) & 0xFFFFFFFFL | (long) len << 32);
        c.set(ValueLayout.JAVA_LONG, s + Ctrl.S_IMM_MSG, (long) msg << 32);
        ShmTransport.LONG.setVolatile(c, s + Ctrl.S_SEQ, ShmTransport.seq(pos) & 0xFFFFFFFFL | (long) p.b.qp.qpn() << 32);
        ShmTransport.signal(c);
    }

    /**
     * Slots whose sequence no sender writes, as a peer process might leave them: a message begun while another is in
     * progress, a chunk of another message or with another opcode in the middle of one, and flags an opcode never
     * carries (an invalidation on a WRITE with immediate data). Each is dropped and counted as malformed, the receive
     * in progress (or the next) completes with LOC_LEN_ERR, and the QP moves to ERROR (before, the first completed
     * the receive SUCCESS with the second message's length over the first's bytes, and the others were dropped
     * silently or invalidated a key).
     */
    @Test
    void chunksOutOfTheirMessagesOrderAreMalformed() {
        record Case(String what, int[][] slots) { } // each slot: flags, opcode, length, message
        int first = Ctrl.F_FIRST;
        int send = WrOpcode.SEND.ordinal();
        Case[] cases = {
            new Case("a new message in the middle of one", new int[][] {{first, send, Ctrl.CHUNK, 5}, {first | Ctrl.F_LAST, send, 100, 6}}),
            new Case("another message's chunk", new int[][] {{first, send, Ctrl.CHUNK, 5}, {Ctrl.F_LAST, send, 100, 6}}),
            new Case("another opcode's chunk", new int[][] {{first, send, Ctrl.CHUNK, 5},
                {Ctrl.F_LAST | Ctrl.F_IMM, WrOpcode.RDMA_WRITE_WITH_IMM.ordinal(), 0, 5}}),
            new Case("an invalidation on a WRITE with immediate data", new int[][] {
                {first | Ctrl.F_LAST | Ctrl.F_IMM | Ctrl.F_INV, WrOpcode.RDMA_WRITE_WITH_IMM.ordinal(), 0, 5}}),
            // whole 8-byte messages, which a poll would otherwise take straight into its completion (receiveInto)
            new Case("an invalidation on a plain SEND", new int[][] {{first | Ctrl.F_LAST | Ctrl.F_INV, send, 8, 5}}),
            new Case("immediate data on a plain SEND", new int[][] {{first | Ctrl.F_LAST | Ctrl.F_IMM, send, 8, 5}}),
            new Case("no immediate data on a SEND_WITH_IMM", new int[][] {
                {first | Ctrl.F_LAST, WrOpcode.SEND_WITH_IMM.ordinal(), 8, 5}}),
            new Case("an opcode no slot carries", new int[][] {
                {first | Ctrl.F_LAST | Ctrl.F_IMM, WrOpcode.RDMA_WRITE.ordinal(), 8, 5}}),
        };
        for (Case k : cases) {
            try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
                io.jrdma.engine.core.Context ctx = (io.jrdma.engine.core.Context) p.b.ctx;
                long malformed = ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED);
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(3).sge(0, p.b.mr, 0, 1 << 15)));
                for (int n = 0; n < 4; n++) {
                    assertEquals(0, p.b.cq.poll(new WorkCompletion())); // b's QP (a receive posted) joins the watched list
                }
                long pos = ((ShmQp) p.b.qp).ringRead;
                for (int i = 0; i < k.slots.length; i++) {
                    int[] sl = k.slots[i];
                    forge(p, pos + i, sl[0], WrOpcode.values()[sl[1]], sl[2], sl[3]);
                }
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.LOC_LEN_ERR, r.status(), k.what + ": " + r);
                assertEquals(3, r.wrId(), k.what);
                assertEquals(QpState.ERROR, p.b.qp.state(), k.what);
                assertEquals(malformed + 1, ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED), k.what);
            }
        }
    }

    /**
     * After an RNR the receiver drops every slot until the refused message comes again, a slot of a malformed length
     * too: it is not counted as malformed, and the QP stays in RTS (before, the malformed check came first: the slot
     * took the receive posted meanwhile, failed it with LOC_LEN_ERR and moved the QP to ERROR).
     */
    @Test
    void aRefusedQpDropsEvenAMalformedSlotBehindTheRefusedMessage() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            io.jrdma.engine.core.Context ctx = (io.jrdma.engine.core.Context) p.b.ctx;
            long pos = ((ShmQp) p.b.qp).ringRead;
            forge(p, pos, Ctrl.F_FIRST | Ctrl.F_LAST, WrOpcode.SEND, 8, 1); // no receive: refused
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!((ShmQp) p.b.qp).refused) {
                p.b.ctx.progress();
                assertTrue(System.nanoTime() < deadline, "no RNR");
            }
            long malformed = ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED);
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(4).sge(0, p.b.mr, 0, 64)));
            forge(p, pos + 1, Ctrl.F_FIRST | Ctrl.F_LAST, WrOpcode.SEND, Ctrl.CHUNK + 1, 2); // behind it, no RETRY mark
            while (((ShmQp) p.b.qp).ringRead < pos + 2) {
                p.b.ctx.progress();
                assertTrue(System.nanoTime() < deadline, "the slot was not read");
            }
            assertEquals(malformed, ctx.engine.counters.get(io.jrdma.engine.core.Counter.RCVD_MALFORMED), "dropped, not malformed");
            assertEquals(QpState.RTS, p.b.qp.state());
            assertEquals(0, p.b.cq.poll(new WorkCompletion()), "the receive stays posted");
        }
    }

    /**
     * The receiving QP's directory entry names its ring (Q_RING), and a peer process can write that word: the sender
     * takes the ring's place from the layout instead, so a SEND still lands in the receiver's ring (with the word
     * believed, it went to another QP's ring, or past the control segment's mapping).
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aSenderWritesTheRingTheLayoutGivesNotTheOneTheEntryNames(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
            ShmQp q = (ShmQp) p.b.qp;
            c.set(ValueLayout.JAVA_LONG, q.dir + Ctrl.Q_RING, Ctrl.ring(q.slot + 1)); // another QP's place
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.RESET));
            ShmPair.connect(p.a, p.b, 7); // the sender finds the peer QP again, and reads its entry
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(4).sge(0, p.b.mr, 0, 64)));
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0xFEED);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(5).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)));
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(0xFEED, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
        }
    }
}

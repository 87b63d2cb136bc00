package io.jrdma.engine.shm;

import io.jrdma.verbs.QpAttr;
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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Several SENDs of one QP in flight at once (docs/shm-design.md, "Two-sided operations: inbound rings"): the sender
 * writes the messages behind each other into the receiver's ring without waiting for each one's result; an RNR in
 * the middle sends the refused message and every one after it again, in order (go-back-N), and the receiver drops
 * what was written behind the refused one; a NAK fails its message and flushes the rest; a request that touches
 * memory here (a WRITE) waits until every SEND before it was taken.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmSendPipelineTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    /** Posts SEND {@code i} of {@code len} bytes from a's buffer at {@code i * len}, its first 8 bytes {@code i}. */
    private void postSend(ShmPair p, int i, int len, boolean signaled) {
        p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, (long) i * len, 1000L + i);
        assertEquals(0, p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND)
                .flags(signaled ? SendFlags.SIGNALED : 0).sge(0, p.a.mr, (long) i * len, len)), "post " + i);
    }

    private void postRecv(ShmPair p, int i, int len) {
        assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, (1L << 20) + (long) i * len, len)));
    }

    /** Polls b's CQ for the receive of message {@code i} and checks what it carried. */
    private static void assertReceived(ShmPair p, int i, int len) {
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, r.status(), "receive " + i + ": " + r);
        assertEquals(WcOpcode.RECV, r.opcode());
        assertEquals(i, r.wrId(), "the receives complete in order");
        assertEquals(len, r.byteLen());
        assertEquals(1000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, (1L << 20) + (long) i * len),
                "message " + i + " landed in receive " + i);
    }

    /** Polls a's CQ for the next completion: request {@code wrId} (they complete in order), with {@code status}. */
    private static void assertSendDone(ShmPair p, int wrId, WcStatus status, String what) {
        WorkCompletion s = p.await(p.a.cq);
        assertEquals(status, s.status(), what + ": " + s);
        assertEquals(wrId, s.wrId(), what + ": request " + wrId + " next, in order");
    }

    /** @return the slots a's QP has written into b's ring in their connection (b's positions start at a random base) */
    private static long sentSlots(ShmPair p) {
        ShmQp a = (ShmQp) p.a.qp;
        return a.ringGen < 0 ? 0 : a.ringWrite - ((ShmQp) p.b.qp).ringBase;
    }

    @Test
    void theSenderWritesSeveralMessagesBeforeAnyResult() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            for (int i = 0; i < 12; i++) {
                postRecv(p, i, 64);
            }
            for (int i = 0; i < 12; i++) {
                postSend(p, i, 64, true);
            }
            // only a's engine runs: b takes nothing, so no result comes; one message in flight at a time wrote one slot
            for (int k = 0; k < 20; k++) {
                p.a.ctx.progress();
            }
            assertEquals(12, sentSlots(p), "every message in the ring before any result");
            assertEquals(0, p.a.cq.poll(new WorkCompletion()), "no SEND completes before the receiver took it");
            for (int i = 0; i < 12; i++) {
                assertReceived(p, i, 64);
            }
            for (int i = 0; i < 12; i++) {
                assertSendDone(p, i, WcStatus.SUCCESS, "SEND " + i);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void anRnrInTheMiddleSendsTheRefusedMessageAndTheRestAgainInOrder(ThreadingMode mode) {
        for (int len : new int[] {8, 20_000}) { // one slot, and three slots a message
            try (ShmPair p = new ShmPair(mode, 1 << 21)) {
                int n = len == 8 ? 12 : 5; // what the ring holds
                for (int i = 0; i < 3; i++) {
                    postRecv(p, i, len);
                }
                for (int i = 0; i < n; i++) {
                    postSend(p, i, len, true);
                }
                for (int i = 0; i < 3; i++) {
                    assertReceived(p, i, len);
                }
                // message 3 finds no receive: refused, and what follows it dropped, until the sender goes back
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (p.b.ctx.counters().getOrDefault("send_rnr_err", 0L) == 0) {
                    p.a.ctx.progress();
                    p.b.ctx.progress();
                    assertTrue(System.nanoTime() < deadline, "no RNR");
                }
                for (int i = 3; i < n; i++) {
                    postRecv(p, i, len);
                }
                for (int i = 3; i < n; i++) {
                    assertReceived(p, i, len);
                }
                for (int i = 0; i < n; i++) {
                    assertSendDone(p, i, WcStatus.SUCCESS, len + " B, SEND " + i);
                }
                assertEquals(0, p.b.cq.poll(new WorkCompletion()), "no message arrived twice");
            }
        }
    }

    @Test
    void rnrRetriesRunningOutFailTheRefusedMessageAndFlushTheRest() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            p.a.qp.modify(new QpAttr().rnrRetry(1));
            postRecv(p, 0, 8);
            for (int i = 0; i < 5; i++) {
                postSend(p, i, 8, true);
            }
            assertReceived(p, 0, 8);
            assertSendDone(p, 0, WcStatus.SUCCESS, "the message taken");
            assertSendDone(p, 1, WcStatus.RNR_RETRY_EXC_ERR, "the message refused");
            for (int i = 2; i < 5; i++) {
                assertSendDone(p, i, WcStatus.WR_FLUSH_ERR, "a message behind it");
            }
            assertEquals(QpState.ERROR, p.a.qp.state());
        }
    }

    /**
     * An RNR whose result also completes messages before the refused one is progress: the retries count again for the
     * refused message alone. Driven step by step (each engine alone) so that the receiver takes the first message
     * sent again and refuses the second in one pass, and the sender reads only that RNR.
     */
    @Test
    void anRnrThatCompletesEarlierMessagesStartsTheRetriesAnew() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            p.a.qp.modify(new QpAttr().rnrRetry(1));
            ShmQp a = (ShmQp) p.a.qp;
            postSend(p, 0, 8, true);
            postSend(p, 1, 8, true);
            assertEquals(2, sentSlots(p), "both messages in the ring");
            p.b.ctx.progress(); // message 0 refused (no receive), message 1 dropped behind it
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (sentSlots(p) < 4) { // the RNR read (one retry used), the timer, both sent again
                p.a.ctx.progress();
                assertTrue(System.nanoTime() < deadline, "not sent again");
            }
            postRecv(p, 0, 8);
            p.b.ctx.progress(); // one pass: the retried message 0 taken, message 1 refused: the answer is RNR(1)
            assertReceived(p, 0, 8);
            assertSendDone(p, 0, WcStatus.SUCCESS, "a reads RNR(1): 0 done"); // 1 refused once since
            postRecv(p, 1, 8);
            assertSendDone(p, 1, WcStatus.SUCCESS, "message 1 refused once, with one retry left");
            assertReceived(p, 1, 8);
        }
    }

    /**
     * A result only a broken or hostile peer writes: DONE for the message the sender is still writing (the ring was
     * full in its middle). The sender completes nothing on it, and the real answers complete every message after.
     */
    @Test
    void aDoneForAMessageStillBeingWrittenCompletesNothing() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            int len = 20_000; // three slots: five messages fill 15 of the 16, the sixth stops after its first chunk
            for (int i = 0; i < 6; i++) {
                postSend(p, i, len, true);
            }
            ShmQp a = (ShmQp) p.a.qp;
            assertEquals(16, sentSlots(p));
            assertTrue(a.sending, "the sixth message is being written");
            ShmTransport b = (ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport;
            int sixth = a.firstMsg + 5;
            long done = (sixth & 0xFFFFFFFFL) | (long) Ctrl.DONE << 32; // little-endian: number low, status high
            ShmTransport.LONG.setRelease(b.ctrl, ((ShmQp) p.b.qp).resp + Ctrl.R_RESULT, done);
            for (int k = 0; k < 10; k++) {
                p.a.ctx.progress();
            }
            assertEquals(0, p.a.cq.poll(new WorkCompletion()), "a SEND completed on a result no receiver gives");
            for (int i = 0; i < 6; i++) {
                postRecv(p, i, len);
            }
            for (int i = 0; i < 6; i++) {
                assertReceived(p, i, len);
            }
            for (int i = 0; i < 6; i++) {
                assertSendDone(p, i, WcStatus.SUCCESS, "SEND " + i);
            }
        }
    }

    @Test
    void aNakInTheMiddleFailsItsMessageAfterTheOnesBefore() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            postRecv(p, 0, 64);
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(1).sge(0, p.b.mr, 1L << 20, 16))); // too short for 64
            postRecv(p, 2, 64);
            for (int i = 0; i < 4; i++) {
                postSend(p, i, 64, true);
            }
            assertReceived(p, 0, 64);
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.LOC_LEN_ERR, r.status());
            assertSendDone(p, 0, WcStatus.SUCCESS, "the message before it");
            assertSendDone(p, 1, WcStatus.REM_INV_REQ_ERR, "the message refused");
            for (int i = 2; i < 4; i++) {
                assertSendDone(p, i, WcStatus.WR_FLUSH_ERR, "a message behind it");
            }
        }
    }

    @Test
    void aWriteBehindARefusedSendWaitsForIt() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            postSend(p, 0, 8, true);
            p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, 4096, 0x5EED);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(9).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 4096, 8).remote(p.b.mr.address() + 8192, p.b.mr.rkey())));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.b.ctx.counters().getOrDefault("send_rnr_err", 0L) < 2) { // refused, and refused again
                p.a.ctx.progress();
                p.b.ctx.progress();
                assertTrue(System.nanoTime() < deadline, "no second RNR");
            }
            assertEquals(0L, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, 8192),
                    "the WRITE landed while the SEND before it was refused");
            postRecv(p, 0, 8);
            assertReceived(p, 0, 8);
            assertSendDone(p, 0, WcStatus.SUCCESS, "the SEND");
            assertSendDone(p, 9, WcStatus.SUCCESS, "the WRITE behind it");
            assertEquals(0x5EEDL, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, 8192));
        }
    }

    /**
     * A receiver whose QP was reset and connected to another QP takes nothing more from the one it left: that one's
     * SEND in flight (in the ring before the reset, never answered) fails with RETRY_EXC_ERR once its retries run
     * out, as toward a QP that is gone, and does not land in the receive the new connection's message takes, which
     * lands whole (before, the old sender found the receiver's QP live again by its QPN and state, and waited for
     * its answer for ever).
     */
    @Test
    void aReceiverConnectedToAnotherQpTakesNothingMoreFromTheOneItLeft() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            postSend(p, 0, 64, true); // in b's ring; b's engine does not run, so no answer
            assertEquals(1, sentSlots(p));
            io.jrdma.verbs.QueuePair a2 = p.a.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.a.cq).withDepth(64, 64));
            try {
                p.b.qp.modify(new QpAttr().state(QpState.RESET));
                connectQp(p.b.qp, p.a, a2.qpn());
                connectQp(a2, p.b, p.b.qp.qpn());
                postRecv(p, 0, 64);
                assertSendDone(p, 0, WcStatus.RETRY_EXC_ERR, "the SEND to a QP that left");
                p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, 4096, 0xA2L);
                assertEquals(0, a2.postSend(wr.reset().wrId(7).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 4096, 64)));
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status(), "the new connection's message: " + r);
                assertEquals(0, r.wrId());
                assertEquals(64, r.byteLen());
                assertEquals(0xA2L, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, 1L << 20), "a2's message, not a's");
                assertSendDone(p, 7, WcStatus.SUCCESS, "a2's SEND");
            } finally {
                a2.close();
            }
        }
    }

    /**
     * A slot a sender of an earlier connection stores after the receiver's reset cleared its ring (a sender stalled in
     * its hold past the reset's drain, a GC pause say) is not taken as a message of the next connection: each
     * connection's positions start at a random base, so the stale slot's sequence (its old position's) is not one the
     * new connection reads. Before, every connection started at 0, and a stale slot of an earlier connection's first
     * message was the next connection's first message.
     */
    @Test
    void aStaleSlotOfAnEarlierConnectionIsNotTakenByTheNext() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            ShmQp b = (ShmQp) p.b.qp;
            long old = b.ringBase; // the earlier connection's first position: where its stalled first SEND goes
            p.b.qp.modify(new QpAttr().state(QpState.RESET));
            p.a.qp.modify(new QpAttr().state(QpState.RESET));
            ShmPair.connect(p.b, p.a, 7);
            ShmPair.connect(p.a, p.b, 7);
            java.lang.foreign.MemorySegment c = p.b.transport().ctrl;
            long at = b.ring + (old & (Ctrl.RING_SLOTS - 1)) * Ctrl.SLOT;
            c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_INLINE, 0xBADL);
            c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_FLAGS_LEN,
                    (Ctrl.F_FIRST | Ctrl.F_LAST | WrOpcode.SEND.ordinal() << 8) & 0xFFFFFFFFL | 8L << 32);
            c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_IMM_MSG, 1L << 32);
            ShmTransport.LONG.setVolatile(c, at + Ctrl.S_SEQ, ShmTransport.seq(old) & 0xFFFFFFFFL | (long) b.qpn() << 32);
            postRecv(p, 0, 8);
            WorkCompletion wc = new WorkCompletion();
            long until = System.nanoTime() + 50_000_000L;
            while (System.nanoTime() < until) {
                p.b.ctx.progress();
                assertEquals(0, p.b.cq.poll(wc), "a stale slot of the earlier connection was taken: " + wc);
            }
            p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0x600DL);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)));
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(8, r.byteLen());
            assertEquals(0x600DL, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, 1L << 20), "the new connection's message");
            assertSendDone(p, 1, WcStatus.SUCCESS, "the new connection's SEND");
        }
    }

    /**
     * A receive whose completion finds its CQ full (CQ_ERR) is not answered DONE: its SEND fails with REM_OP_ERR and
     * the ones behind it are flushed, while those whose receives completed succeed (before, the receiver answered
     * DONE for every message of its duty cycle, so SENDs succeeded whose receives never completed).
     */
    @Test
    void aSendWhoseReceiveFindsTheCqFullDoesNotSucceed() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21, 4)) {
            for (int i = 0; i < 8; i++) {
                postRecv(p, i, 64);
            }
            for (int i = 0; i < 8; i++) {
                postSend(p, i, 64, true);
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.b.ctx.counters().getOrDefault("cq_overflow", 0L) == 0) { // b's engine runs, its CQ not polled
                p.b.ctx.progress();
                assertTrue(System.nanoTime() < deadline, "b's CQ did not overrun");
            }
            for (int i = 0; i < 4; i++) {
                assertSendDone(p, i, WcStatus.SUCCESS, "SEND " + i + ", whose receive completed");
            }
            assertSendDone(p, 4, WcStatus.REM_OP_ERR, "SEND 4, whose receive's completion found the CQ full");
            for (int i = 5; i < 8; i++) {
                assertSendDone(p, i, WcStatus.WR_FLUSH_ERR, "SEND " + i);
            }
        }
    }

    /** Connects {@code qp} (INIT, RTR, RTS) to QP {@code destQpn} of {@code peer}'s context, with short retries. */
    private static void connectQp(io.jrdma.verbs.QueuePair qp, ShmPair.Side peer, int destQpn) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ShmPair.ALL));
        qp.modify(new QpAttr().state(QpState.RTR).av(new io.jrdma.verbs.AddressVector(peer.ctx.gid(0), 0, 64, 0, 4791))
                .pathMtu(io.jrdma.verbs.Mtu.MTU_4096).destQpn(destQpn).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(10).retryCnt(3).rnrRetry(7).maxRdAtomic(16));
    }

    private static ShmTransport transport(ShmPair.Side s) {
        return (ShmTransport) ((io.jrdma.engine.core.Context) s.ctx).engine.transport;
    }

    /**
     * Resets b's QP in a thread while {@code hold} (a sender's hold word, set to {@link Ctrl#SEND_HOLD} by hand, as a
     * sender stopped between its check of b's partner name and its slot's store leaves it) is set: the reset waits,
     * with the partner's name cleared; the "late" slot is then stored into b's ring by hand, the hold cleared, and
     * the reset must end with the ring clear (the slot gone), so that a new connection cannot take it.
     */
    private static void assertResetWaitsForTheSendHoldThenClearsTheRing(ShmPair p, MemorySegment holdSeg, long hold)
            throws InterruptedException {
        MemorySegment c = transport(p.b).ctrl;
        ShmQp b = (ShmQp) p.b.qp;
        ShmTransport.INT.setVolatile(holdSeg, hold, Ctrl.SEND_HOLD);
        Thread t = new Thread(() -> p.b.qp.modify(new QpAttr().state(QpState.RESET)), "reset");
        t.start();
        try {
            t.join(200);
            assertTrue(t.isAlive(), "the reset went on while a sender held its check of the partner's name");
            assertEquals(0, (int) ShmTransport.INT.getVolatile(c, b.dir + Ctrl.Q_DEST_QPN), "the partner's name, cleared first");
            ShmTransport.INT.setVolatile(c, b.ring + Ctrl.S_SEQ + 4, b.qpn()); // a held sender's slot (slot 0, seq(0))
            ShmTransport.INT.setVolatile(c, b.ring + Ctrl.S_SEQ, ShmTransport.seq(0));
        } finally {
            ShmTransport.INT.setVolatile(holdSeg, hold, 0);
        }
        t.join(10_000);
        assertTrue(!t.isAlive(), "the reset did not end after the hold");
        assertEquals(0, (int) ShmTransport.INT.getVolatile(c, b.ring + Ctrl.S_SEQ),
                "the slot stored under the hold, cleared by the reset");
    }

    /**
     * With membarrier (both ends): a QP reset while its partner holds by its own word for a SEND (between the check of
     * the partner's name and the slot's store) waits for that hold before it clears its ring, so the slot is gone
     * when the reset ends (fails when the ring is cleared before the partner is let go: the slot stays, and the next
     * connection's receiver takes it as its new sender's, or it overwrites one).
     */
    @Test
    void aResetClearsItsRingAfterItsPartnersSendHold() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Native.asymmetric(), () -> "membarrier: " + Native.asymmetricReason());
        try (ShmPair p = new ShmPair(ThreadingMode.DEDICATED, 1 << 16)) {
            assertResetWaitsForTheSendHoldThenClearsTheRing(p, ShmTransport.ALL,
                    transport(p.a).ctrl.address() + Ctrl.hold(((ShmQp) p.a.qp).slot));
        }
    }

    /**
     * Without the own hold (locked holds, one end without membarrier): a sender's hold is the destination QP's held
     * word, and a reset waits while it is set before it clears its ring (fails without that wait: the reset ends at
     * once, the slot stays).
     */
    @Test
    void withLockedHoldsAResetClearsItsRingAfterASendersHold() throws Exception {
        boolean was = ShmTransport.ownHoldForNewContexts;
        ShmTransport.ownHoldForNewContexts = false;
        try (ShmPair p = new ShmPair(ThreadingMode.DEDICATED, 1 << 16)) {
            ShmTransport.ownHoldForNewContexts = was;
            assertResetWaitsForTheSendHoldThenClearsTheRing(p, transport(p.b).ctrl, ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD);
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
    }

    /**
     * A SEND holds by its sender's own word while it checks the receiver and stores its slot, and gives it back: a
     * sentinel put there by hand is 0 after the SEND (fails when the SEND takes no hold: the sentinel stays; that
     * the hold's store comes before the check of the partner's name, no test on one thread can see). The direct
     * path (8 B, the send queue empty, INVOKER) and the queued one (three slots), in both threading modes.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aSendTakesItsOwnHoldAndGivesItBack(ThreadingMode mode) {
        org.junit.jupiter.api.Assumptions.assumeTrue(Native.asymmetric(), () -> "membarrier: " + Native.asymmetricReason());
        try (ShmPair p = new ShmPair(mode, 1 << 21)) {
            long own = transport(p.a).ctrl.address() + Ctrl.hold(((ShmQp) p.a.qp).slot);
            int i = 0;
            for (int len : new int[] {8, 3 * Ctrl.CHUNK}) {
                ShmTransport.INT.setVolatile(ShmTransport.ALL, own, 777);
                postRecv(p, i, len);
                postSend(p, i, len, true);
                assertReceived(p, i, len);
                assertSendDone(p, i, WcStatus.SUCCESS, len + " B");
                assertEquals(0, (int) ShmTransport.INT.getVolatile(ShmTransport.ALL, own), "the own hold after " + len + " B");
                i++;
            }
        }
    }

    /**
     * With locked holds, a SEND takes the receiving QP's held word: while another initiator has it, the SEND waits
     * (nothing lands), and once it is free the SEND lands, completes, and the word is 0 again (fails without the
     * hold on the SEND's path: the message lands while the word is taken).
     */
    @Test
    void withLockedHoldsASendWaitsWhileAnotherInitiatorHasTheHeldWord() {
        boolean was = ShmTransport.ownHoldForNewContexts;
        ShmTransport.ownHoldForNewContexts = false;
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            ShmTransport.ownHoldForNewContexts = was;
            MemorySegment c = transport(p.b).ctrl;
            long held = ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD;
            ShmTransport.INT.setVolatile(c, held, 4321);
            postRecv(p, 0, 64);
            postSend(p, 0, 64, true);
            WorkCompletion wc = new WorkCompletion();
            for (int k = 0; k < 2000; k++) { // a few ms of both engines' cycles: the SEND must wait them out
                p.a.ctx.progress();
                p.b.ctx.progress();
                assertEquals(0, p.b.cq.poll(wc), "a receive completed while another initiator had the held word");
            }
            assertEquals(0, sentSlots(p), "a slot written while another initiator had the held word");
            ShmTransport.INT.setVolatile(c, held, 0);
            assertReceived(p, 0, 64);
            assertSendDone(p, 0, WcStatus.SUCCESS, "the SEND once the word was free");
            assertEquals(0, (int) ShmTransport.INT.getVolatile(c, held), "the held word, given back");
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
    }
}

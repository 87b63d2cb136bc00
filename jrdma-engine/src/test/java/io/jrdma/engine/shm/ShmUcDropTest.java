package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.verbs.CompletionQueue;
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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * UC on shm0, what the conformance suite's {@code UcTck} does not reach: what a UC receiver drops (a message that finds
 * no receive, one longer than its receive, which stays for the next) and a sender whose messages nothing takes (its
 * peer QP reset): each sender completes SUCCESS, as UC has no acknowledgement, nothing is written, the drops are
 * counted (uc_dropped_msgs, rcvd_too_long) and both QPs go on.
 */
@Timeout(60)
class ShmUcDropTest {
    private static final int SIZE = 1 << 16;

    private static long counter(ShmPair.Side s, Counter c) {
        return ((Context) s.ctx).engine.counters.get(c);
    }

    /** Drives both engines for 50 ms and asserts that {@code cq} got nothing. */
    private static void nothingOn(ShmPair p, CompletionQueue cq, String what) {
        WorkCompletion wc = new WorkCompletion();
        long until = System.nanoTime() + 50_000_000L;
        while (System.nanoTime() < until) {
            p.a.ctx.progress();
            p.b.ctx.progress();
            assertEquals(0, cq.poll(wc), what);
        }
    }

    private static SendWorkRequest send(ShmPair.Side s, long id, int len, long seed) {
        s.buf.set(ValueLayout.JAVA_LONG, 0, seed);
        return new SendWorkRequest().wrId(id).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, s.mr, 0, len);
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aMessageWithNoReceiveOrTooLongIsDroppedAndTheReceiveStays(ThreadingMode mode) {
        try (ShmPair p = ShmPair.uc(mode, SIZE)) {
            ShmPair.Side a = p.a;
            ShmPair.Side b = p.b;
            long dropped = counter(b, Counter.UC_DROPPED_MSGS);
            // no receive posted: the sender completes, the message is lost
            assertEquals(0, a.qp.postSend(send(a, 1, 8, 111)));
            assertEquals(WcStatus.SUCCESS, p.await(a.cq).status());
            nothingOn(p, b.cq, "a UC message that found no receive completed one");
            assertEquals(dropped + 1, counter(b, Counter.UC_DROPPED_MSGS));
            // a receive of 16 bytes: a 64-byte message is dropped, and the receive takes the next message
            long tooLong = counter(b, Counter.RCVD_TOO_LONG);
            assertEquals(0, b.qp.postRecv(new RecvWorkRequest().wrId(7).sge(0, b.mr, 4096, 16)));
            b.buf.set(ValueLayout.JAVA_LONG, 4096, -1);
            assertEquals(0, a.qp.postSend(send(a, 2, 64, 222)));
            assertEquals(WcStatus.SUCCESS, p.await(a.cq).status());
            nothingOn(p, b.cq, "a UC message longer than its receive completed it");
            assertEquals(-1, b.buf.get(ValueLayout.JAVA_LONG, 4096), "a dropped message was written");
            assertEquals(tooLong + 1, counter(b, Counter.RCVD_TOO_LONG));
            assertEquals(dropped + 2, counter(b, Counter.UC_DROPPED_MSGS));
            assertEquals(0, a.qp.postSend(send(a, 3, 8, 333)));
            assertEquals(WcStatus.SUCCESS, p.await(a.cq).status());
            WorkCompletion rc = p.await(b.cq);
            assertEquals(WcStatus.SUCCESS, rc.status());
            assertEquals(7, rc.wrId(), "the receive the long message left took the next one");
            assertEquals(8, rc.byteLen());
            assertEquals(333, b.buf.get(ValueLayout.JAVA_LONG, 4096));
            assertEquals(QpState.RTS, a.qp.state());
            assertEquals(QpState.RTS, b.qp.state());
            // a WRITE with a key the receiver refuses: dropped, the sender completes, the QPs go on
            long bad = counter(a, Counter.UC_DROPPED_MSGS);
            a.buf.set(ValueLayout.JAVA_LONG, 0, 444);
            assertEquals(0, a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, a.mr, 0, 8).remote(b.mr.address() + 8192, b.mr.rkey() + 256)));
            assertEquals(WcStatus.SUCCESS, p.await(a.cq).status());
            assertEquals(0, b.buf.get(ValueLayout.JAVA_LONG, 8192));
            assertEquals(bad + 1, counter(a, Counter.UC_DROPPED_MSGS), "the refused WRITE is counted where it was refused");
            assertEquals(0, a.qp.postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, a.mr, 0, 8).remote(b.mr.address() + 8192, b.mr.rkey())));
            assertEquals(WcStatus.SUCCESS, p.await(a.cq).status());
            assertEquals(444, b.buf.get(ValueLayout.JAVA_LONG, 8192));
        }
    }

    /**
     * A UC SEND larger than the ring (200 KiB against 16 slots of 8 KiB), its receiver not driven so that the ring
     * fills in the message's middle, then the receiving QP reset: the sender completes it SUCCESS (dropped; UC has no
     * retries), its QP stays in RTS, and once both ends are connected again a message arrives whole (found in
     * review: the message went through RC's results and failed with RETRY_EXC_ERR, its QP to ERROR).
     */
    @org.junit.jupiter.api.Test
    void aSendWhosePeerQpGoesInItsMiddleIsDropped() {
        try (ShmPair p = ShmPair.uc(ThreadingMode.INVOKER, 1 << 18)) { // INVOKER: b's engine runs only when driven
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 200 << 10)));
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < 1000; i++) {
                p.a.ctx.progress(); // the receiver is not driven: the ring fills
            }
            assertEquals(0, p.a.cq.poll(wc), "completed before the ring emptied");
            p.b.qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.RESET));
            wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(1, wc.wrId());
            assertEquals(QpState.RTS, p.a.qp.state());
            // a connection starts anew at both ends (as rq_psn and sq_psn are given to both)
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().state(QpState.RESET));
            ShmPair.connectUc(p.a, p.b);
            ShmPair.connectUc(p.b, p.a);
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, p.b.mr, 0, 1 << 18)));
            assertEquals(0, p.a.qp.postSend(send(p.a, 2, 64, 4242)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            WorkCompletion rc = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, rc.status());
            assertEquals(64, rc.byteLen());
            assertEquals(4242, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * Where the two ends hold with locked instructions, a UC sender whose receiving QP's held word stays taken (left by
     * a holder that died; forged here) tries again for a second, then drops the message and goes on (found in review:
     * it waited for ever, its send queue stopped).
     */
    @org.junit.jupiter.api.Test
    void aSendWhoseHeldWordStaysTakenIsDroppedAfterASecond() {
        boolean was = ShmTransport.ownHoldForNewContexts;
        ShmTransport.ownHoldForNewContexts = false;
        try (ShmPair p = ShmPair.uc(ThreadingMode.INVOKER, SIZE)) {
            MemorySegment c = p.b.transport().ctrl;
            long held = takeHeldWord(p);
            long dropped = counter(p.a, Counter.UC_DROPPED_MSGS);
            long t0 = System.nanoTime();
            assertEquals(0, p.a.qp.postSend(send(p.a, 1, 8, 1)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            assertTrue(System.nanoTime() - t0 >= ShmTransport.DRAIN_NANOS, "dropped before its second");
            assertEquals(dropped + 1, counter(p.a, Counter.UC_DROPPED_MSGS));
            ShmTransport.INT.setVolatile(c, held, 0);
            assertEquals(0, p.a.qp.postSend(send(p.a, 2, 8, 2)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            WorkCompletion rc = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, rc.status());
            assertEquals(2, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_LONG, 4096), "the next message arrives");
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
    }

    /**
     * Where the two ends hold with locked instructions, a UC sender whose receiving QP's held word another initiator
     * holds tries again in later cycles, and once the word is given back (within the second it waits) its message
     * goes in and arrives: nothing dropped.
     */
    @org.junit.jupiter.api.Test
    void aSendWhoseHeldWordComesBackArrives() {
        boolean was = ShmTransport.ownHoldForNewContexts;
        ShmTransport.ownHoldForNewContexts = false;
        try (ShmPair p = ShmPair.uc(ThreadingMode.INVOKER, SIZE)) {
            long held = takeHeldWord(p);
            long dropped = counter(p.a, Counter.UC_DROPPED_MSGS);
            assertEquals(0, p.a.qp.postSend(send(p.a, 1, 8, 77)));
            ShmReconnectTest.drivenAloneCompletesNothing(p, 50_000_000L, "completed while the word was taken");
            ShmTransport.INT.setVolatile(p.b.transport().ctrl, held, 0);
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(77, p.b.buf.get(ValueLayout.JAVA_LONG, 4096), "the message arrives");
            assertEquals(dropped, counter(p.a, Counter.UC_DROPPED_MSGS), "dropped");
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
    }

    /**
     * Sets b's QP's held word as another initiator holding it would (forged), and posts a receive at b's offset 4096.
     * @return the held word's offset in b's control segment
     */
    private static long takeHeldWord(ShmPair p) {
        long held = ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD;
        ShmTransport.INT.setVolatile(p.b.transport().ctrl, held, Ctrl.SEND_HOLD);
        assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, p.b.mr, 4096, 64)));
        return held;
    }

    /** A UC sender whose peer QP takes nothing (reset): its SEND and WRITE complete SUCCESS at once, dropped. */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aRequestNothingTakesIsDroppedNotRetried(ThreadingMode mode) {
        try (ShmPair p = ShmPair.uc(mode, SIZE)) {
            ShmPair.Side a = p.a;
            ShmPair.Side b = p.b;
            b.qp.modify(new QpAttr().state(QpState.RESET));
            long dropped = counter(a, Counter.UC_DROPPED_MSGS);
            long t0 = System.nanoTime();
            assertEquals(0, a.qp.postSend(send(a, 1, 8, 1)));
            assertEquals(WcStatus.SUCCESS, p.await(a.cq).status());
            assertEquals(0, a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, a.mr, 0, 8).remote(b.mr.address(), b.mr.rkey())));
            WorkCompletion wc = p.await(a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
            assertTrue(counter(a, Counter.UC_DROPPED_MSGS) >= dropped + 2, "the requests nothing took are counted");
            assertEquals(QpState.RTS, a.qp.state());
        }
    }
}

package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqInitAttr;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * INVOKER: a poll of one completion takes an arrived SEND straight into its {@link WorkCompletion}
 * ({@code ShmTransport.receiveInto}) when nothing else waits in the CQ, and everything that path does not take goes
 * through the duty cycle and the CQ as before; a SEND posted behind SENDs in flight is written by its post
 * ({@code ShmTransport.directBehind}). docs/shm-performance.md, "The 8 B SEND ping-pong, ninth pass".
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmPollIntoTest {
    private static final long RECV_AT = 1L << 20;
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    private void postRecv(ShmPair.Side s, long wrId, MemoryRegion mr, long offset, int len) {
        assertEquals(0, s.qp.postRecv(rwr.reset().wrId(wrId).sge(0, mr, offset, len)), "postRecv " + wrId);
    }

    /** a's SEND {@code i}: 8 bytes from a's buffer at {@code i * 8} holding {@code 1000 + i} */
    private void send(ShmPair p, int i, WrOpcode op, int flags, int imm, int len) {
        p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, (long) i * 64, 1000L + i);
        assertEquals(0, p.a.qp.postSend(wr.reset().wrId(i).opcode(op).flags(flags).imm(imm)
                .sge(0, p.a.mr, (long) i * 64, len)), "post " + i);
    }

    /** One message through the usual path, so that b's QP is on its engine's watched list (it receives). */
    private void warmUp(ShmPair p) {
        postRecv(p.b, 99, p.b.mr, RECV_AT, 64);
        send(p, 0, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8);
        assertEquals(99, p.await(p.b.cq).wrId());
        assertEquals(0, p.await(p.a.cq).wrId());
    }

    @Test
    void anArrivedSendCompletesStraightIntoThePollWithWhatTheCqWouldHaveGiven() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            ShmTransport t = p.b.transport();
            long before = t.receivedIntoPoll;
            postRecv(p.b, 7, p.b.mr, RECV_AT + 64, 32);
            send(p, 1, WrOpcode.SEND_WITH_IMM, SendFlags.SOLICITED | SendFlags.SIGNALED, 0x5eed, 8); // in b's ring once the post returns
            WorkCompletion wc = new WorkCompletion();
            assertEquals(1, p.b.cq.poll(wc), "the first poll after the message is in the ring completes it");
            assertEquals(before + 1, t.receivedIntoPoll, "straight into the poll, not through the CQ");
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(WcOpcode.RECV, wc.opcode());
            assertEquals(7, wc.wrId());
            assertEquals(8, wc.byteLen());
            assertEquals(0x5eed, wc.imm());
            assertEquals(WorkCompletion.WITH_IMM | WorkCompletion.SOLICITED, wc.flags());
            assertEquals(p.b.qp.qpn(), wc.qpNum());
            assertEquals(p.a.qp.qpn(), wc.srcQp());
            assertEquals(1001L, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + 64));
            assertEquals(0, p.b.cq.poll(wc), "nothing else: the CQ got no entry for it");
            java.util.Map<String, Long> c = ShmCountersTest.qpCounters(p.b);
            assertEquals(2L, c.get("rcvd_pkts"), "counted as the duty cycle counts it (the warm-up's and this): " + c);
            assertEquals(16L, c.get("rcvd_bytes"), c.toString());
            // the sender's SEND completes: the receiver's DONE was stored
            send(p, 2, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8); // and one more, with no receive: RNR, retried
            assertEquals(1, p.await(p.a.cq).wrId());
            postRecv(p.b, 8, p.b.mr, RECV_AT + 128, 64);
            assertEquals(8, p.await(p.b.cq).wrId());
            assertEquals(2, p.await(p.a.cq).wrId());
            assertEquals(1002L, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + 128));
        }
    }

    @Test
    void aCompletionAlreadyInTheCqComesFirst() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            postRecv(p.b, 7, p.b.mr, RECV_AT + 64, 64);
            // b's signaled WRITE completes inside its post: its completion waits in b's CQ (send and receive share it)
            assertEquals(0, p.b.qp.postSend(wr.reset().wrId(55).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.b.mr, 0, 8).remote(p.a.mr.address() + 4096, p.a.mr.rkey())));
            send(p, 1, WrOpcode.SEND, 0, 0, 8);
            WorkCompletion wc = new WorkCompletion();
            assertEquals(1, p.b.cq.poll(wc));
            assertEquals(55, wc.wrId(), "the WRITE's completion, which was there first: " + wc);
            assertEquals(1, p.b.cq.poll(wc));
            assertEquals(7, wc.wrId(), "then the receive: " + wc);
        }
    }

    @Test
    void anArmedCqGetsItsEventForAReceive() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            CompletionChannel ch = p.b.ctx.createCompletionChannel();
            CompletionQueue cq = p.b.ctx.createCq(64, ch);
            try (Extra x = extra(p, QpInitAttr.rc(cq).withDepth(64, 64))) {
                QueuePair qp = x.bq();
                QueuePair aq = x.aq();
                assertEquals(0, qp.postRecv(rwr.reset().wrId(1).sge(0, p.b.mr, RECV_AT, 64)));
                WorkCompletion wc = new WorkCompletion();
                for (int k = 0; k < 4; k++) {
                    assertEquals(0, cq.poll(wc)); // its QP joins the watched list
                }
                cq.requestNotify(false);
                assertEquals(0, aq.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 8)));
                assertEquals(1, cq.poll(wc), "the receive, polled");
                assertEquals(1, wc.wrId());
                assertSame(cq, ch.await(Duration.ofSeconds(5)), "the armed CQ's event fired for it");
            } finally {
                cq.close();
                ch.close();
            }
        }
    }

    /** A second pair of QPs on the pair's contexts, connected to each other (b's left in RTR unless {@code bRts}). */
    private record Extra(QueuePair aq, QueuePair bq) implements AutoCloseable {
        @Override
        public void close() {
            aq.close();
            bq.close();
        }
    }

    private static Extra extra(ShmPair p, QpInitAttr aInit, QpInitAttr bInit, boolean bRts) {
        QueuePair aq = p.a.pd.createQp(aInit);
        QueuePair bq = p.b.pd.createQp(bInit);
        connectQp(aq, p.b, bq.qpn(), true);
        connectQp(bq, p.a, aq.qpn(), bRts);
        return new Extra(aq, bq);
    }

    private static Extra extra(ShmPair p, QpInitAttr bInit) {
        return extra(p, QpInitAttr.rc(p.a.cq).withDepth(64, 64), bInit, true);
    }

    private static void connectQp(QueuePair qp, ShmPair.Side peer, int destQpn, boolean rts) {
        qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(ShmPair.ALL));
        qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RTR)
                .av(new io.jrdma.verbs.AddressVector(peer.ctx.gid(0), 0, 64, 0, 4791)).pathMtu(io.jrdma.verbs.Mtu.MTU_4096)
                .destQpn(destQpn).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
        if (rts) {
            qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RTS).sqPsn(0).timeout(14).retryCnt(7)
                    .rnrRetry(7).maxRdAtomic(16));
        }
    }

    @Test
    void aPollTakesOnlyTheReceivesOfItsOwnCq() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            CompletionQueue cq2 = p.b.ctx.createCq(64);
            try (Extra x = extra(p, QpInitAttr.rc(cq2).withDepth(64, 64))) {
                QueuePair bq = x.bq();
                QueuePair aq = x.aq();
                assertEquals(0, bq.postRecv(rwr.reset().wrId(21).sge(0, p.b.mr, RECV_AT, 64)));
                WorkCompletion wc = new WorkCompletion();
                for (int k = 0; k < 4; k++) {
                    assertEquals(0, cq2.poll(wc)); // its QP joins the watched list
                }
                assertEquals(0, aq.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 8)));
                assertEquals(0, p.b.cq.poll(wc), "b's first CQ has nothing: the message is for the QP of the second");
                assertEquals(1, cq2.poll(wc), "the second CQ has it");
                assertEquals(21, wc.wrId());
                assertEquals(bq.qpn(), wc.qpNum());
            } finally {
                cq2.close();
            }
        }
    }

    @Test
    void afterOneReceiveStraightIntoAPollTheNextPollRunsADutyCycle() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            ShmTransport t = p.b.transport();
            for (int i = 1; i <= 8; i++) {
                postRecv(p.b, i, p.b.mr, RECV_AT + i * 64L, 64);
            }
            for (int i = 1; i <= 8; i++) {
                send(p, i, WrOpcode.SEND, 0, 0, 8); // all eight in b's ring
            }
            long before = t.receivedIntoPoll;
            WorkCompletion wc = new WorkCompletion();
            for (int i = 1; i <= 8; i++) {
                assertEquals(1, p.b.cq.poll(wc), "receive " + i);
                assertEquals(i, wc.wrId(), "in order");
                assertEquals(1000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + i * 64L));
            }
            // the first poll took one straight; the second ran a duty cycle, which took the other seven into the CQ
            assertEquals(before + 1, t.receivedIntoPoll, "a stream of arrivals does not keep the duty cycle from running");
        }
    }

    @Test
    void whatThePollDoesNotTakeGoesThroughTheDutyCycleWithItsErrors() {
        // a message longer than a slot's header line, and a SEND_WITH_INV: the usual path, the data right
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            ShmTransport t = p.b.transport();
            long before = t.receivedIntoPoll;
            postRecv(p.b, 1, p.b.mr, RECV_AT, 64);
            send(p, 1, WrOpcode.SEND, 0, 0, 48);
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(48, r.byteLen());
            assertEquals(1001L, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT));
            assertEquals(before, t.receivedIntoPoll, "48 bytes: not in the header's line, the duty cycle's");
        }
        // a SEND_WITH_INV of 8 bytes naming a key b may not invalidate: the duty cycle's check, both QPs fail
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            postRecv(p.b, 1, p.b.mr, RECV_AT, 64);
            send(p, 1, WrOpcode.SEND_WITH_INV, SendFlags.SIGNALED, 0x0badbad0, 8);
            assertEquals(WcStatus.LOC_PROT_ERR, p.await(p.b.cq).status());
            assertEquals(WcStatus.REM_ACCESS_ERR, p.await(p.a.cq).status());
        }
        // a receive too short: LOC_LEN_ERR at the receiver, REM_INV_REQ_ERR at the sender
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            postRecv(p.b, 1, p.b.mr, RECV_AT, 4);
            send(p, 1, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8);
            assertEquals(WcStatus.LOC_LEN_ERR, p.await(p.b.cq).status());
            assertEquals(WcStatus.REM_INV_REQ_ERR, p.await(p.a.cq).status());
        }
        // a receive into a region without local write: LOC_PROT_ERR, nothing written
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            try (MemoryRegion ro = p.b.pd.register(p.b.buf.asSlice(RECV_AT + 4096, 4096), Access.REMOTE_READ)) {
                postRecv(p.b, 1, ro, 0, 64);
                send(p, 1, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8);
                assertEquals(WcStatus.LOC_PROT_ERR, p.await(p.b.cq).status());
                assertEquals(WcStatus.REM_OP_ERR, p.await(p.a.cq).status());
                assertEquals(0L, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + 4096), "nothing written");
            }
        }
    }

    @Test
    void aReceiverWhosePollsTakeEveryMessageStraightStillGivesTheSenderRoom() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            ShmTransport t = p.b.transport();
            long before = t.receivedIntoPoll;
            WorkCompletion wc = new WorkCompletion();
            for (int i = 1; i <= 40; i++) { // more than the ring's 16 slots, more than twice
                postRecv(p.b, i, p.b.mr, RECV_AT + (i % 8) * 64L, 64);
                long written = ((ShmQp) p.a.qp).ringWrite;
                send(p, i % 8, WrOpcode.SEND, 0, 0, 8);
                assertEquals(written + 1, ((ShmQp) p.a.qp).ringWrite, "SEND " + i + " written by its post: the ring had room");
                assertEquals(1, p.b.cq.poll(wc), "receive " + i);
                assertEquals(i, wc.wrId());
                assertEquals(0, p.b.cq.poll(wc)); // the duty cycle's turn (nothing arrived)
                assertEquals(0, p.a.cq.poll(wc)); // a reads the result: the SEND retires (unsignaled)
            }
            assertEquals(before + 40, t.receivedIntoPoll, "every message straight into a poll: its reads are published there");
        }
    }

    @Test
    void aQpInRtrRaisesCommEstForAReceiveTakenIntoThePoll() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            try (Extra x = extra(p, QpInitAttr.rc(p.a.cq).withDepth(64, 64), QpInitAttr.rc(p.b.cq).withDepth(64, 64), false)) {
                QueuePair bq = x.bq(); // left in RTR
                QueuePair aq = x.aq();
                assertEquals(0, bq.postRecv(rwr.reset().wrId(31).sge(0, p.b.mr, RECV_AT, 64)));
                WorkCompletion wc = new WorkCompletion();
                for (int k = 0; k < 4; k++) {
                    assertEquals(0, p.b.cq.poll(wc)); // the QP (in RTR, a receive posted) joins the watched list
                }
                io.jrdma.verbs.AsyncEvent ev = new io.jrdma.verbs.AsyncEvent();
                while (p.b.ctx.pollAsyncEvent(ev)) { // what the set-up raised
                    assertEquals(false, ev.type() == io.jrdma.verbs.AsyncEvent.Type.COMM_EST, "no COMM_EST yet: " + ev);
                }
                ShmTransport t = p.b.transport();
                long before = t.receivedIntoPoll;
                assertEquals(0, aq.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 8)));
                assertEquals(1, p.b.cq.poll(wc), "the receive in RTR");
                assertEquals(31, wc.wrId());
                assertEquals(before + 1, t.receivedIntoPoll, "straight into the poll");
                assertEquals(true, p.b.ctx.pollAsyncEvent(ev), "an event");
                assertEquals(io.jrdma.verbs.AsyncEvent.Type.COMM_EST, ev.type(), ev.toString());
                assertSame(bq, ev.queuePair());
            }
        }
    }

    @Test
    void aSendFromFreedMemoryBehindOneInFlightFailsAloneAndTheOneBeforeCompletes() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            java.lang.foreign.Arena freed = java.lang.foreign.Arena.ofShared();
            MemoryRegion gone = p.a.pd.register(p.a.ctx.allocateBuffer(4096, 4096, freed), Access.LOCAL_WRITE);
            try {
                postRecv(p.b, 1, p.b.mr, RECV_AT + 64, 64);
                postRecv(p.b, 2, p.b.mr, RECV_AT + 128, 64);
                send(p, 1, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8); // in flight: b has not polled
                freed.close(); // the application frees a buffer it left registered
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, gone, 0, 8)), "queued: the post does not read freed memory");
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(1, r.wrId());
                assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                WorkCompletion s1 = p.await(p.a.cq);
                assertEquals(1, s1.wrId(), "the SEND before it completes: " + s1);
                assertEquals(WcStatus.SUCCESS, s1.status(), s1.toString());
                WorkCompletion s2 = p.await(p.a.cq);
                assertEquals(2, s2.wrId());
                assertEquals(WcStatus.LOC_PROT_ERR, s2.status(), s2.toString());
            } finally {
                gone.close();
            }
        }
    }

    /**
     * A receive into a buffer the application freed while it was registered fails with LOC_PROT_ERR (REM_OP_ERR at the
     * sender) whatever the message's length: 8 bytes (the scatter's own path), 16 (a poll's path, through the scatter
     * list's walk) and 48 (the duty cycle's); before, the walk's copy threw out of the poll.
     */
    @Test
    void aReceiveIntoFreedMemoryFailsWithLocProtErr() {
        for (int len : new int[] {8, 16, 48}) {
            try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
                warmUp(p);
                java.lang.foreign.Arena freed = java.lang.foreign.Arena.ofShared();
                MemoryRegion gone = p.b.pd.register(p.b.ctx.allocateBuffer(4096, 4096, freed), Access.LOCAL_WRITE);
                try {
                    postRecv(p.b, 1, gone, 0, 64);
                    freed.close();
                    send(p, 1, WrOpcode.SEND, SendFlags.SIGNALED, 0, len);
                    WorkCompletion r = p.await(p.b.cq);
                    assertEquals(WcStatus.LOC_PROT_ERR, r.status(), len + " B: " + r);
                    assertEquals(WcStatus.REM_OP_ERR, p.await(p.a.cq).status(), len + " B");
                } finally {
                    gone.close();
                }
            }
        }
    }

    @Test
    void aQpOnAnSrqReceivesThroughTheDutyCycle() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            SharedReceiveQueue srq = p.b.pd.createSrq(SrqInitAttr.of(16, 1));
            try (Extra x = extra(p, QpInitAttr.rc(p.b.cq).withDepth(64, 64).withSrq(srq))) {
                QueuePair aq = x.aq();
                ShmTransport t = p.b.transport();
                long before = t.receivedIntoPoll;
                for (int i = 1; i <= 3; i++) {
                    assertEquals(0, srq.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, RECV_AT + i * 64L, 64)));
                }
                for (int i = 1; i <= 3; i++) {
                    p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, i * 64L, 2000L + i);
                    assertEquals(0, aq.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).sge(0, p.a.mr, i * 64L, 8)));
                    WorkCompletion r = p.await(p.b.cq);
                    assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                    assertEquals(i, r.wrId(), "each message its own receive, in order");
                    assertEquals(2000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + i * 64L));
                }
                assertEquals(before, t.receivedIntoPoll, "an SRQ's receives are the duty cycle's");
            } finally {
                srq.close();
            }
        }
    }

    @Test
    void sendsPostedBehindSendsInFlightAreWrittenByTheirPostAndCompleteInOrder() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            ShmTransport t = p.a.transport();
            long before = t.sentBehind;
            for (int i = 1; i <= 6; i++) {
                postRecv(p.b, i, p.b.mr, RECV_AT + i * 64L, 64);
            }
            for (int i = 1; i <= 6; i++) {
                send(p, i, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8); // b takes nothing yet: the first is in flight
                assertEquals(i + 1, ((ShmQp) p.a.qp).ringWrite - ((ShmQp) p.b.qp).ringBase, "SEND " + i + " in b's ring when its post returns");
            }
            assertEquals(before + 5, t.sentBehind, "the five after the first were written behind it by their posts");
            for (int i = 1; i <= 6; i++) {
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(i, r.wrId());
                assertEquals(1000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + i * 64L));
            }
            for (int i = 1; i <= 6; i++) {
                WorkCompletion s = p.await(p.a.cq);
                assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
                assertEquals(i, s.wrId(), "the SENDs complete in order");
            }
        }
    }

    @Test
    void aRefusedQpTakesNothingIntoThePollBeforeTheRefusedMessageComesAgain() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            ShmTransport t = p.b.transport();
            WorkCompletion wc = new WorkCompletion();
            send(p, 1, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8); // no receive posted
            assertEquals(0, p.b.cq.poll(wc), "b refuses message 1 (RNR)");
            // a has not read the refusal: message 2 goes behind message 1, and b drops it (written behind a refused one)
            send(p, 2, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8);
            for (int i = 1; i <= 3; i++) {
                postRecv(p.b, i, p.b.mr, RECV_AT + i * 64L, 64);
            }
            assertEquals(0, p.b.cq.poll(wc), "message 2 dropped; b's QP has receives again");
            // still not read by a: message 3 behind them; b must drop it too, not take it into a poll
            send(p, 3, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8);
            long before = t.receivedIntoPoll;
            assertEquals(0, p.b.cq.poll(wc), "message 3 dropped: it came behind the refused message 1");
            assertEquals(before, t.receivedIntoPoll);
            // a reads the RNR and sends 1, 2 and 3 again after b's RNR timer: they land in order
            for (int i = 1; i <= 3; i++) {
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                assertEquals(i, r.wrId());
                assertEquals(1000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + i * 64L), "message " + i);
            }
            for (int i = 1; i <= 3; i++) {
                assertEquals(i, p.await(p.a.cq).wrId());
            }
        }
    }

    @Test
    void aFullSendQueueRefusesTheNextSendThoughTheRingHasRoom() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            try (Extra x = extra(p, QpInitAttr.rc(p.a.cq).withDepth(4, 4), QpInitAttr.rc(p.b.cq).withDepth(8, 8), true)) {
                QueuePair aq = x.aq();
                QueuePair bq = x.bq();
                for (int i = 1; i <= 4; i++) {
                    p.a.buf.set(ValueLayout.JAVA_LONG_UNALIGNED, i * 64L, 1000L + i);
                    assertEquals(0, aq.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).sge(0, p.a.mr, i * 64L, 8)));
                }
                assertEquals(io.jrdma.verbs.RdmaException.Errno.ENOMEM.value(),
                        aq.postSend(wr.reset().wrId(5).opcode(WrOpcode.SEND).sge(0, p.a.mr, 5 * 64L, 8)),
                        "four SENDs in flight fill a send queue of four");
                for (int i = 1; i <= 4; i++) {
                    assertEquals(0, bq.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, RECV_AT + i * 64L, 64)));
                }
                for (int i = 1; i <= 4; i++) {
                    WorkCompletion r = p.await(p.b.cq);
                    assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                    assertEquals(i, r.wrId());
                    assertEquals(1000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + i * 64L));
                }
            }
        }
    }

    @Test
    void aSendBehindARefusedOneWaitsForTheRetryAndKeepsItsPlace() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 21)) {
            warmUp(p);
            // b asks for 327.68 ms between a refusal and the retry: the post below comes well inside it
            p.b.qp.modify(new io.jrdma.verbs.QpAttr().minRnrTimer(30));
            ShmTransport t = p.a.transport();
            send(p, 1, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8); // no receive posted: refused (RNR)
            WorkCompletion none = new WorkCompletion();
            for (int k = 0; k < 4; k++) {
                assertEquals(0, p.b.cq.poll(none)); // b refuses it
            }
            for (int k = 0; k < 4; k++) {
                assertEquals(0, p.a.cq.poll(none)); // a reads the RNR: its retry waits for the RNR timer
            }
            long before = t.sentBehind;
            ShmQp aq = (ShmQp) p.a.qp;
            long written = aq.ringWrite;
            // the post's hint as stale as a post on another thread may read it: the check under the claim decides
            aq.sqUnderWay = aq.sqProducerAcquire();
            send(p, 2, WrOpcode.SEND, SendFlags.SIGNALED, 0, 8);
            assertEquals(before, t.sentBehind, "not written behind a message that is to be sent again");
            assertEquals(written, aq.ringWrite, "nothing written before the refused message's retry");
            postRecv(p.b, 1, p.b.mr, RECV_AT + 64, 64);
            postRecv(p.b, 2, p.b.mr, RECV_AT + 128, 64);
            for (int i = 1; i <= 2; i++) {
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                assertEquals(i, r.wrId());
                assertEquals(1000L + i, p.b.buf.get(ValueLayout.JAVA_LONG_UNALIGNED, RECV_AT + i * 64L), "message " + i);
            }
            for (int i = 1; i <= 2; i++) {
                WorkCompletion s = p.await(p.a.cq);
                assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
                assertEquals(i, s.wrId());
            }
        }
    }
}

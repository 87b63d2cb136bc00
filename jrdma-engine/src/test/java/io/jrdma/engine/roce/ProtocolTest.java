package io.jrdma.engine.roce;

import io.jrdma.engine.core.Counter;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.Bth;
import io.jrdma.wire.IbOpcode;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One test per transport path, with targeted loss on the in-memory network and the manual clock. */
class ProtocolTest {
    private static int opcode(byte[] p) {
        return p[0] & 0xFF;
    }

    private static int psn(byte[] p) {
        return Bth.psn(MemorySegment.ofArray(p), 0);
    }

    private static boolean ackReq(byte[] p) {
        return Bth.ackReq(MemorySegment.ofArray(p), 0);
    }

    /** Drops the first packet the predicate accepts, once. */
    private static java.util.function.Predicate<byte[]> once(java.util.function.Predicate<byte[]> p) {
        boolean[] done = {false};
        return d -> {
            if (!done[0] && p.test(d)) {
                done[0] = true;
                return true;
            }
            return false;
        };
    }

    private static void ok(Pair p, int count) {
        assertTrue(p.pump(() -> p.a.completions.size() >= count, 1_000_000), "completions: " + p.a.completions);
        for (var wc : p.a.completions) {
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        }
    }

    @Test
    void readConsumesOnePsnPerResponsePacketAndAckReqComesEvery64Packets() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            SendWorkRequest wr = new SendWorkRequest().flags(SendFlags.SIGNALED);
            p.a.qp.postSend(wr.wrId(1).opcode(WrOpcode.RDMA_READ).sge(0, p.a.mr, 0, 5 * 1024 - 3)
                    .remote(p.b.mr.address(), p.b.mr.rkey()));
            p.a.qp.postSend(wr.wrId(2).opcode(WrOpcode.RDMA_WRITE).sge(0, p.a.mr, 0, 200 * 1024)
                    .remote(p.b.mr.address(), p.b.mr.rkey()));
            ok(p, 2);
            List<byte[]> reqs = p.net.captured.stream().filter(d -> (IbOpcode.mask(opcode(d)) & IbOpcode.REQ) != 0).toList();
            int readPsn = psn(reqs.getFirst());
            assertEquals(IbOpcode.RC_RDMA_READ_REQUEST, opcode(reqs.getFirst()));
            assertEquals((readPsn + 5) & 0xFFFFFF, psn(reqs.get(1)), "the WRITE starts 5 PSNs after the READ");
            List<byte[]> resp = p.net.captured.stream().filter(d -> (IbOpcode.mask(opcode(d)) & IbOpcode.READ_RESP) != 0).toList();
            assertEquals(5, resp.size());
            for (int i = 0; i < 5; i++) {
                assertEquals((readPsn + i) & 0xFFFFFF, psn(resp.get(i)));
            }
            assertEquals(IbOpcode.RC_RDMA_READ_RESPONSE_FIRST, opcode(resp.getFirst()));
            assertEquals(IbOpcode.RC_RDMA_READ_RESPONSE_LAST, opcode(resp.getLast()));
            assertEquals(1021 + 3, resp.getLast().length - IbOpcode.headerLength(opcode(resp.getLast())) - 4 + 0,
                    "last response: 1021 payload bytes + 3 pad");
            List<byte[]> writes = reqs.subList(1, reqs.size());
            assertEquals(200, writes.size());
            int sinceAckReq = 0;
            for (int i = 0; i < 200; i++) {
                sinceAckReq = ackReq(writes.get(i)) ? 0 : sinceAckReq + 1;
                assertTrue(sinceAckReq < RoceQp.MAX_PKT_PER_ACK, "AckReq at least every 64 packets, at " + i);
            }
            assertTrue(ackReq(writes.getLast()), "AckReq on the last packet of the message");
            assertTrue(writes.stream().filter(ProtocolTest::ackReq).count() < 10, "and not on every packet");
        }
    }

    @Test
    void everyMessageAsksForAnAckUnlessThePeerAcksUnrequestedPackets() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sge(0, p.a.mr, 0, 8)
                    .remote(p.b.mr.address(), p.b.mr.rkey());
            for (int i = 0; i < 10; i++) {
                p.a.qp.postSend(wr.wrId(i).flags(i == 9 ? SendFlags.SIGNALED : 0));
            }
            ok(p, 1);
            List<byte[]> writes = p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_ONLY).toList();
            assertEquals(10, writes.size());
            assertTrue(writes.stream().allMatch(ProtocolTest::ackReq), "rxe's rule: AckReq on every message");
        }
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.a.ctx.peerAcksUnrequested(p.a.qp, true);
            p.net.capture = true;
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sge(0, p.a.mr, 0, 8)
                    .remote(p.b.mr.address(), p.b.mr.rkey());
            for (int i = 0; i < 10; i++) {
                p.a.qp.postSend(wr.wrId(i).flags(i == 9 ? SendFlags.SIGNALED : 0));
            }
            ok(p, 1);
            List<byte[]> writes = p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_ONLY).toList();
            assertEquals(10, writes.size());
            for (int i = 0; i < 9; i++) {
                assertFalse(ackReq(writes.get(i)), "unsignaled message " + i + " asks for no ACK");
            }
            assertTrue(ackReq(writes.get(9)), "the signaled one does");

            // unsignaled only: the responder still ACKs within its coalescing delay, so the
            // requester retires them without a retransmission
            p.net.captured.clear();
            for (int i = 0; i < 5; i++) {
                p.a.qp.postSend(wr.wrId(100 + i).flags(0));
            }
            RoceQp q = p.a.qpImpl();
            long start = p.net.clock.now;
            assertTrue(p.pump(() -> q.sqConsumer == q.req.index && q.req.index > 0
                    && p.net.captured.stream().anyMatch(d -> opcode(d) == IbOpcode.RC_ACKNOWLEDGE), 100_000));
            assertTrue(p.net.clock.now - start < 1_000_000 + Responder.ACK_COALESCE_NANOS,
                    "acknowledged by the coalescing timer, long before the retransmit timeout");
            assertEquals(5, p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_ONLY).count(),
                    "nothing was retransmitted");
            assertEquals(1, p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_ACKNOWLEDGE).count(),
                    "one ACK covers all five");
        }
    }

    /** Found against Linux rxe: a ping-pong peer that exits right after its last receive left rxe retrying. */
    @Test
    void closingAQpSendsTheAckItStillOwes() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            p.b.qp.postRecv(new io.jrdma.verbs.RecvWorkRequest().wrId(7).sge(0, p.b.mr, 0, 64));
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8));
            RoceQp b = p.b.qpImpl();
            for (int i = 0; i < 1000 && !b.resp.ackPending; i++) { // engines only: no CQ poll runs a cycle more
                p.a.ctx.progress();
                p.b.ctx.progress();
                p.net.clock.now += 1_000;
            }
            assertTrue(b.resp.ackPending, "B took the SEND and owes its ACK");
            assertEquals(0, p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_ACKNOWLEDGE).count(),
                    "the ACK is deferred: not sent in the cycle that received the SEND");
            p.b.qp.close();
            assertEquals(1, p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_ACKNOWLEDGE).count(),
                    "closing B's QP sent it");
            assertTrue(p.pump(() -> !p.a.completions.isEmpty(), 10_000));
            assertEquals(io.jrdma.verbs.WcStatus.SUCCESS, p.a.completions.getFirst().status());
            assertEquals(1, p.a.ctx.counter(Counter.RDMA_SENDS), "rxe's rdma_sends: one SEND completed");
            assertEquals(1, p.b.ctx.counter(Counter.RDMA_RECVS), "rxe's rdma_recvs: one receive completed");
        }
    }

    @Test
    void lostWritePacketIsRecoveredByGoBackN() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_MIDDLE);
            EngineTest.fill(p.a.buf, 0, 10_000, 1);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 10_000).remote(p.b.mr.address(), p.b.mr.rkey()));
            ok(p, 1);
            EngineTest.check(p.b.buf, 0, 10_000, 1);
            assertTrue(p.b.ctx.counter(Counter.OUT_OF_SEQ_REQUEST) >= 1);
            assertEquals(1, p.b.ctx.counter(Counter.SEND_NAKS), "one sequence-error NAK");
            assertEquals(1, p.a.ctx.counter(Counter.RCVD_SEQ_ERR));
            assertEquals(0, p.a.ctx.counter(Counter.COMPLETER_RETRY_ERR), "recovered without a timeout");
        }
    }

    @Test
    void duplicateWriteIsReAckedNotReplaced() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            p.net.duplicateIf = d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_ONLY;
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 7L);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey()));
            ok(p, 1);
            assertEquals(1, p.b.ctx.counter(Counter.DUPLICATE_REQUEST));
            // the copy arrived in the same receive batch as the original: one coalesced ACK answers both
            assertEquals(1, p.b.ctx.counter(Counter.SENT_ACKS));
            // a late duplicate, long after the original was acknowledged, is acknowledged again
            p.b.buf.set(ValueLayout.JAVA_LONG, 0, 99L);
            byte[] write = p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_ONLY).findFirst().orElseThrow();
            p.net.inject(write, p.a.ctx.link.localEndpoints().getFirst(), p.b.ctx.link.localEndpoints().getFirst());
            assertTrue(p.pump(() -> p.b.ctx.counter(Counter.SENT_ACKS) == 2, 10_000), "re-ACKed");
            assertEquals(2, p.b.ctx.counter(Counter.DUPLICATE_REQUEST));
            assertEquals(99L, p.b.buf.get(ValueLayout.JAVA_LONG, 0), "a duplicate is not placed again");
            assertEquals(1, p.a.completions.size(), "completed once");
        }
    }

    /**
     * The ACK of a whole message arriving while its resend is half-way (its first ACK lost): the message is not
     * retired before the requester has moved past it (a review feared it was, leaving the next message the PSNs
     * inside it), and the next message goes out with fresh PSNs and is placed.
     */
    @Test
    void aMessageRetiredDuringItsResendLeavesTheNextOneFreshPsns() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_ACKNOWLEDGE);
            p.a.buf.asSlice(0, 1 << 16).fill((byte) 7);
            // 64 packets, twice the send budget of a duty cycle: its resend takes two cycles
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 1 << 16).remote(p.b.mr.address(), p.b.mr.rkey()));
            assertTrue(p.pump(() -> p.net.dropped == 1, 1_000_000), "the ACK was dropped");
            p.net.clock.now += 4096L << 14; // timeout 14: the retransmit timer fires
            p.a.ctx.progress(); // the first half of the resend
            p.net.clock.now += 2_000;
            p.b.ctx.progress(); // duplicates: B ACKs the whole message again
            p.net.clock.now += 2_000;
            p.a.ctx.progress(); // the ACK comes in before the second half is resent
            assertEquals(0, p.a.qpImpl().sqConsumer, "not retired while its resend is under way");
            p.a.buf.set(ValueLayout.JAVA_LONG, 1 << 17, 0x1234_5678L);
            p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 1 << 17, 8).remote(p.b.mr.address() + (1 << 17), p.b.mr.rkey()));
            ok(p, 2);
            assertEquals(0x1234_5678L, p.b.buf.get(ValueLayout.JAVA_LONG, 1 << 17), "the second WRITE was placed");
            assertEquals(7, p.b.buf.get(ValueLayout.JAVA_BYTE, (1 << 16) - 1));
        }
    }

    /**
     * A run of the requester that ends on a request failing its local checks still arms the retransmit timer for
     * what it sent before it (found in review): a WRITE followed by a request with a bad lkey, the WRITE's only
     * packet lost. Before, the run returned before arming the timer: nothing resent the WRITE, and neither request
     * ever completed. Now the WRITE completes after one timeout, then the other with LOC_PROT_ERR.
     */
    @Test
    void aRunEndingOnALocalErrorStillArmsTheRetransmitTimer() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_RDMA_WRITE_ONLY);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 99L);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address() + 64, p.b.mr.rkey()));
            p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr.address(), 8, p.a.mr.lkey() + 1).remote(p.b.mr.address(), p.b.mr.rkey()));
            assertTrue(p.pump(() -> p.a.completions.size() >= 2, 100_000), "completions: " + p.a.completions);
            assertEquals(1, p.a.completions.get(0).wrId());
            assertEquals(WcStatus.SUCCESS, p.a.completions.get(0).status(), p.a.completions.get(0).toString());
            assertEquals(99L, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            assertEquals(2, p.a.completions.get(1).wrId());
            assertEquals(WcStatus.LOC_PROT_ERR, p.a.completions.get(1).status());
        }
    }

    /**
     * The atomics' history holds as many as the negotiated IRD lets be outstanding (found in review: it held 16):
     * 20 FETCH_ADDs outstanding (ORD and IRD 32), the first one's ACK lost; the requester sends all 20 again after
     * its timeout, and each is answered from the history, none executed twice. Before, the first four were no longer
     * in it: never answered, the first failed with RETRY_EXC_ERR.
     */
    @Test
    void everyOutstandingAtomicIsAnsweredFromHistory() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20, 7, 7, 14, io.jrdma.verbs.DeviceOptions.defaults(), 32)) {
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_ATOMIC_ACKNOWLEDGE);
            for (int i = 0; i < 20; i++) {
                p.a.qp.postSend(new SendWorkRequest().wrId(i).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                        .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 8L * i, 8).remote(p.b.mr.address(), p.b.mr.rkey())
                        .atomic(1, 0));
            }
            ok(p, 20);
            for (int i = 0; i < 20; i++) {
                assertEquals(i, p.a.buf.get(ValueLayout.JAVA_LONG, 8L * i), "atomic " + i + "'s original value");
            }
            assertEquals(20L, p.b.buf.get(ValueLayout.JAVA_LONG, 0), "each executed exactly once");
        }
    }

    /**
     * A QP reset and connected again with the same PSNs forgets its atomics' history (found in review): the new
     * connection's first FETCH_ADD, its ACK lost, is answered with its own original value, not with the one the
     * last connection's atomic at the same PSN returned.
     */
    @Test
    void aResetForgetsTheAtomicsHistory() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.b.buf.set(ValueLayout.JAVA_LONG, 0, 40L);
            SendWorkRequest fadd = new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey()).atomic(2, 0);
            p.a.qp.postSend(fadd);
            ok(p, 1);
            assertEquals(40L, p.a.buf.get(ValueLayout.JAVA_LONG, 0));
            p.reconnect();
            p.a.completions.clear();
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_ATOMIC_ACKNOWLEDGE);
            p.a.qp.postSend(fadd);
            ok(p, 1);
            assertEquals(42L, p.a.buf.get(ValueLayout.JAVA_LONG, 0), "this connection's original value");
            assertEquals(44L, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void lostAtomicAckIsAnsweredFromHistoryWithoutExecutingTwice() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_ATOMIC_ACKNOWLEDGE);
            p.b.buf.set(ValueLayout.JAVA_LONG, 0, 40L);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey()).atomic(2, 0));
            ok(p, 1);
            assertEquals(40L, p.a.buf.get(ValueLayout.JAVA_LONG, 0), "the original value, replayed");
            assertEquals(42L, p.b.buf.get(ValueLayout.JAVA_LONG, 0), "executed exactly once");
            assertEquals(1, p.b.ctx.counter(Counter.DUPLICATE_REQUEST));
            assertEquals(1, p.a.ctx.counter(Counter.COMPLETER_RETRY_ERR), "the requester retried after its timeout");
        }
    }

    @Test
    void lostReadResponseIsReissuedFromTheMiddleAndExecutedAgain() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_RDMA_READ_RESPONSE_MIDDLE);
            EngineTest.fill(p.b.buf, 0, 6000, 8);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 6000).remote(p.b.mr.address(), p.b.mr.rkey()));
            ok(p, 1);
            EngineTest.check(p.a.buf, 0, 6000, 8);
            List<byte[]> readReqs = p.net.captured.stream().filter(d -> opcode(d) == IbOpcode.RC_RDMA_READ_REQUEST).toList();
            assertEquals(2, readReqs.size(), "the READ was re-issued once");
            assertEquals((psn(readReqs.get(0)) + 1) & 0xFFFFFF, psn(readReqs.get(1)), "from the lost response's PSN");
            assertEquals(1, p.b.ctx.counter(Counter.DUPLICATE_REQUEST));
        }
    }

    /**
     * Found against Linux rxe on a loaded host: a 64 KiB SEND's 64 packets took 69 ms to leave, and the
     * retransmit timer, started at the first of them, sent the message again 2 ms after the last, before the
     * peer could have answered it; against a slow peer such early copies feed on themselves. The timer runs a
     * whole timeout from the last packet sent: here each send takes 2 ms and the answer 50 ms, against a
     * timeout of 67 ms, and nothing is sent twice.
     */
    @Test
    void aBurstSlowerThanTheTimeoutIsNotRetransmittedBeforeItsAnswerCouldCome() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.sendNanos = 2_000_000;
            p.net.delayNanos = 50_000_000;
            p.b.qp.postRecv(new io.jrdma.verbs.RecvWorkRequest().wrId(9).sge(0, p.b.mr, 0, 65536));
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 65536));
            ok(p, 1);
            assertEquals(0, p.a.ctx.counter(Counter.COMPLETER_RETRY_ERR), "no retransmission");
            assertEquals(0, p.b.ctx.counter(Counter.DUPLICATE_REQUEST), "no packet arrived twice");
            assertEquals(1, p.b.completions.size());
        }
    }

    @Test
    void lostAckIsCoveredByTheRetransmitTimer() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.dropIf = once(d -> opcode(d) == IbOpcode.RC_ACKNOWLEDGE);
            long start = p.net.clock.now;
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 100));
            p.b.qp.postRecv(new io.jrdma.verbs.RecvWorkRequest().wrId(9).sge(0, p.b.mr, 0, 4096));
            ok(p, 1);
            assertTrue(p.net.clock.now - start >= 4096L << 14, "completed only after one timeout");
            assertEquals(1, p.a.ctx.counter(Counter.COMPLETER_RETRY_ERR));
            assertEquals(1, p.b.completions.size(), "the re-sent SEND was not delivered twice");
            assertFalse(p.b.completions.isEmpty());
        }
    }

    @Test
    void fenceWaitsForOutstandingReads() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 3000).remote(p.b.mr.address(), p.b.mr.rkey()));
            p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED | SendFlags.FENCE).sge(0, p.a.mr, 8192, 8).remote(p.b.mr.address(), p.b.mr.rkey()));
            p.a.qp.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 8192, 8).remote(p.b.mr.address(), p.b.mr.rkey()));
            ok(p, 3);
            List<Integer> order = p.net.captured.stream().map(ProtocolTest::opcode).toList();
            int lastResponse = order.lastIndexOf(IbOpcode.RC_RDMA_READ_RESPONSE_LAST);
            int fencedWrite = order.indexOf(IbOpcode.RC_RDMA_WRITE_ONLY);
            assertTrue(lastResponse >= 0 && fencedWrite > lastResponse, "the fenced WRITE left after the READ completed: " + order);
        }
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            p.net.capture = true;
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 3000).remote(p.b.mr.address(), p.b.mr.rkey()));
            p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 8192, 8).remote(p.b.mr.address(), p.b.mr.rkey()));
            ok(p, 2);
            List<Integer> order = p.net.captured.stream().map(ProtocolTest::opcode).toList();
            assertTrue(order.indexOf(IbOpcode.RC_RDMA_WRITE_ONLY) < order.indexOf(IbOpcode.RC_RDMA_READ_RESPONSE_FIRST),
                    "without FENCE the WRITE does not wait: " + order);
        }
    }

    @Test
    void sqdFinishesTheMessageInProgressAndStartsNoOther() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            EngineTest.fill(p.a.buf, 0, 100_000, 3);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 100_000).remote(p.b.mr.address(), p.b.mr.rkey()));
            p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address() + 200_000, p.b.mr.rkey()));
            p.a.ctx.progress();                                   // the first 32 packets of the 98-packet WRITE
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.SQD));
            assertEquals(0, drainedEvents(p), "not drained while the WRITE is in progress");
            p.pump(() -> false, 20_000);
            assertEquals(1, p.a.completions.size(), "the WRITE in progress completed, the next did not start");
            EngineTest.check(p.b.buf, 0, 100_000, 3);
            // SQ_DRAINED once nothing is outstanding (found in review: it was never raised), once per drain
            assertEquals(1, drainedEvents(p));
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RTS));
            ok(p, 2);
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.SQD)); // nothing outstanding
            p.pump(() -> false, 100);
            assertEquals(1, drainedEvents(p), "a drain with nothing outstanding is drained at once");
        }
    }

    /** @return the SQ_DRAINED events for a's QP waiting in a's queue (taken from it); fails on any other event */
    private static int drainedEvents(Pair p) {
        io.jrdma.verbs.AsyncEvent e = new io.jrdma.verbs.AsyncEvent();
        int n = 0;
        while (p.a.ctx.pollAsyncEvent(e)) {
            assertEquals(io.jrdma.verbs.AsyncEvent.Type.SQ_DRAINED, e.type(), e.toString());
            assertEquals(p.a.qp, e.queuePair());
            n++;
        }
        return n;
    }
}

package io.jrdma.engine.shm;

import io.jrdma.engine.core.Cq;
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

import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * INVOKER mode: a post runs the send queue in the posting thread (docs/shm-performance.md, "What changed, and why"), so a
 * WRITE, READ or atomic completes inside {@code postSend}, and a SEND with nothing queued is written into the
 * peer's ring there (the direct SEND), in the send queue's order, and never at the same time as a duty cycle
 * another thread runs.
 */
class ShmPostTimeTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    private SendWorkRequest op(WrOpcode op, ShmPair p, long localOff, int len, long remoteOff) {
        return wr.reset().wrId(localOff).opcode(op).flags(SendFlags.SIGNALED).sge(0, p.a.mr, localOff, len)
                .remote(p.b.mr.address() + remoteOff, p.b.mr.rkey());
    }

    private static int pending(ShmPair.Side s) {
        return ((Cq) s.cq).pending(); // the CQ's own count: no duty cycle runs, unlike poll
    }

    @Test
    void oneSidedOperationsCompleteInsideThePost() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x0102030405060708L);
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)));
            // no poll, no progress of either context: the post did the copy and pushed the completion
            assertEquals(0x0102030405060708L, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            assertEquals(1, pending(p.a));

            p.b.buf.set(ValueLayout.JAVA_LONG, 128, 40);
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 256, 8, 128).atomic(2, 0)));
            assertEquals(42, p.b.buf.get(ValueLayout.JAVA_LONG, 128));
            assertEquals(40, p.a.buf.get(ValueLayout.JAVA_LONG, 256), "the original value is in the local SGE");
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.ATOMIC_CMP_AND_SWP, p, 264, 8, 128).atomic(42, 7)));
            assertEquals(7, p.b.buf.get(ValueLayout.JAVA_LONG, 128));
            assertEquals(42, p.a.buf.get(ValueLayout.JAVA_LONG, 264));
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_READ, p, 512, 8, 64)));
            assertEquals(0x0102030405060708L, p.a.buf.get(ValueLayout.JAVA_LONG, 512));
            assertEquals(4, pending(p.a));
            WorkCompletion wc = new WorkCompletion();
            WcOpcode[] expected = {WcOpcode.RDMA_WRITE, WcOpcode.FETCH_ADD, WcOpcode.COMP_SWAP, WcOpcode.RDMA_READ};
            for (WcOpcode o : expected) {
                assertEquals(1, p.a.cq.poll(wc));
                assertEquals(WcStatus.SUCCESS, wc.status());
                assertEquals(o, wc.opcode());
            }
        }
    }

    @Test
    void theSameKeyRegisteredAgainOverAnotherRangeIsSeenAtOnce() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            io.jrdma.verbs.MemoryRegion mr = p.b.pd.allocMr(4096);
            try {
                int k = io.jrdma.verbs.MemoryWindow.incRkey(mr.rkey());
                int access = io.jrdma.verbs.Access.LOCAL_WRITE | io.jrdma.verbs.Access.REMOTE_WRITE;
                assertEquals(0, p.b.qp.postSend(wr.reset().wrId(1).flags(SendFlags.SIGNALED)
                        .regMr(mr, p.b.buf.asSlice(0, 4096), k, access)));
                assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status());
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 11);
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 8).remote(p.b.buf.address() + 64, k)));
                assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
                assertEquals(11, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
                // the same key again, over another range: the initiator's cached fields of the first must not serve
                assertEquals(0, p.b.qp.postSend(wr.reset().wrId(3).flags(SendFlags.SIGNALED).localInv(k)));
                assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status());
                assertEquals(0, p.b.qp.postSend(wr.reset().wrId(4).flags(SendFlags.SIGNALED)
                        .regMr(mr, p.b.buf.asSlice(8192, 4096), k, access)));
                assertEquals(WcStatus.SUCCESS, p.await(p.b.cq).status());
                assertEquals(k, mr.rkey());
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 22);
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(5).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 8).remote(p.b.buf.address() + 8192 + 64, k)));
                WorkCompletion wc = p.await(p.a.cq);
                assertEquals(WcStatus.SUCCESS, wc.status(), "a WRITE into the new range: " + wc);
                assertEquals(22, p.b.buf.get(ValueLayout.JAVA_LONG, 8192 + 64));
                assertEquals(11, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            } finally {
                mr.close();
            }
        }
    }

    /**
     * The direct path (docs/shm-design.md, "The direct path"): an unsignaled request leaves no completion, a
     * local key it cannot use goes the queued way to LOC_PROT_ERR, and a refused remote access completes inside
     * the post with REM_ACCESS_ERR and moves the QP to ERROR, touching no memory outside the region.
     */
    @Test
    void theDirectPathKeepsTheVerbsErrors() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 77);
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64).flags(0)));
            assertEquals(77, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            assertEquals(0, pending(p.a), "an unsignaled WRITE leaves no completion");

            // a 16-byte WRITE from the last 8 bytes of a's region: past its end, refused by the local check
            long last = p.a.mr.length() - 8;
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, last, 8, 128)
                    .sge(0, p.a.mr.address() + last, 16, p.a.mr.lkey())));
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, 128), "nothing was written");
        }
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, -1);
            long end = p.b.mr.length();
            // the last 8 bytes of b's region and 8 past it: refused, no byte written, inside the post
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 0, 16, end - 8)));
            assertEquals(1, pending(p.a), "the refusal completed inside the post");
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, end - 8));
            assertEquals(io.jrdma.verbs.QpState.ERROR, p.a.qp.state());
        }
    }

    @Test
    void aDedicatedContextLeavesTheWorkToItsEngineThread() {
        try (ShmPair p = new ShmPair(ThreadingMode.DEDICATED, 1 << 16)) {
            // the post only queues: the completion comes from the engine thread (at once or a moment later)
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
        }
    }

    @Test
    void aWriteBehindAWaitingSendWaitsForIt() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            // b has no receive posted: the SEND gets RNR and is tried again (rnr_retry 7: forever)
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 16)));
            p.b.ctx.progress(); // b refuses it: RNR
            p.a.ctx.progress();
            p.a.buf.set(ValueLayout.JAVA_LONG, 1024, 0x5A5A5A5A5A5A5A5AL);
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 1024, 8, 4096)));
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, 4096), "the WRITE must not overtake the SEND before it");
            assertEquals(0, pending(p.a));
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9).sge(0, p.b.mr, 8192, 64)));
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcOpcode.SEND, wc.opcode());
            assertEquals(WcStatus.SUCCESS, wc.status());
            wc = p.await(p.a.cq);
            assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
            assertEquals(0x5A5A5A5A5A5A5A5AL, p.b.buf.get(ValueLayout.JAVA_LONG, 4096));
            assertEquals(WcOpcode.RECV, p.await(p.b.cq).opcode());
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void postingOnOneThreadWhilePollingOnAnotherLosesNothing() throws Exception {
        int n = 100_000;
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            AtomicReference<Throwable> failed = new AtomicReference<>();
            java.util.concurrent.atomic.AtomicLong polled = new java.util.concurrent.atomic.AtomicLong();
            Thread poller = Thread.ofPlatform().name("poller").start(() -> {
                WorkCompletion[] wcs = new WorkCompletion[16];
                for (int i = 0; i < wcs.length; i++) {
                    wcs[i] = new WorkCompletion();
                }
                long seen = 0;
                long deadline = System.nanoTime() + 50_000_000_000L;
                try {
                    while (seen < n) {
                        int k = p.a.cq.poll(wcs); // a duty cycle of a's engine, racing the posts' own runs
                        for (int i = 0; i < k; i++) {
                            assertEquals(WcStatus.SUCCESS, wcs[i].status(), wcs[i].toString());
                            assertEquals(seen + i, wcs[i].wrId(), "completions in the send queue's order");
                        }
                        seen += k;
                        polled.set(seen);
                        assertTrue(System.nanoTime() < deadline, "only " + seen + " completions of " + n);
                    }
                } catch (Throwable t) {
                    failed.set(t);
                }
            });
            SendWorkRequest w = new SendWorkRequest();
            long deadline = System.nanoTime() + 50_000_000_000L;
            for (int i = 0; i < n && failed.get() == null; ) {
                w.reset().wrId(i).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 64, 8).remote(p.b.mr.address(), p.b.mr.rkey()).atomic(1, 0);
                // at most 64 completions not yet polled: the CQ (256 entries) never overruns
                int rc = i - polled.get() < 64 ? p.a.qp.postSend(w) : -1;
                if (rc == 0) {
                    i++;
                } else {
                    Thread.onSpinWait(); // the poller frees room
                    assertTrue(System.nanoTime() < deadline, "no room within 50 s");
                }
            }
            poller.join(55_000);
            assertNull(failed.get());
            assertEquals(n, p.b.buf.get(ValueLayout.JAVA_LONG, 0), "every FETCH_ADD once");
        }
    }

    // ---------------------------------------------------------------- the direct SEND (docs/shm-design.md)

    /**
     * A SEND posted while a WRITE waits at the head of the send queue (its target QP came up only after the WRITE
     * was posted) does not take the direct path: the WRITE's bytes are in the target's memory before the SEND's
     * receive completes there, and the sender's completions come in the queue's order. Polling b alone runs no
     * engine of a's: a SEND that went straight into the ring would complete the receive with the WRITE still queued.
     */
    @Test
    void aSendBehindAQueuedWriteDoesNotOvertakeIt() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.b.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.ERROR));
            p.b.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RESET));
            p.a.buf.set(ValueLayout.JAVA_LONG, 1024, 0x5A5A5A5A5A5A5A5AL);
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 1024, 8, 4096))); // nothing answers: it waits
            assertEquals(0, pending(p.a));
            ShmPair.connect(p.b, p.a, 7);
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9).sge(0, p.b.mr, 8192, 64)));
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 77);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8)));
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.b.cq.poll(wc) == 0) { // b's engine only
                assertTrue(System.nanoTime() < deadline, "no receive completion within 10 s");
            }
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(0x5A5A5A5A5A5A5A5AL, p.b.buf.get(ValueLayout.JAVA_LONG, 4096),
                    "the SEND's receive completed before the WRITE queued ahead of it was done");
            assertEquals(77, p.b.buf.get(ValueLayout.JAVA_LONG, 8192));
            wc = p.await(p.a.cq);
            assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
            assertEquals(WcStatus.SUCCESS, wc.status());
            wc = p.await(p.a.cq);
            assertEquals(WcOpcode.SEND, wc.opcode());
            assertEquals(WcStatus.SUCCESS, wc.status());
        }
    }

    /** A SEND posted with nothing queued completes only once its receiver consumed it, not when its slot is written. */
    @Test
    void aDirectSendCompletesOnlyOnceItsReceiverConsumedIt() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9).sge(0, p.b.mr, 8192, 64)));
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).imm(5)));
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < 1000; i++) {
                assertEquals(0, p.a.cq.poll(wc), "the SEND completed before its receiver's engine ran: " + wc);
            }
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(5, r.imm());
            wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(2, wc.wrId());
        }
    }

    /**
     * A SEND sent by the direct path and refused for want of a receive (RNR) is sent again after the RNR timer
     * with the bytes it was posted with: an INLINE one from the copy its post made (its source is overwritten at
     * once, as an application may), the others from their region; 8 bytes travel in the slot's header line, 100
     * and 1,000 after it.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"8, true", "8, false", "100, true", "1000, false"})
    void aDirectSendRefusedForWantOfAReceiveIsSentAgainWithItsBytes(int size, boolean inline) {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            for (int k = 0; k < size; k++) {
                p.a.buf.set(ValueLayout.JAVA_BYTE, k, (byte) (k * 7 + 1));
            }
            byte[] sent = p.a.buf.asSlice(0, size).toArray(ValueLayout.JAVA_BYTE);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED | (inline ? SendFlags.INLINE : 0)).sge(0, p.a.mr, 0, size)));
            if (inline) {
                p.a.buf.asSlice(0, size).fill((byte) 0xEE);
            }
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.b.ctx.counters().getOrDefault("send_rnr_err", 0L) < 2) { // refused, and refused again
                p.a.ctx.progress();
                p.b.ctx.progress();
                assertEquals(0, p.a.cq.poll(wc), "a SEND completed with no receive posted: " + wc);
                assertTrue(System.nanoTime() < deadline, "no RNR within 10 s");
            }
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9).sge(0, p.b.mr, 8192, 4096)));
            wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(3, wc.wrId());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(size, r.byteLen());
            assertEquals(-1, java.util.Arrays.mismatch(sent, p.b.buf.asSlice(8192, size).toArray(ValueLayout.JAVA_BYTE)),
                    "the resent bytes are not the ones posted");
        }
    }

    /** A direct SEND waiting for a receive (RNR, retried for ever) is flushed when its QP fails. */
    @Test
    void aDirectSendInFlightIsFlushedWhenTheQpFails() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(4).opcode(WrOpcode.SEND).flags(0).sge(0, p.a.mr, 0, 8)));
            p.b.ctx.progress(); // RNR
            p.a.ctx.progress();
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.ERROR));
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(), "an unsignaled SEND flushed completes with its error");
            assertEquals(4, wc.wrId());
            assertEquals(WcOpcode.SEND, wc.opcode());
        }
    }

    /**
     * SENDs posted on one thread while another drives both engines (it polls both CQs and posts b's receives): a
     * post that finds the engine driven takes the queued path, one that claims it the direct path; every message
     * arrives once and in order, and the SENDs complete in the order posted.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void sendsPostedOnOneThreadWhilePollingOnAnotherArriveInOrder() throws Exception {
        int n = 50_000;
        int depth = 32;
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            for (int k = 0; k < depth; k++) {
                assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(k).sge(0, p.b.mr, 8192 + 64L * k, 64)));
            }
            AtomicReference<Throwable> failed = new AtomicReference<>();
            java.util.concurrent.atomic.AtomicLong completed = new java.util.concurrent.atomic.AtomicLong();
            Thread poller = Thread.ofPlatform().name("poller").start(() -> {
                WorkCompletion wc = new WorkCompletion();
                RecvWorkRequest r = new RecvWorkRequest();
                long received = 0;
                long sends = 0;
                long deadline = System.nanoTime() + 50_000_000_000L;
                try {
                    while (received < n || sends < n) {
                        if (p.b.cq.poll(wc) != 0) {
                            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                            int k = (int) wc.wrId();
                            assertEquals(received % depth, k, "receives in the order posted");
                            assertEquals(received, p.b.buf.get(ValueLayout.JAVA_LONG, 8192 + 64L * k), "messages in order");
                            received++;
                            assertEquals(0, p.b.qp.postRecv(r.reset().wrId(k).sge(0, p.b.mr, 8192 + 64L * k, 64)));
                        }
                        if (p.a.cq.poll(wc) != 0) {
                            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                            assertEquals(sends, wc.wrId(), "SEND completions in the send queue's order");
                            sends++;
                            completed.set(sends);
                        }
                        assertTrue(System.nanoTime() < deadline, "only " + received + " received, " + sends + " completed");
                    }
                } catch (Throwable t) {
                    failed.set(t);
                }
            });
            SendWorkRequest w = new SendWorkRequest();
            long deadline = System.nanoTime() + 50_000_000_000L;
            for (int i = 0; i < n && failed.get() == null; ) {
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, i);
                w.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, p.a.mr, 0, 8);
                // at most 32 SENDs not yet completed: the send queue (64) and the CQ (256) never fill
                int rc = i - completed.get() < depth ? p.a.qp.postSend(w) : -1;
                if (rc == 0) {
                    i++;
                } else {
                    Thread.onSpinWait(); // the poller completes SENDs
                    assertTrue(System.nanoTime() < deadline, "no room within 50 s");
                }
            }
            poller.join(55_000);
            assertNull(failed.get());
        }
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.AsyncEvents;
import io.jrdma.engine.core.Context;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.SrqAttr;
import io.jrdma.verbs.SrqInitAttr;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Shared receive queues and asynchronous events on the soft-RoCE engine, beyond the TCK: RNR while the
 * SRQ is empty, the SRQ's posting errors, the limits queryDevice declares being enforced, the responder's
 * affiliated QP errors, and the event queue's bound.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SrqTest {
    private static List<WorkCompletion> await(UdpPair p, int n) {
        List<WorkCompletion> got = new ArrayList<>();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (got.size() < n) {
            p.progress();
            for (var cq : List.of(p.a.cq, p.b.cq)) {
                WorkCompletion[] one = {new WorkCompletion()};
                if (cq.poll(one) > 0) {
                    got.add(one[0]);
                }
            }
            if (System.nanoTime() > deadline) {
                fail("only " + got + " of " + n + " completions; counters " + p.b.ctx.counters());
            }
        }
        return got;
    }

    private static AsyncEvent awaitEvent(UdpPair p, Predicate<AsyncEvent> match) {
        AsyncEvent e = new AsyncEvent();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            p.progress();
            while (p.b.ctx.pollAsyncEvent(e)) {
                if (match.test(e)) {
                    return e;
                }
            }
        }
        throw new AssertionError("no matching asynchronous event; counters " + p.b.ctx.counters());
    }

    @Test
    void aSendToAnEmptySrqIsAnsweredRnrAndLandsOnceAReceiveIsPosted() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024, true)) {
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(7).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 3000)));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.b.ctx.counters().get("send_rnr_err") == 0) {
                p.progress();
                assertTrue(System.nanoTime() < deadline, "no RNR NAK for a SEND to an empty SRQ: " + p.b.ctx.counters());
            }
            assertEquals(0, p.b.srq.postRecv(new RecvWorkRequest().wrId(9).sge(0, p.b.mr, 0, 4096)));
            List<WorkCompletion> got = await(p, 2);
            for (WorkCompletion wc : got) {
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            }
            WorkCompletion recv = got.stream().filter(w -> w.wrId() == 9).findFirst().orElseThrow();
            assertEquals(3000, recv.byteLen());
            assertEquals(p.b.qp.qpn(), recv.qpNum(), "the completion names the QP that took the receive");
        }
    }

    @Test
    void postingToAnSrqChecksDepthSgesAndLife() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024, false)) {
            var srq = p.b.pd.createSrq(SrqInitAttr.of(2, 1));
            RecvWorkRequest r = new RecvWorkRequest();
            assertEquals(0, srq.postRecv(r.reset().wrId(1).sge(0, p.b.mr, 0, 64)));
            assertEquals(0, srq.postRecv(r.reset().wrId(2).sge(0, p.b.mr, 64, 64)));
            assertEquals(RdmaException.Errno.ENOMEM.value(), srq.postRecv(r.reset().wrId(3).sge(0, p.b.mr, 128, 64)),
                    "a full SRQ");
            assertEquals(RdmaException.Errno.EINVAL.value(), srq.postRecv(r.reset().wrId(4).sge(0, p.b.mr, 0, 8)
                    .sge(1, p.b.mr, 8, 8)), "more SGEs than the SRQ was made for");
            RdmaException shrink = assertThrows(RdmaException.class, () -> srq.modify(new SrqAttr(1, 0, 0), SrqAttr.MAX_WR));
            assertEquals(RdmaException.Errno.EINVAL, shrink.errno(), "a resize below the 2 receives posted: " + shrink.getMessage());
            srq.modify(new SrqAttr(3, 0, 0), SrqAttr.MAX_WR);
            assertEquals(0, srq.postRecv(r.reset().wrId(3).sge(0, p.b.mr, 128, 64)), "the third receive after growing to 3");
            assertEquals(RdmaException.Errno.ENOMEM.value(), srq.postRecv(r.reset().wrId(6).sge(0, p.b.mr, 128, 64)),
                    "a full SRQ of 3");
            RdmaException mask = assertThrows(RdmaException.class, () -> srq.modify(SrqAttr.limit(1), 1 << 5));
            assertEquals(RdmaException.Errno.EINVAL, mask.errno(), mask.getMessage());
            srq.close();
            assertEquals(RdmaException.Errno.EINVAL.value(), srq.postRecv(r.reset().wrId(5).sge(0, p.b.mr, 0, 64)),
                    "a destroyed SRQ");
            DeviceAttr d = p.b.ctx.queryDevice();
            RdmaException deep = assertThrows(RdmaException.class,
                    () -> p.b.pd.createSrq(SrqInitAttr.of(d.maxSrqWr() + 1, 1)));
            assertEquals(RdmaException.Errno.EINVAL, deep.errno(), deep.getMessage());
            RdmaException wide = assertThrows(RdmaException.class,
                    () -> p.b.pd.createSrq(SrqInitAttr.of(1, d.maxSrqSge() + 1)));
            assertEquals(RdmaException.Errno.EINVAL, wide.errno(), wide.getMessage());
            RdmaException qp = assertThrows(RdmaException.class, () -> p.b.pd.createQp(
                    io.jrdma.verbs.QpInitAttr.rc(p.b.cq).withDepth(d.maxQpWr() + 1, 1)));
            assertEquals(RdmaException.Errno.EINVAL, qp.errno(), qp.getMessage());
        }
    }

    @Test
    void maxSrqIsEnforced() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024, false)) {
            int max = p.b.ctx.queryDevice().maxSrq();
            List<io.jrdma.verbs.SharedReceiveQueue> made = new ArrayList<>();
            for (int i = 0; i < max; i++) {
                made.add(p.b.pd.createSrq(SrqInitAttr.of(1, 1)));
            }
            RdmaException e = assertThrows(RdmaException.class, () -> p.b.pd.createSrq(SrqInitAttr.of(1, 1)));
            assertEquals(RdmaException.Errno.EAGAIN, e.errno(), e.getMessage());
            made.removeLast().close();
            made.add(p.b.pd.createSrq(SrqInitAttr.of(1, 1))); // room again after a destroy
            for (var srq : made) {
                srq.close();
            }
        }
    }

    @Test
    void aSendLongerThanItsReceiveRaisesQpReqErrOnTheResponder() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024, true)) {
            assertEquals(0, p.b.srq.postRecv(new RecvWorkRequest().wrId(1).sge(0, p.b.mr, 0, 100)));
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 200)));
            AsyncEvent e = awaitEvent(p, ev -> ev.type() == AsyncEvent.Type.QP_REQ_ERR);
            assertSame(p.b.qp, e.queuePair());
            assertEquals(QpState.ERROR, p.b.qp.state());
            awaitEvent(p, ev -> ev.type() == AsyncEvent.Type.QP_LAST_WQE_REACHED && ev.queuePair() == p.b.qp);
        }
    }

    @Test
    void aWriteWithABadRkeyRaisesQpAccessErrOnTheResponder() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024, false)) {
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 64).remote(p.b.mr.address(), p.b.mr.rkey() ^ 0x100)));
            AsyncEvent e = awaitEvent(p, ev -> ev.type() == AsyncEvent.Type.QP_ACCESS_ERR);
            assertSame(p.b.qp, e.queuePair());
        }
    }

    @Test
    void aFullEventQueueDropsAndCountsWithoutBlocking() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024, true)) {
            Context ctx = (Context) p.b.ctx; // INVOKER: this thread is its engine thread
            for (int i = 0; i < AsyncEvents.CAPACITY + 5; i++) {
                ctx.events.raise(AsyncEvent.Type.SRQ_LIMIT_REACHED, p.b.srq);
            }
            assertEquals(5L, ctx.counters().get("async_event_overflow"));
            AsyncEvent e = new AsyncEvent();
            int n = 0;
            while (ctx.pollAsyncEvent(e)) {
                assertSame(p.b.srq, e.srq());
                n++;
            }
            assertEquals(AsyncEvents.CAPACITY, n, "the queue keeps what it holds, in order");
        }
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.util.AllocationMeter;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The data path allocates nothing after warm-up: post, doorbell, packet out, packet in
 * (UDP receive, ICRC, responder, completer), poll — for every opcode, over real UDP sockets,
 * both engines driven by this thread, whose allocated bytes are measured.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
// the SRQ rounds run last: JIT code compiled while only they ran treats "no SRQ" as never taken, and the
// deoptimization the others would then hit allocates until the code is compiled again (a warm-up matter)
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class AllocationTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(),
        new WorkCompletion()};

    @Test
    void dataPathAllocatesNothingAfterWarmUp() throws Exception {
        dataPathAllocatesNothing(false);
    }

    /** The same rounds with b's receives taken from a shared receive queue. */
    @Test
    @org.junit.jupiter.api.Order(Integer.MAX_VALUE)
    void srqDataPathAllocatesNothingAfterWarmUp() throws Exception {
        dataPathAllocatesNothing(true);
    }

    private void dataPathAllocatesNothing(boolean srq) throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024, srq)) {
            // what SEND_WITH_INV invalidates (again and again: an invalid key may be invalidated again)
            io.jrdma.verbs.MemoryRegion inv = p.b.pd.register(p.arena.allocate(4096, 4096),
                    Access.LOCAL_WRITE | Access.REMOTE_INVALIDATE);
            invalidKey = inv.rkey();
            // as between two jrdma peers (the connection managers negotiate it): ACKs only where
            // waited for, and the link's batched transmit (sendmmsg, UDP GSO) on the path measured
            ((Context) p.a.ctx).peerAcksUnrequested(p.a.qp, true);
            ((Context) p.b.ctx).peerAcksUnrequested(p.b.qp, true);
            for (int i = 0; i < 20_000; i++) {
                round(p, i); // warm-up: let the JIT compile the paths
            }
            AllocationMeter.Result m = AllocationMeter.steadyState(2_000, Duration.ofSeconds(30), i -> round(p, i));
            inv.close();
            assertEquals(0, m.bytes(), "bytes allocated by 2,000 rounds of WRITE, READ, SEND/RECV and atomics: " + m);
        }
    }

    private int invalidKey;

    /**
     * UD and UC allocate nothing either: a UD ping-pong (SEND with and without immediate data through an
     * address handle, the GRH written at the receiver) and a UC loop of 0-byte RDMA WRITEs and multi-packet
     * SENDs, over real UDP sockets.
     */
    @Test
    void udAndUcAllocateNothingAfterWarmUp() throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            QueuePair uda = udQp(p.a);
            QueuePair udb = udQp(p.b);
            AddressHandle toB = p.a.pd.createAh(AhAttr.of(Gid.parse("127.0.0.1"), p.a.ctx.gidIndexOf(
                    Gid.parse("127.0.0.1"))).withUdpPort(p.b.ctx.queryPort().udpPort()));
            AddressHandle toA = p.b.pd.createAh(AhAttr.of(Gid.parse("127.0.0.1"), p.b.ctx.gidIndexOf(
                    Gid.parse("127.0.0.1"))).withUdpPort(p.a.ctx.queryPort().udpPort()));
            QueuePair uca = p.a.pd.createQp(QpInitAttr.uc(p.a.cq).withDepth(256, 256));
            QueuePair ucb = p.b.pd.createQp(QpInitAttr.uc(p.b.cq).withDepth(256, 256));
            connectUc(p.a, uca, p.b, ucb);
            connectUc(p.b, ucb, p.a, uca);
            Runnable round = () -> {
                udRound(p, uda, udb, toB, toA);
                ucRound(p, uca, ucb);
            };
            for (int i = 0; i < 20_000; i++) {
                n = i;
                round.run();
            }
            AllocationMeter.Result m = AllocationMeter.steadyState(2_000, Duration.ofSeconds(30), i -> {
                n = i;
                round.run();
            });
            assertEquals(0, m.bytes(), "bytes allocated by 2,000 rounds of a UD ping-pong and UC WRITE/SEND: " + m);
            uda.close();
            udb.close();
            uca.close();
            ucb.close();
            toA.close();
            toB.close();
        }
    }

    private int n;

    private static QueuePair udQp(UdpPair.End e) {
        QueuePair qp = e.pd.createQp(QpInitAttr.ud(e.cq).withDepth(256, 256));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(0x1111_1111));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        return qp;
    }

    private static void connectUc(UdpPair.End from, QueuePair qp, UdpPair.End to, QueuePair peer) {
        Gid v4 = Gid.parse("127.0.0.1");
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        qp.modify(new QpAttr().state(QpState.RTR).av(AddressVector.of(v4, from.ctx.gidIndexOf(v4))
                .withUdpPort(to.ctx.queryPort().udpPort())).pathMtu(Mtu.MTU_1024).destQpn(peer.qpn()).rqPsn(0));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
    }

    /** ping a → b, pong b → a; 2 completions on each side. */
    private void udRound(UdpPair p, QueuePair uda, QueuePair udb, AddressHandle toB, AddressHandle toA) {
        int size = n % 1000;
        assertEquals(0, udb.postRecv(rwr.reset().wrId(n).sge(0, p.b.mr, 0, 4096)));
        assertEquals(0, uda.postRecv(rwr.reset().wrId(n).sge(0, p.a.mr, 0, 4096)));
        assertEquals(0, uda.postSend(wr.reset().wrId(n).opcode(WrOpcode.SEND_WITH_IMM).imm(n).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 8192, size).ud(toB, udb.qpn(), 0x1111_1111)));
        await(p, 1, 1);
        assertEquals(0, udb.postSend(wr.reset().wrId(n).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, p.b.mr, 8192, size).ud(toA, uda.qpn(), 0x8000_0000)));
        await(p, 1, 1);
    }

    /** a 0-byte UC WRITE, then a 3-packet UC SEND. */
    private void ucRound(UdpPair p, QueuePair uca, QueuePair ucb) {
        assertEquals(0, uca.postSend(wr.reset().wrId(n).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).numSge(0)
                .remote(p.b.mr.address(), p.b.mr.rkey())));
        await(p, 1, 0);
        assertEquals(0, ucb.postRecv(rwr.reset().wrId(n).sge(0, p.b.mr, 0, 4096)));
        assertEquals(0, uca.postSend(wr.reset().wrId(n).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 8192, 2500)));
        await(p, 1, 1);
    }

    private void await(UdpPair p, int onA, int onB) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        int a = 0;
        int b = 0;
        while (a < onA || b < onB) {
            p.progress();
            int k = p.a.cq.poll(wcs);
            check(k);
            a += k;
            k = p.b.cq.poll(wcs);
            check(k);
            b += k;
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion in round " + n);
            }
        }
        if (a != onA || b != onB) {
            throw new AssertionError("unexpected completions in round " + n);
        }
    }

    private void check(int k) {
        for (int i = 0; i < k; i++) {
            if (wcs[i].status() != WcStatus.SUCCESS) {
                throw new AssertionError("completion failed: " + wcs[i].status());
            }
        }
    }

    private void round(UdpPair p, int i) {
        WrOpcode op = WrOpcode.of(i % (WrOpcode.SEND_WITH_INV.ordinal() + 1)); // the opcodes on the wire, not the local ones
        if (op.consumesRecv()) {
            assertEquals(0, p.b.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, 0, 4096)));
        }
        int size = op.isAtomic() ? 8 : 100 + (i % 3000);
        wr.reset().wrId(i).opcode(op).flags(SendFlags.SIGNALED).sge(0, p.a.mr, 8192, size)
                .remote(p.b.mr.address() + 8192, p.b.mr.rkey()).imm(i).atomic(1, 2);
        if (op == WrOpcode.SEND_WITH_INV) {
            wr.invalidate(invalidKey);
        }
        assertEquals(0, p.a.qp.postSend(wr));
        long deadline = System.nanoTime() + 5_000_000_000L;
        int got = 0;
        int want = op.consumesRecv() ? 2 : 1;
        while (got < want) {
            p.progress();
            int n = p.a.cq.poll(wcs);
            n += p.b.cq.poll(wcs);
            for (int k = 0; k < n; k++) {
                if (wcs[k].status() != WcStatus.SUCCESS) {
                    throw new AssertionError("completion failed: " + wcs[k].status());
                }
            }
            got += n;
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion for " + op);
            }
        }
        assertTrue(got == want);
    }

    /**
     * Memory windows and fast registration allocate nothing either: type 2 bind, WRITE through the window,
     * LOCAL_INV or the peer's SEND_WITH_INV; type 1 re-bind and READ through it; REG_MR, WRITE, LOCAL_INV.
     */
    @Test
    void bindUseInvalidateAndRegisterCyclesAllocateNothing() throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            int remote = Access.REMOTE_READ | Access.REMOTE_WRITE;
            io.jrdma.verbs.MemoryRegion bindable = p.b.pd.register(p.b.buf.asSlice(1 << 19, 1 << 16),
                    Access.LOCAL_WRITE | remote | Access.MW_BIND);
            io.jrdma.verbs.MemoryWindow type1 = p.b.pd.allocMw(io.jrdma.verbs.MwType.TYPE_1);
            io.jrdma.verbs.MemoryWindow type2 = p.b.pd.allocMw(io.jrdma.verbs.MwType.TYPE_2);
            io.jrdma.verbs.MemoryRegion fast = p.b.pd.allocMr(1 << 16);
            java.lang.foreign.MemorySegment mapped = p.b.buf.asSlice(1 << 18, 1 << 16);
            io.jrdma.verbs.MwBind bind = new io.jrdma.verbs.MwBind().flags(SendFlags.SIGNALED)
                    .bind(bindable, bindable.address() + 4096, 8192, remote);
            for (int i = 0; i < 5_000; i++) {
                mmRound(p, i, bindable, type1, type2, fast, mapped, bind);
            }
            AllocationMeter.Result m = AllocationMeter.steadyState(1_000, Duration.ofSeconds(30),
                    i -> mmRound(p, i, bindable, type1, type2, fast, mapped, bind));
            type1.close();
            type2.close();
            fast.close();
            bindable.close();
            assertEquals(0, m.bytes(), "bytes allocated by 1,000 rounds of bind/use/invalidate and REG_MR/use/LOCAL_INV: " + m);
        }
    }

    private void mmRound(UdpPair p, int i, io.jrdma.verbs.MemoryRegion bindable, io.jrdma.verbs.MemoryWindow type1,
                         io.jrdma.verbs.MemoryWindow type2, io.jrdma.verbs.MemoryRegion fast,
                         java.lang.foreign.MemorySegment mapped, io.jrdma.verbs.MwBind bind) {
        int remote = Access.REMOTE_READ | Access.REMOTE_WRITE;
        // type 2: bind on b's QP, a WRITEs through it, then b invalidates it (LOCAL_INV) or a does (SEND_WITH_INV)
        int k2 = io.jrdma.verbs.MemoryWindow.incRkey(type2.rkey());
        post(p, p.b.qp, wr.reset().wrId(i).flags(SendFlags.SIGNALED)
                .bindMw(type2, k2, bindable, bindable.address(), 8192, remote), 1);
        post(p, p.a.qp, wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 0, 512).remote(bindable.address() + 64, k2), 1);
        if ((i & 1) == 0) {
            post(p, p.b.qp, wr.reset().wrId(i).flags(SendFlags.SIGNALED).localInv(k2), 1);
        } else {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, 0, 64)));
            post(p, p.a.qp, wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_INV).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 16).invalidate(k2), 2);
        }
        // type 1: re-bind (a new key each time) and READ through it
        assertEquals(0, p.b.qp.bindMw(type1, bind.wrId(i)));
        waitFor(p, 1);
        post(p, p.a.qp, wr.reset().wrId(i).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 4096, 256).remote(bindable.address() + 4096, type1.rkey()), 1);
        // fast registration: map, WRITE, LOCAL_INV
        int kf = io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey());
        post(p, p.b.qp, wr.reset().wrId(i).flags(SendFlags.SIGNALED)
                .regMr(fast, mapped, kf, Access.LOCAL_WRITE | remote), 1);
        post(p, p.a.qp, wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 0, 256).remote(fast.address() + 128, kf), 1);
        post(p, p.b.qp, wr.reset().wrId(i).flags(SendFlags.SIGNALED).localInv(kf), 1);
    }

    private void post(UdpPair p, io.jrdma.verbs.QueuePair qp, SendWorkRequest w, int completions) {
        assertEquals(0, qp.postSend(w));
        waitFor(p, completions);
    }

    private void waitFor(UdpPair p, int want) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        int got = 0;
        while (got < want) {
            p.progress();
            int n = p.a.cq.poll(wcs);
            n += p.b.cq.poll(wcs);
            for (int k = 0; k < n; k++) {
                if (wcs[k].status() != WcStatus.SUCCESS) {
                    throw new AssertionError("completion failed: " + wcs[k].status() + " " + wcs[k].opcode());
                }
            }
            got += n;
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion");
            }
        }
    }
}

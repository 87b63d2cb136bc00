package io.jrdma.engine.shm;

import io.jrdma.engine.util.AllocationMeter;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The shm data path allocates nothing per operation after warm-up: WRITE, READ, FETCH_ADD,
 * CMP_AND_SWP, SEND with immediate data into a posted receive (8 B INLINE and 64 B by the direct path,
 * 20,000 B queued), a SEND of many ring slots, and
 * the receiver's completion, both engines driven from this thread (INVOKER).
 */
class ShmAllocationTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final WorkCompletion wc = new WorkCompletion();

    private void await(ShmPair p, io.jrdma.verbs.CompletionQueue cq) {
        await(p.a.ctx, p.b.ctx, cq);
    }

    /**
     * Runs {@code op} {@code warmUp} times (the JIT compiles its paths), then measures 1,200 runs of it (repeated for at
     * most 30 s until a batch is steady) and asserts they allocated nothing; {@code what} names the runs.
     */
    private static void assertNoAllocation(int warmUp, java.util.function.IntConsumer op, String what) {
        for (int i = 0; i < warmUp; i++) {
            op.accept(i);
        }
        AllocationMeter.Result m = AllocationMeter.steadyState(1_200, Duration.ofSeconds(30), op);
        assertEquals(0, m.bytes(), "bytes allocated by 1,200 " + what + ": " + m);
    }

    /** Polls {@code cq}, driving both contexts (INVOKER), until a completion arrives (10 s at most); it must be SUCCESS. */
    private void await(io.jrdma.verbs.DeviceContext a, io.jrdma.verbs.DeviceContext b, io.jrdma.verbs.CompletionQueue cq) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            a.progress();
            b.progress();
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion within 10 s");
            }
        }
        if (wc.status() != WcStatus.SUCCESS) {
            throw new AssertionError(wc.toString());
        }
    }

    private void round(ShmPair p, int i) {
        long raddr = p.b.mr.address();
        int rkey = p.b.mr.rkey();
        switch (i % 9) {
            case 0 -> p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 4096).remote(raddr + 4096, rkey));
            case 1 -> p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 8192, 4096).remote(raddr + 4096, rkey));
            case 2 -> p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 16384, 8).remote(raddr, rkey).atomic(1, 0));
            case 3 -> p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 16384, 8).remote(raddr, rkey).atomic(0, 1));
            // 64 KiB: the bulk copy by libc's memmove (Native.move), its segments passed along
            case 7 -> p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 65_536).remote(raddr + 131_072, rkey));
            case 8 -> p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 262_144, 65_536).remote(raddr + 131_072, rkey));
            default -> {
                // 64 B and an 8 B INLINE message: the direct path, straight from the post; 20,000 B: three slots, queued
                int len = i % 9 == 4 ? 64 : i % 9 == 5 ? 20_000 : 8;
                p.b.qp.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, 65536, 65536));
                p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM)
                        .flags(SendFlags.SIGNALED | (len == 8 ? SendFlags.INLINE : 0)).sge(0, p.a.mr, 0, len).imm(i));
                await(p, p.b.cq);
            }
        }
        await(p, p.a.cq);
    }

    @Test
    void noAllocationPerOperationAfterWarmUp() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 20)) {
            assertNoAllocation(30_000, i -> round(p, i), "rounds of WRITE and READ (4 KiB, 64 KiB), atomics and SENDs");
        }
    }

    /**
     * Several SENDs of a QP in flight (written behind each other into the ring before any result; completed by the
     * result that covers them) allocate nothing either: eight 64 B SENDs posted in a row, one in four signaled, and
     * their receives.
     */
    @Test
    void noAllocationPerStreamOfSendsAfterWarmUp() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 20)) {
            java.util.function.IntConsumer burst = i -> {
                for (int k = 0; k < 8; k++) {
                    p.b.qp.postRecv(rwr.reset().wrId(k).sge(0, p.b.mr, 65536 + 64L * k, 64));
                }
                for (int k = 0; k < 8; k++) {
                    p.a.qp.postSend(wr.reset().wrId(k).opcode(WrOpcode.SEND)
                            .flags(k % 4 == 3 ? SendFlags.SIGNALED : 0).sge(0, p.a.mr, 64L * k, 64));
                }
                for (int k = 0; k < 8; k++) {
                    await(p, p.b.cq);
                }
                await(p, p.a.cq);
                await(p, p.a.cq);
            };
            assertNoAllocation(20_000, burst, "bursts of eight SENDs in flight");
        }
    }

    /** Two INVOKER shm0 contexts for the UD tests, each with a PD, a CQ of 64 and a registered page; closed after the test's QPs. */
    private static final class UdSides implements AutoCloseable {
        final java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
        final io.jrdma.verbs.DeviceContext ca = ShmDevice.INSTANCE.open(
                io.jrdma.verbs.DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        final io.jrdma.verbs.DeviceContext cb = ShmDevice.INSTANCE.open(
                io.jrdma.verbs.DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        final io.jrdma.verbs.ProtectionDomain pa = ca.allocPd();
        final io.jrdma.verbs.ProtectionDomain pb = cb.allocPd();
        final io.jrdma.verbs.CompletionQueue qa = ca.createCq(64);
        final io.jrdma.verbs.CompletionQueue qb = cb.createCq(64);
        final io.jrdma.verbs.MemoryRegion ma = pa.register(ca.allocateBuffer(4096, 4096, arena), io.jrdma.verbs.Access.LOCAL_WRITE);
        final io.jrdma.verbs.MemoryRegion mb = pb.register(cb.allocateBuffer(4096, 4096, arena), io.jrdma.verbs.Access.LOCAL_WRITE);

        @Override
        public void close() {
            ma.close();
            mb.close();
            qa.close();
            qb.close();
            pa.close();
            pb.close();
            cb.close();
            ca.close();
            arena.close();
        }
    }

    /** UD QPs to RTS, Q_Key 7. */
    private static void udReady(io.jrdma.verbs.QueuePair... qs) {
        for (io.jrdma.verbs.QueuePair q : qs) {
            q.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.INIT).pkeyIndex(0).portNum(1).qkey(7));
            q.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RTR));
            q.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RTS).sqPsn(0));
        }
    }

    /**
     * UD: a datagram of 64 B with immediate data through an address handle into the receiving QP's ring (its held
     * word, the slot, R_TAIL), and its receive completed with the GRH in front, allocate nothing either, in both
     * directions (each side's table of receivers holds the other after the first datagram).
     */
    @Test
    void noAllocationPerUdDatagramAfterWarmUp() {
        try (UdSides u = new UdSides()) {
            io.jrdma.verbs.DeviceContext ca = u.ca;
            io.jrdma.verbs.DeviceContext cb = u.cb;
            io.jrdma.verbs.CompletionQueue qa = u.qa;
            io.jrdma.verbs.CompletionQueue qb = u.qb;
            io.jrdma.verbs.MemoryRegion ma = u.ma;
            io.jrdma.verbs.MemoryRegion mb = u.mb;
            io.jrdma.verbs.QueuePair a = u.pa.createQp(io.jrdma.verbs.QpInitAttr.ud(qa).withDepth(16, 16));
            io.jrdma.verbs.QueuePair b = u.pb.createQp(io.jrdma.verbs.QpInitAttr.ud(qb).withDepth(16, 16));
            udReady(a, b);
            io.jrdma.verbs.AddressHandle toB = u.pa.createAh(io.jrdma.verbs.AhAttr.of(cb.gid(0), 0));
            io.jrdma.verbs.AddressHandle toA = u.pb.createAh(io.jrdma.verbs.AhAttr.of(ca.gid(0), 0));
            java.util.function.IntConsumer datagram = i -> {
                boolean ab = (i & 1) == 0;
                io.jrdma.verbs.QueuePair from = ab ? a : b;
                io.jrdma.verbs.QueuePair to = ab ? b : a;
                io.jrdma.verbs.MemoryRegion fm = ab ? ma : mb;
                io.jrdma.verbs.MemoryRegion tm = ab ? mb : ma;
                to.postRecv(rwr.reset().wrId(i).sge(0, tm, 1024, io.jrdma.verbs.Grh.LENGTH + 64));
                from.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                        .sge(0, fm, 0, 64).imm(i).ud(ab ? toB : toA, to.qpn(), 7));
                await(ca, cb, ab ? qb : qa);
                await(ca, cb, ab ? qa : qb);
            };
            assertNoAllocation(20_000, datagram, "UD datagrams and their receives");
            toA.close();
            toB.close();
            a.close();
            b.close();
        }
    }

    /**
     * UD, one QP sending in turn to twelve QPs of another context, more than the table of receivers held before it
     * had 64 entries (eight): every datagram after the first to each finds its receiver in the table, so none parses
     * a GID, maps a peer or searches its directory, and none allocates.
     */
    @Test
    void noAllocationPerUdDatagramToTwelveReceiversInTurn() {
        int n = 12;
        try (UdSides u = new UdSides()) {
            io.jrdma.verbs.QueuePair a = u.pa.createQp(io.jrdma.verbs.QpInitAttr.ud(u.qa).withDepth(16, 16));
            io.jrdma.verbs.QueuePair[] bs = new io.jrdma.verbs.QueuePair[n];
            for (int k = 0; k < n; k++) {
                bs[k] = u.pb.createQp(io.jrdma.verbs.QpInitAttr.ud(u.qb).withDepth(4, 4));
            }
            udReady(a);
            udReady(bs);
            io.jrdma.verbs.AddressHandle toB = u.pa.createAh(io.jrdma.verbs.AhAttr.of(u.cb.gid(0), 0));
            java.util.function.IntConsumer datagram = i -> {
                io.jrdma.verbs.QueuePair to = bs[i % n];
                to.postRecv(rwr.reset().wrId(i).sge(0, u.mb, 1024, io.jrdma.verbs.Grh.LENGTH + 8));
                a.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, u.ma, 0, 8).ud(toB, to.qpn(), 7));
                await(u.ca, u.cb, u.qa);
                await(u.ca, u.cb, u.qb);
                if (wc.qpNum() != to.qpn()) { // (no message built unless it fails: the meter counts every byte)
                    throw new AssertionError("datagram " + i + " arrived at QP " + wc.qpNum() + ", sent to " + to.qpn());
                }
            };
            assertNoAllocation(20_004, datagram, "UD datagrams to twelve receivers in turn");
            assertEquals(0, ((io.jrdma.engine.core.Context) u.ca).engine.counters.get(io.jrdma.engine.core.Counter.UD_DROPPED_SENDS));
            toB.close();
            a.close();
            for (io.jrdma.verbs.QueuePair q : bs) {
                q.close();
            }
        }
    }

    /**
     * Memory windows: a type 2 bind on the target's QP (its key entry published for the peer), a WRITE through the
     * window, and its LOCAL_INV (the entry withdrawn, with the membarrier of the own holds) allocate nothing either.
     */
    @Test
    void noAllocationPerWindowCycleAfterWarmUp() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 20)) {
            io.jrdma.verbs.MemoryRegion mr = p.b.pd.register(p.b.buf.asSlice(0, 65_536),
                    ShmPair.ALL | io.jrdma.verbs.Access.MW_BIND);
            io.jrdma.verbs.MemoryWindow mw = p.b.pd.allocMw(io.jrdma.verbs.MwType.TYPE_2);
            int[] key = {mw.rkey()};
            java.util.function.IntConsumer cycle = i -> {
                int k = io.jrdma.verbs.MemoryWindow.incRkey(key[0]);
                key[0] = k;
                p.b.qp.postSend(wr.reset().wrId(i).flags(SendFlags.SIGNALED)
                        .bindMw(mw, k, mr, mr.address(), 4096, io.jrdma.verbs.Access.REMOTE_WRITE));
                await(p, p.b.cq);
                p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 64).remote(mr.address() + 64, k));
                await(p, p.a.cq);
                p.b.qp.postSend(wr.reset().wrId(i).flags(SendFlags.SIGNALED).localInv(k));
                await(p, p.b.cq);
            };
            assertNoAllocation(20_000, cycle, "cycles of a window's bind, a WRITE through it and its LOCAL_INV");
            mw.close();
            mr.close();
        }
    }
}

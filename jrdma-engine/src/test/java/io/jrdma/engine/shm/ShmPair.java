package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two shm0 contexts in one process, each with a PD, a CQ, an RC QP and a buffer from
 * allocateBuffer registered with every access, connected by hand as ibv_rc_pingpong does
 * (GID and QPN exchanged, then modify to RTR and RTS).
 */
final class ShmPair implements AutoCloseable {
    static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    final Arena arena = Arena.ofShared();
    final Side a;
    final Side b;

    ShmPair(ThreadingMode mode, int size) {
        this(mode, size, 256);
    }

    /** @param bCqDepth the entries of b's CQ (a's has 256) */
    ShmPair(ThreadingMode mode, int size, int bCqDepth) {
        this(mode, size, bCqDepth, () -> { });
    }

    /** @param betweenSides run after a's context is made and before b's (a test that makes the two differ) */
    ShmPair(ThreadingMode mode, int size, int bCqDepth, Runnable betweenSides) {
        this(mode, size, bCqDepth, betweenSides, false);
    }

    /** @param uc UC QPs (connected with UC's attributes) instead of RC */
    ShmPair(ThreadingMode mode, int size, int bCqDepth, Runnable betweenSides, boolean uc) {
        a = new Side(mode, size, 256, uc);
        betweenSides.run();
        b = new Side(mode, size, bCqDepth, uc);
        if (uc) {
            connectUc(a, b);
            connectUc(b, a);
        } else {
            connect(a, b, 7);
            connect(b, a, 7);
        }
    }

    /** Two contexts with a UC QP each, connected by hand as ibv_uc_pingpong does. */
    static ShmPair uc(ThreadingMode mode, int size) {
        return new ShmPair(mode, size, 256, () -> { }, true);
    }

    final class Side {
        final DeviceContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemorySegment buf;
        final MemoryRegion mr;

        /** @return the side's shm0 transport (its control segment, counters and test hooks) */
        ShmTransport transport() {
            return (ShmTransport) ((io.jrdma.engine.core.Context) ctx).engine.transport;
        }

        Side(ThreadingMode mode, int size, int cqDepth, boolean uc) {
            ctx = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(mode));
            pd = ctx.allocPd();
            cq = ctx.createCq(cqDepth);
            qp = pd.createQp((uc ? QpInitAttr.uc(cq) : QpInitAttr.rc(cq)).withDepth(64, 64));
            buf = ctx.allocateBuffer(size, 4096, arena);
            mr = pd.register(buf, ALL | Access.REMOTE_INVALIDATE);
        }
    }

    static void connect(Side s, Side peer, int rnrRetry) {
        s.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ALL));
        s.qp.modify(new QpAttr().state(QpState.RTR).av(new AddressVector(peer.ctx.gid(0), 0, 64, 0, 4791))
                .pathMtu(Mtu.MTU_4096).destQpn(peer.qp.qpn()).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
        s.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(rnrRetry)
                .maxRdAtomic(16));
    }

    /** UC's attributes: no RNR, timeout, retry or read/atomic depths. */
    static void connectUc(Side s, Side peer) {
        s.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(Access.REMOTE_WRITE));
        s.qp.modify(new QpAttr().state(QpState.RTR).av(new AddressVector(peer.ctx.gid(0), 0, 64, 0, 4791))
                .pathMtu(Mtu.MTU_4096).destQpn(peer.qp.qpn()).rqPsn(0));
        s.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
    }

    /** Polls {@code cq} (driving both engines in INVOKER mode) until one completion arrives, for at most 10 s. */
    WorkCompletion await(CompletionQueue cq) {
        WorkCompletion wc = new WorkCompletion();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            a.ctx.progress();
            b.ctx.progress();
            assertTrue(System.nanoTime() < deadline, "no completion within 10 s");
            Thread.onSpinWait();
        }
        return wc;
    }

    /** Posts {@code wr} on a's QP and returns its completion. */
    WorkCompletion run(SendWorkRequest wr) {
        assertEquals(0, a.qp.postSend(wr), "postSend");
        return await(a.cq);
    }

    @Override
    public void close() {
        for (Side s : new Side[] {a, b}) {
            s.qp.close();
            s.mr.close();
            s.cq.close();
            s.pd.close();
            s.ctx.close();
        }
        arena.close();
    }
}

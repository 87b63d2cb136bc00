package io.jrdma.engine.roce;

import io.jrdma.engine.core.Context;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Two soft-RoCE contexts in INVOKER mode on a {@link MemoryNetwork}, each with a PD, a CQ, an
 * RC QP and a registered buffer, connected by hand (no connection manager). {@link #pump}
 * runs both engines and the manual clock until a condition holds: no threads, no sleeps.
 */
final class Pair implements AutoCloseable {
    final MemoryNetwork net = new MemoryNetwork();
    final Side a;
    final Side b;
    final Arena arena = Arena.ofShared();

    Pair(Mtu mtu, int bufferSize) {
        this(mtu, bufferSize, 7, 7, 14);
    }

    Pair(Mtu mtu, int bufferSize, int retry, int rnrRetry, int timeout) {
        this(mtu, bufferSize, retry, rnrRetry, timeout, DeviceOptions.defaults());
    }

    Pair(Mtu mtu, int bufferSize, int retry, int rnrRetry, int timeout, DeviceOptions options) {
        this(mtu, bufferSize, retry, rnrRetry, timeout, options, 16);
    }

    /** @param rdAtomic each QP's ORD and IRD (max_rd_atomic, max_dest_rd_atomic) */
    Pair(Mtu mtu, int bufferSize, int retry, int rnrRetry, int timeout, DeviceOptions options, int rdAtomic) {
        a = new Side("10.0.0.1", bufferSize, options);
        b = new Side("10.0.0.2", bufferSize, options);
        this.mtu = mtu;
        this.retry = retry;
        this.rnrRetry = rnrRetry;
        this.timeout = timeout;
        this.rdAtomic = rdAtomic;
        connect(a, b);
        connect(b, a);
    }

    private final Mtu mtu;
    private final int retry;
    private final int rnrRetry;
    private final int timeout;
    private final int rdAtomic;

    /** Moves both QPs to RESET and connects them again as at first (the same PSNs). */
    void reconnect() {
        for (Side s : List.of(a, b)) {
            s.qp.modify(new QpAttr().state(QpState.RESET));
        }
        connect(a, b);
        connect(b, a);
    }

    final class Side {
        final Context ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemorySegment buf;
        final MemoryRegion mr;
        final List<WorkCompletion> completions = new ArrayList<>();

        Side(String ip, int size, DeviceOptions options) {
            MemoryNetwork.MemoryLink link = net.attach(ip, 4791);
            ctx = SoftRoceDevice.forTest("mem" + ip).open(
                    options.withThreadingMode(ThreadingMode.INVOKER), link, net.clock, Mtu.MTU_4096);
            pd = ctx.allocPd();
            cq = ctx.createCq(4096);
            qp = pd.createQp(QpInitAttr.rc(cq).withDepth(512, 512));
            buf = arena.allocate(size, 4096);
            mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        }

        /** Moves what the CQ holds into {@link #completions}. */
        void drain() {
            WorkCompletion[] wcs = new WorkCompletion[64];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            int n;
            while ((n = cq.poll(wcs)) > 0) {
                for (int i = 0; i < n; i++) {
                    WorkCompletion c = new WorkCompletion();
                    WorkCompletion w = wcs[i];
                    c.set(w.wrId(), w.status(), w.opcode(), w.vendorErr(), w.byteLen(), w.imm(), w.flags(), w.qpNum(),
                            w.srcQp());
                    completions.add(c);
                }
            }
        }

        RoceQp qpImpl() {
            return (RoceQp) qp;
        }
    }

    private void connect(Side from, Side to) {
        from.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        from.qp.modify(new QpAttr().state(QpState.RTR).av(AddressVector.of(to.ctx.gid(0), 0)).pathMtu(mtu)
                .destQpn(to.qp.qpn()).rqPsn(0xFFFFF0).maxDestRdAtomic(rdAtomic).minRnrTimer(1));
        from.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0xFFFFF0).timeout(timeout)
                .retryCnt(retry).rnrRetry(rnrRetry).maxRdAtomic(rdAtomic));
    }

    /** Runs both engines until {@code done} or {@code maxSteps}; idle steps jump the clock to the next event. */
    boolean pump(BooleanSupplier done, int maxSteps) {
        for (int i = 0; i < maxSteps; i++) {
            int work = a.ctx.progress() + b.ctx.progress();
            a.drain();
            b.drain();
            if (done.getAsBoolean()) {
                return true;
            }
            if (work == 0) {
                long next = net.nextDelivery();
                long step = next == Long.MAX_VALUE ? 1_000_000 : Math.max(1, next - net.clock.now);
                net.clock.now += Math.min(step, 1_000_000);
            }
        }
        return false;
    }

    @Override
    public void close() {
        for (Side s : List.of(a, b)) {
            s.qp.close();
            s.mr.close();
            s.cq.close();
            s.pd.close();
            s.ctx.close();
        }
        arena.close();
    }
}

package io.jrdma.engine.core;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.link.Link;
import io.jrdma.engine.link.PacketSink;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A third transport, written here against {@link Transport} alone, plugs into the core: the
 * core's context, PDs, keys, CQs, queues, state table, doorbells, duty cycle and flush run it
 * without knowing it. The transport delivers a SEND from one QP's send queue straight into its
 * destination QP's receive queue in the same context (as shared memory would across two), and
 * refuses RDMA READ through {@link Qp#refusedOps}; everything it does not implement keeps the
 * interface's defaults.
 */
class TransportContractTest {
    /** The QP of the test transport: the core's queues plus one fact of its own. */
    static final class LoopQp extends Qp {
        int delivered;

        LoopQp(Context context, Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
            super(context, pd, qpn, init, sendCq, recvCq);
            refusedOps = 1 << WrOpcode.RDMA_READ.ordinal();
        }
    }

    /** Moves SENDs between QPs of one context; only the methods without a default are written. */
    static final class LoopTransport implements Transport {
        final Engine engine;
        final MemorySegment bounce = Arena.ofAuto().allocate(1 << 16);
        int receives;
        boolean closed;

        LoopTransport(Engine engine) {
            this.engine = engine;
        }

        @Override
        public Qp newQp(Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
            return new LoopQp(engine.context, pd, qpn, init, sendCq, recvCq);
        }

        @Override
        public int receive() {
            receives++;
            long stall = stallNanos;
            if (stall > 0) { // a duty cycle that takes a while: the engine is inside it when a test acts
                stallNanos = 0;
                stalling = true;
                java.util.concurrent.locks.LockSupport.parkNanos(stall);
                stalling = false;
            }
            return 0;
        }

        /** tests: the next duty cycle's receive takes this long (once) */
        volatile long stallNanos;
        /** tests: a duty cycle is inside that stall now */
        volatile boolean stalling;

        @Override
        public int transmit(Qp qp, int budget) {
            if (qp.state != QpState.RTS) {
                return 0;
            }
            int n = 0;
            long p = qp.sqProducerAcquire();
            while (qp.sqConsumer != p && n < budget) {
                Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
                Sgl.validate(engine.context.keys, qp, w);
                LoopQp dst = (LoopQp) engine.qps.get(qp.destQpn);
                if (w.localError >= 0 || dst == null || dst.rqConsumer == dst.rqProducerAcquire()) {
                    qp.sqConsumerRelease(qp.sqConsumer + 1);
                    qp.sendCq.push(w.wrId, w.localError >= 0 ? WcStatus.of(w.localError) : WcStatus.RNR_RETRY_EXC_ERR,
                            WcOpcode.SEND, 0, 0, 0, qp.qpn, 0);
                    engine.enterError(qp);
                    return n + 1;
                }
                RecvWqe r = dst.rq[(int) (dst.rqConsumer & dst.rqMask)];
                int len = (int) w.length;
                Sgl.gatherCovered(w, 0, len, bounce, 0); // validated just above
                boolean fits = Sgl.scatter(engine.context.keys, dst, r, 0, bounce, 0, len);
                dst.rqConsumerRelease(dst.rqConsumer + 1);
                dst.recvCq.push(r.wrId, fits ? WcStatus.SUCCESS : WcStatus.LOC_LEN_ERR, WcOpcode.RECV, len, 0, 0,
                        dst.qpn, qp.qpn);
                dst.delivered++;
                qp.sqConsumerRelease(qp.sqConsumer + 1);
                if (w.signaled) {
                    qp.sendCq.push(w.wrId, WcStatus.SUCCESS, WcOpcode.SEND, len, 0, 0, qp.qpn, 0);
                }
                n++;
            }
            return n;
        }

        @Override
        public int service(Qp qp, int budget) {
            return transmit(qp, budget);
        }

        @Override
        public boolean hasWork(Qp qp) {
            return qp.state == QpState.ERROR ? Engine.flushPending(qp)
                    : qp.state == QpState.RTS && qp.sqConsumer != qp.sqProducerAcquire();
        }

        @Override
        public ConnectionManager connectionManager() {
            return null;
        }

        @Override
        public String describe() {
            return "loop";
        }

        @Override
        public void close() {
            closed = true;
            Thread t = engine.thread;
            engineRanAtClose = t != null && t.isAlive();
        }

        /** whether the context's engine thread still ran when the context closed this transport */
        volatile boolean engineRanAtClose;
    }

    /** The addresses of the test device: one endpoint, no datagrams. */
    static final class NoLink implements Link {
        @Override
        public List<Endpoint> localEndpoints() {
            return List.of(Endpoint.of(InetAddress.getLoopbackAddress(), 0));
        }

        @Override
        public int poll(PacketSink sink, int limit) {
            throw new AssertionError("the core never polls a link itself");
        }

        @Override
        public boolean send(ByteBuffer buf, int len, Endpoint local, Endpoint remote) {
            throw new AssertionError("the core never sends on a link itself");
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aTransportWrittenAgainstTheInterfaceRunsOnTheCore() {
        List<Context> closed = new ArrayList<>();
        LoopTransport[] made = new LoopTransport[1];
        Context ctx = new Context(new TestDevice("loop0"), closed::add,
                DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER), new NoLink(), NanoClock.SYSTEM,
                Mtu.MTU_1024, e -> made[0] = new LoopTransport(e));
        LoopTransport t = made[0];
        assertTrue(ctx.toString().contains("loop"), ctx.toString());
        try (Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(64);
            QueuePair a = pd.createQp(QpInitAttr.rc(cq));
            QueuePair b = pd.createQp(QpInitAttr.rc(cq));
            assertTrue(a instanceof LoopQp && b instanceof LoopQp, "the transport made the QPs");
            MemorySegment buf = arena.allocate(4096, 64);
            MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);

            // the core's state table checks the transitions, whatever the transport
            RdmaException skip = assertThrows(RdmaException.class,
                    () -> a.modify(new QpAttr().state(QpState.RTS)));
            assertEquals(Errno.EINVAL, skip.errno());
            connect(a, b.qpn());
            connect(b, a.qpn());

            assertEquals(0, b.postRecv(new RecvWorkRequest().wrId(7).sge(0, mr, 1024, 1024)));
            buf.setString(0, "through the core");
            assertEquals(0, a.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, mr, 0, 17)));
            assertEquals(Errno.EOPNOTSUPP.value(), a.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ)
                    .sge(0, mr, 0, 8).remote(buf.address(), mr.rkey())), "refusedOps");

            List<WorkCompletion> wcs = poll(ctx, cq, 2);
            assertEquals(WcStatus.SUCCESS, wcs.get(0).status());
            assertEquals(WcStatus.SUCCESS, wcs.get(1).status());
            assertEquals("through the core", buf.getString(1024));
            assertEquals(1, ((LoopQp) b).delivered);
            assertTrue(t.receives > 0, "the duty cycle asks the transport to receive");

            // ERROR: the core flushes what is queued, the transport is not asked to
            assertEquals(0, b.postRecv(new RecvWorkRequest().wrId(8).sge(0, mr, 2048, 1024)));
            b.modify(new QpAttr().state(QpState.ERROR));
            WorkCompletion flushed = poll(ctx, cq, 1).getFirst();
            assertEquals(8, flushed.wrId());
            assertEquals(WcStatus.WR_FLUSH_ERR, flushed.status());

            a.close();
            b.close();
            mr.close();
            cq.close();
            pd.close();
        }
        ctx.close();
        assertTrue(t.closed, "the context closes its transport");
        assertEquals(List.of(ctx), closed);
    }

    private static void connect(QueuePair qp, int dest) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(Access.LOCAL_WRITE));
        qp.modify(new QpAttr().state(QpState.RTR).av(io.jrdma.verbs.AddressVector.of(
                Gid.of(InetAddress.getLoopbackAddress()), 0)).pathMtu(Mtu.MTU_1024).destQpn(dest).rqPsn(0)
                .maxDestRdAtomic(1).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(1));
    }

    private static List<WorkCompletion> poll(Context ctx, CompletionQueue cq, int n) {
        List<WorkCompletion> got = new ArrayList<>();
        WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion()};
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (got.size() < n && System.nanoTime() < deadline) {
            ctx.progress();
            int k = cq.poll(wcs);
            for (int i = 0; i < k; i++) {
                WorkCompletion c = new WorkCompletion();
                c.set(wcs[i].wrId(), wcs[i].status(), wcs[i].opcode(), wcs[i].vendorErr(), wcs[i].byteLen(),
                        wcs[i].imm(), wcs[i].flags(), wcs[i].qpNum(), wcs[i].srcQp());
                got.add(c);
            }
        }
        assertEquals(n, got.size(), "completions within 5 s: " + got);
        return got;
    }
}

package io.jrdma.engine.roce;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;

/** Two INVOKER-mode contexts on the loopback device over real UDP sockets, connected by hand. */
final class UdpPair implements AutoCloseable {
    final Arena arena = Arena.ofShared();
    final End a;
    final End b;

    final class End {
        final DeviceContext ctx;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        /** the SRQ its QP takes receives from, or null */
        final io.jrdma.verbs.SharedReceiveQueue srq;
        final MemorySegment buf;
        final MemoryRegion mr;

        End(int size, boolean withSrq) throws Exception {
            var dev = Rdma.resolve(InetAddress.getByName("127.0.0.1"), io.jrdma.verbs.Transport.ROCE_V2).device();
            ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            pd = ctx.allocPd();
            cq = ctx.createCq(1024);
            srq = withSrq ? pd.createSrq(io.jrdma.verbs.SrqInitAttr.of(256, 4)) : null;
            qp = pd.createQp(withSrq ? QpInitAttr.rc(cq).withDepth(256, 256).withSrq(srq) : QpInitAttr.rc(cq).withDepth(256, 256));
            buf = arena.allocate(size, 4096);
            mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        }

        /** Posts a receive to the QP's SRQ if it has one, else to the QP. */
        int postRecv(io.jrdma.verbs.RecvWorkRequest wr) {
            return srq != null ? srq.postRecv(wr) : qp.postRecv(wr);
        }
    }

    UdpPair(int size, Mtu mtu) throws Exception {
        this(size, mtu, false);
    }

    /** As {@link #UdpPair(int, Mtu)}; with {@code srq}, b's QP takes its receives from an SRQ. */
    UdpPair(int size, Mtu mtu, boolean srq) throws Exception {
        a = new End(size, false);
        b = new End(size, srq);
        connect(a, b, mtu);
        connect(b, a, mtu);
    }

    private static void connect(End from, End to, Mtu mtu) {
        Gid v4 = Gid.parse("127.0.0.1");
        int sgid = from.ctx.gidIndexOf(v4);
        from.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        from.qp.modify(new QpAttr().state(QpState.RTR)
                .av(AddressVector.of(v4, sgid).withUdpPort(to.ctx.queryPort().udpPort())).pathMtu(mtu)
                .destQpn(to.qp.qpn()).rqPsn(100).maxDestRdAtomic(16).minRnrTimer(1));
        from.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(100).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(16));
    }

    /** Drives both engines once. */
    int progress() {
        return a.ctx.progress() + b.ctx.progress();
    }

    @Override
    public void close() {
        for (End e : new End[] {a, b}) {
            e.qp.close();
            if (e.srq != null) {
                e.srq.close();
            }
            e.mr.close();
            e.cq.close();
            e.pd.close();
            e.ctx.close();
        }
        arena.close();
    }
}

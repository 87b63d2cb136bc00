package io.jrdma.tools.oob;

import io.jrdma.soft.SoftRoceOptions;

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
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A test's hand-driven RC QP on roce_lo (its own DEDICATED engine), standing in for the RDMA
 * side of a Linux tool whose TCP side the test writes byte by byte.
 */
public final class VerbsEnd implements AutoCloseable {
    public static final byte[] LOOPBACK_GID = HexFormat.of().parseHex("00000000000000000000ffff7f000001");

    public final DeviceContext ctx;
    public final ProtectionDomain pd;
    public final CompletionQueue cq;
    public final QueuePair qp;
    public final Arena arena = Arena.ofShared();
    public final MemorySegment buf;
    public final MemoryRegion mr;
    private final WorkCompletion wc = new WorkCompletion();

    public VerbsEnd(long bytes, int access, int qpAccess) {
        ctx = Rdma.device("roce_lo").open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED)
                .with(SoftRoceOptions.defaults().withAnyIpv4Id(true)));
        pd = ctx.allocPd();
        cq = ctx.createCq(1024);
        qp = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 256, 256, 1, 1, 0, false));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(qpAccess));
        buf = arena.allocate(bytes, 4096);
        mr = pd.register(buf, Access.LOCAL_WRITE | access);
    }

    /** @return the LID a Linux tool would send: 0, or (jrdma's convention) this engine's UDP port when not 4791 */
    public int lid() {
        return Roce.lid(ctx);
    }

    /** RTR and RTS toward the peer described by a message, with the tools' usual attributes. */
    public void connect(byte[] peerGid, int peerLid, int peerQpn, int peerPsn, int myPsn, int mtu, int rd) {
        int sgid = ctx.gidIndexOf(Gid.of(loopback()));
        qp.modify(new QpAttr().state(QpState.RTR)
                .av(new AddressVector(Gid.of(peerGid), sgid, 64, 0, Roce.udpPort(peerLid)))
                .pathMtu(Mtu.ofBytes(mtu)).destQpn(peerQpn).rqPsn(peerPsn).maxDestRdAtomic(rd).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(myPsn).maxRdAtomic(rd));
    }

    private static InetAddress loopback() {
        try {
            return InetAddress.getByName("127.0.0.1");
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Waits (10 s at most) for one completion, which must be a success; @return it */
    public WorkCompletion await() throws InterruptedException {
        long end = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > end) {
                throw new AssertionError("no completion within 10 s");
            }
            Thread.onSpinWait();
        }
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        return wc;
    }

    @Override
    public void close() {
        qp.close();
        mr.close();
        cq.close();
        pd.close();
        arena.close();
        ctx.close();
    }
}

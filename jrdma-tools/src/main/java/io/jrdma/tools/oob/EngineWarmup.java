package io.jrdma.tools.oob;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.util.List;

/**
 * Before a tool meets its peer, runs the soft-RoCE engine's data path in this process for a
 * moment: two contexts on 127.0.0.1 (INVOKER, this thread driving both) exchange WRITEs, READs,
 * SENDs and atomics at several sizes until the budget is spent, then close. The JIT has then
 * compiled the requester, responder, completer and UDP link, so the first packets of the real
 * peer meet compiled code.
 *
 * <p>Why: a fresh JVM runs those paths in the interpreter, and took 30–120 ms to answer a peer's
 * first burst — longer than perftest's default QP timeout (about 67 ms), so a Linux rxe peer
 * retransmitted (two of 77 interop cases failed so on 2026-11-25, on a quiet host), and a short
 * benchmark measured the interpreter (bench/first-answer.sh measures the first answer). Off with
 * {@code -Djrdma.tools.warmup=false}. Nothing of it reaches the wire: the two contexts listen on
 * 127.0.0.1 only, on ports the kernel picks.
 */
public final class EngineWarmup {
    /** The default budget. */
    public static final long DEFAULT_NANOS = 250_000_000L;
    private static final int SIZE = 64 * 1024;
    private static boolean done;

    private EngineWarmup() {
    }

    /**
     * {@return whether a tool on {@code d} needs the warm-up: a RoCE device of jrdma's own engine (whose Java
     * code answers the peer), not one of the rdma-core provider (a kernel or NIC answers; its data path from
     * Java is a few downcalls that the warm-up does not reach), nor an iWARP one}
     *
     * <p>Found on Linux rxe under TCG emulation (one virtual CPU): the warm-up's two soft-RoCE contexts there
     * took seconds of the tool's start, which the tool then spent before it listened.
     */
    public static boolean warms(Device d) {
        return d.transport() == Transport.ROCE_V2 && !"rdmacore".equals(d.provider());
    }

    /**
     * {@return {@link #warms(Device)} of the device named {@code name}; true when there is no name or no such
     * device (the tool then picks one of its own, or reports the name)}
     */
    public static boolean warms(String name) {
        if (name == null || name.isBlank()) {
            return true;
        }
        try {
            return warms(Rdma.device(name));
        } catch (RdmaException e) {
            return true;
        }
    }

    /**
     * Runs the warm-up once per process (later calls return at once), for at most
     * {@code budgetNanos}; quietly does nothing when there is no loopback RoCE device or
     * {@code -Djrdma.tools.warmup=false}. A failure of the warm-up itself is not the tool's: it
     * is swallowed, and the real run reports whatever is wrong.
     *
     * @param budgetNanos how long to run the traffic
     * @return the rounds run (0 when skipped)
     */
    public static synchronized int run(long budgetNanos) {
        if (done || "false".equals(System.getProperty("jrdma.tools.warmup"))) {
            return 0;
        }
        done = true;
        try {
            return loopbackTraffic(budgetNanos);
        } catch (RdmaException | IllegalStateException e) {
            return 0;
        }
    }

    /** The warm-up's traffic, each call (tests); @return the rounds completed, 0 without a loopback RoCE device */
    static int loopbackTraffic(long budgetNanos) {
        for (Device d : Rdma.devices()) {
            if (d.transport() == Transport.ROCE_V2 && "lo".equals(d.netdev())) {
                return traffic(d, budgetNanos);
            }
        }
        return 0;
    }

    private static int traffic(Device lo, long budgetNanos) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        if (loopback.getAddress().length != 4) {
            return 0;
        }
        DeviceOptions opts = DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER)
                .with(SoftRoceOptions.defaults().withUdpPort(0, true).withAddresses(List.of(loopback)));
        int rounds = 0;
        try (Arena arena = Arena.ofConfined();
             DeviceContext a = lo.open(opts);
             DeviceContext b = lo.open(opts)) {
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(64);
            CompletionQueue cb = b.createCq(64);
            QueuePair qa = pa.createQp(QpInitAttr.rc(ca).withDepth(32, 32));
            QueuePair qb = pb.createQp(QpInitAttr.rc(cb).withDepth(32, 32));
            int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
            MemorySegment ma = arena.allocate(2L * SIZE, 4096);
            MemorySegment mb = arena.allocate(2L * SIZE, 4096);
            MemoryRegion ra = pa.register(ma, access);
            MemoryRegion rb = pb.register(mb, access);
            try {
                connect(qa, a, qb, b);
                connect(qb, b, qa, a);
                SendWorkRequest wr = new SendWorkRequest();
                RecvWorkRequest rr = new RecvWorkRequest();
                WorkCompletion wc = new WorkCompletion();
                long deadline = System.nanoTime() + budgetNanos;
                int[] sizes = {8, 4096, SIZE};
                while (System.nanoTime() < deadline) {
                    int len = sizes[rounds % sizes.length];
                    qb.postRecv(rr.reset().wrId(1).sge(0, rb, SIZE, SIZE));
                    qa.postSend(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                            .sge(0, ra, 0, len).remote(rb.address(), rb.rkey()));
                    qa.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                            .sge(0, ra, SIZE, len).remote(rb.address(), rb.rkey()));
                    qa.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                            .sge(0, ra, 0, len).imm(rounds));
                    qa.postSend(wr.reset().wrId(4).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                            .sge(0, ra, SIZE, 8).remote(rb.address(), rb.rkey()).atomic(1, 0));
                    if (!drain(ca, 4, cb, 1, wc, deadline + budgetNanos)) {
                        break;
                    }
                    rounds++;
                }
            } finally {
                qa.close();
                qb.close();
                ra.close();
                rb.close();
                ca.close();
                cb.close();
                pa.close();
                pb.close();
            }
        }
        return rounds;
    }

    /**
     * INIT, RTR toward {@code peer}'s QP, RTS: as perftest's exchange leaves a QP. On port 1: the warm-up runs on
     * private loopback contexts of jrdma's soft-RoCE engine ({@link #warms}), whose devices have one port, whatever
     * port the tool itself then uses.
     */
    private static void connect(QueuePair qp, DeviceContext ctx, QueuePair peer, DeviceContext peerCtx) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        qp.modify(new QpAttr().state(QpState.RTR)
                .av(new AddressVector(peerCtx.gid(0), 0, 0xFF, 0, peerCtx.queryPort().udpPort()))
                .pathMtu(Mtu.MTU_1024).destQpn(peer.qpn()).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(1));
    }

    /** Polls both CQs (which drives both engines) until the completions came; false on an error or the deadline. */
    private static boolean drain(CompletionQueue ca, int na, CompletionQueue cb, int nb, WorkCompletion wc,
            long deadline) {
        while (na > 0 || nb > 0) {
            if (ca.poll(wc) > 0) {
                if (wc.status() != WcStatus.SUCCESS) {
                    return false;
                }
                na--;
            }
            if (cb.poll(wc) > 0) {
                if (wc.status() != WcStatus.SUCCESS) {
                    return false;
                }
                nb--;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
        }
        return true;
    }
}

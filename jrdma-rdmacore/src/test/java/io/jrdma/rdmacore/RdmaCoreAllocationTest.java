package io.jrdma.rdmacore;

import io.jrdma.rdmacore.tck.RdmaCoreFixture;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The provider's data path over a real rdma-core device allocates nothing: two RC QPs of one context,
 * connected to each other by {@code ibv_modify_qp}, exchange WRITEs, READs, SEND/RECV with immediate
 * data and FETCH_AND_ADDs through {@code ops.post_send}/{@code ops.post_recv}/{@code ops.poll_cq}, with
 * this thread's allocated bytes measured. Needs a device ({@value RdmaCoreFixture#DEVICE_PROPERTY});
 * skipped without one. On iWARP (siw), whose QPs connect only through the iWARP CM and which has no atomics
 * and no immediate data, the QPs are of two contexts connected through rdma_cm ({@code rdmaCm()}, whose
 * watcher thread then runs beside) and a round is a WRITE, a READ and a SEND.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RdmaCoreAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(),
            new WorkCompletion()};

    private QueuePair a, b;
    private boolean iwarp;
    private CompletionQueue cqA, cqB;
    private MemoryRegion mrA, mrB;

    @Test
    void rcDataPathAllocatesNothingAfterWarmUp() {
        RdmaCoreDevice dev = RdmaCoreFixture.requireDevice();
        iwarp = dev.transport() == Transport.IWARP;
        try (RdmaCoreContext ctx = dev.open(); RdmaCoreContext ctxB = dev.open(); Arena arena = Arena.ofShared()) {
            ProtectionDomain pd = ctx.allocPd();
            ProtectionDomain pdB = iwarp ? ctxB.allocPd() : pd;
            cqA = ctx.createCq(64);
            cqB = (iwarp ? ctxB : ctx).createCq(64);
            int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
                    | (iwarp ? 0 : Access.REMOTE_ATOMIC);
            mrA = pd.register(arena.allocate(65536, 4096), access);
            mrB = pdB.register(arena.allocate(65536, 4096), access);
            a = pd.createQp(QpInitAttr.rc(cqA));
            b = pdB.createQp(QpInitAttr.rc(cqB));
            io.jrdma.verbs.ConnectionManager.Connection ca = null, cb = null;
            io.jrdma.verbs.ConnectionManager.Listener l = null;
            if (iwarp) { // the iWARP CM connects the QPs: b's context listens, a connects
                java.net.InetAddress ip = RdmaCoreFixture.ipv4Of(dev);
                Assumptions.assumeTrue(ip != null, "skipped: no IPv4 address of " + dev.name());
                l = ctxB.rdmaCm().listen(new java.net.InetSocketAddress(ip, 0));
                io.jrdma.verbs.ConnectionManager.Listener listener = l;
                var accepted = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    var req = listener.poll(java.time.Duration.ofSeconds(30));
                    return req.accept(b, io.jrdma.verbs.ConnParam.defaults(), java.time.Duration.ofSeconds(30));
                });
                ca = ctx.rdmaCm().connect(a, l.address(), io.jrdma.verbs.ConnParam.defaults(),
                        java.time.Duration.ofSeconds(30));
                cb = accepted.join();
            } else {
                InetGid g = InetGid.ipv4(ctx);
                connect(a, b, g);
                connect(b, a, g);
                assertEquals(b.qpn(), a.query().destQpn());
            }
            assertEquals(QpState.RTS, a.state());

            // correctness once: a WRITE lands, a READ returns it, a SEND carries its immediate data, an atomic adds
            mrA.segment().set(JAVA_LONG, 0, 0x1122334455667788L);
            round(0);
            assertEquals(0x1122334455667788L, mrB.segment().get(JAVA_LONG, 8192));

            for (int i = 1; i < 10_000; i++) {
                round(i); // warm-up: let C2 compile the path
            }
            long best = Long.MAX_VALUE;
            long deadline = System.nanoTime() + 60_000_000_000L;
            do {
                long start = THREADS.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 2_000; i++) {
                    round(i);
                }
                best = Math.min(best, THREADS.getCurrentThreadAllocatedBytes() - start);
            } while (best != 0 && System.nanoTime() < deadline);
            assertEquals(0, best, "bytes allocated by 2,000 rounds of WRITE, READ, SEND/RECV" + (iwarp ? ""
                    : " with immediate data and FETCH_AND_ADD") + " over " + dev.name());
            if (iwarp) {
                ca.close();
                cb.close();
                l.close();
            }
            a.close();
            b.close();
            mrA.close();
            mrB.close();
            cqA.close();
            cqB.close();
            pd.close();
            if (iwarp) {
                pdB.close();
            }
        }
    }

    /** The device's IPv4-mapped GID and its index. */
    record InetGid(Gid gid, int index) {
        static InetGid ipv4(RdmaCoreContext ctx) {
            for (GidEntry e : ctx.gidTable(1)) {
                if (e.gid().toInetAddress() instanceof java.net.Inet4Address) {
                    return new InetGid(e.gid(), e.index());
                }
            }
            Assumptions.abort("skipped: the device has no IPv4 GID");
            return null;
        }
    }

    private static void connect(QueuePair qp, QueuePair peer, InetGid g) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        qp.modify(new QpAttr().state(QpState.RTR).av(AddressVector.of(g.gid(), g.index())).pathMtu(Mtu.MTU_1024)
                .destQpn(peer.qpn()).rqPsn(0).maxDestRdAtomic(4).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(4));
    }

    private void round(int i) {
        assertEquals(0, b.postRecv(rwr.reset().wrId(i).sge(0, mrB, 0, 4096)));
        assertEquals(0, a.postSend(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mrA, 0, 4096).remote(mrB.address() + 8192, mrB.rkey())));
        assertEquals(0, a.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, mrA, 16384, 4096).remote(mrB.address() + 8192, mrB.rkey())));
        if (iwarp) { // siw: no immediate data, no atomics
            assertEquals(0, a.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, mrA, 0, 1024)));
        } else {
            assertEquals(0, a.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND_WITH_IMM).imm(i)
                    .flags(SendFlags.SIGNALED).sge(0, mrA, 0, 1024)));
            assertEquals(0, a.postSend(wr.reset().wrId(4).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).atomic(1, 0)
                    .flags(SendFlags.SIGNALED).sge(0, mrA, 32768, 8).remote(mrB.address() + 40960, mrB.rkey())));
        }
        int onA = 0;
        int onB = 0;
        int sends = iwarp ? 3 : 4;
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (onA < sends || onB < 1) {
            int n = cqA.poll(wcs);
            for (int k = 0; k < n; k++) {
                check(wcs[k]);
            }
            onA += n;
            n = cqB.poll(wcs[0]);
            if (n == 1) {
                check(wcs[0]);
                assertTrue(wcs[0].opcode() == WcOpcode.RECV && wcs[0].byteLen() == 1024
                        && (iwarp || (wcs[0].hasImm() && wcs[0].imm() == i)), "the receive"); // no message built
                onB++;
            }
            assertTrue(System.nanoTime() < deadline);
        }
    }

    private static void check(WorkCompletion wc) {
        if (wc.status() != WcStatus.SUCCESS) {
            throw new AssertionError("completion failed: " + wc);
        }
    }
}

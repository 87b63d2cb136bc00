package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.engine.util.AllocationMeter;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The iWARP data path allocates nothing after warm-up: post, FPDUs built, CRC'd and written to
 * TCP, read back, reassembled, checked and placed, completions polled — every opcode (immediate
 * data and atomics through the jrdma extensions), small messages and large ones (whose payloads
 * go from and to the regions without a copy), with CRC on (the explicit configurations) and off
 * (the default between jrdma peers), both contexts in INVOKER mode and driven by this thread, whose
 * allocated bytes are measured.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
// the SRQ rounds run last: JIT code compiled while only they ran treats "no SRQ" as never taken, and the
// deoptimization the others would then hit allocates until the code is compiled again (a warm-up matter)
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class IwarpAllocationTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(),
        new WorkCompletion()};

    /** @param inv what SEND_WITH_INV invalidates, again and again */
    private record Side(Context ctx, ProtectionDomain pd, MemoryRegion mr, MemoryRegion inv, CompletionQueue cq,
                        QueuePair qp, io.jrdma.verbs.SharedReceiveQueue srq) {
        int postRecv(RecvWorkRequest r) {
            return srq != null ? srq.postRecv(r) : qp.postRecv(r);
        }

        void close() {
            qp.close();
            if (srq != null) {
                srq.close();
            }
            cq.close();
            mr.close();
            inv.close();
            pd.close();
            ctx.close();
        }
    }

    private Side side(Arena arena) {
        InetAddress lo = InetAddress.getLoopbackAddress();
        Context ctx = SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER), List.of(lo),
                        io.jrdma.engine.util.NanoClock.SYSTEM);
        ProtectionDomain pd = ctx.allocPd();
        MemoryRegion mr = pd.register(arena.allocate(1 << 20, 4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE
                | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        CompletionQueue cq = ctx.createCq(64);
        MemoryRegion inv = pd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE | Access.REMOTE_INVALIDATE);
        io.jrdma.verbs.SharedReceiveQueue srq = useSrq ? pd.createSrq(io.jrdma.verbs.SrqInitAttr.of(128, 4)) : null;
        return new Side(ctx, pd, mr, inv, cq, pd.createQp(QpInitAttr.rc(cq).withSrq(srq)), srq);
    }

    private boolean zeroCopy;
    /** the receiving QPs take their receives from an SRQ */
    private boolean useSrq;

    @Test
    @org.junit.jupiter.api.Order(Integer.MAX_VALUE)
    void srqDataPathAllocatesNothingAfterWarmUp() throws Exception {
        useSrq = true;
        dataPath(true, true); // zero copy: receives looked at, then taken, by direct placement too
    }

    @Test
    void dataPathAllocatesNothingAfterWarmUp() throws Exception {
        dataPath(false, true);
    }

    @Test
    void zeroCopyDataPathAllocatesNothingAfterWarmUp() throws Exception {
        dataPath(true, true);
    }

    @Test
    void dataPathWithoutWritevAllocatesNothingAfterWarmUp() throws Exception {
        dataPath(false, false);
    }

    @Test
    void zeroCopyDataPathWithoutWritevAllocatesNothingAfterWarmUp() throws Exception {
        dataPath(true, false);
    }

    @Test
    void defaultDataPathAllocatesNothingAfterWarmUp() throws Exception {
        dataPath(null, true); // the defaults: zero-copy transmit through writev, no CRC between jrdma peers
    }

    /**
     * @param zc     zero copy both ways, neither (both with CRC), or (null) the defaults
     * @param writev the streams use writev/readv on their descriptors (the tests run with the add-opens it needs)
     */
    private void dataPath(Boolean zc, boolean writev) throws Exception {
        zeroCopy = zc == null || zc;
        if (zc != null) {
            System.setProperty(IwarpEngine.ZERO_COPY_PROPERTY, Boolean.toString(zc));
        }
        System.setProperty(NativeTcp.PROPERTY, Boolean.toString(writev));
        Side a;
        Side b;
        try (Arena arena = Arena.ofShared()) {
            try {
                a = side(arena);
                b = side(arena);
            } finally {
                System.clearProperty(IwarpEngine.ZERO_COPY_PROPERTY);
                System.clearProperty(NativeTcp.PROPERTY);
            }
            assertEquals(writev, IwarpEngine.of(((Context) a.ctx)).vectored, "writev: " + NativeTcp.unavailableReason());
            ConnectionManager.Listener l = b.ctx.connectionManager().listen(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            boolean crc = zc != null;
            if (crc) {
                System.setProperty(IwarpConnectionManager.CRC_PROPERTY, "true"); // read when connecting
            }
            ConnectionManager.Connection ca;
            ConnectionManager.Connection cb;
            try {
                CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(
                        () -> l.poll(Duration.ofSeconds(10)).accept(b.qp, ConnParam.defaults(), Duration.ofSeconds(10)));
                ca = a.ctx.connectionManager().connect(a.qp, l.address(), ConnParam.defaults(), Duration.ofSeconds(10));
                cb = accepted.get(10, TimeUnit.SECONDS);
            } finally {
                System.clearProperty(IwarpConnectionManager.CRC_PROPERTY);
            }
            // fast registration cycles (REG_MR, a WRITE through the new key, LOCAL_INV) ride along every 16th round
            fast = b.pd.allocMr(256 * 1024);
            fastSegment = arena.allocate(256 * 1024, 4096);
            try {
                assertEquals(crc, ((IwarpQp) a.qp).iw.crc, "CRC on the client's stream");
                assertEquals(crc, ((IwarpQp) b.qp).iw.crc, "CRC on the server's stream");
                for (int i = 0; i < 20_000; i++) {
                    round(a, b, i); // warm-up: let the JIT compile the paths
                }
                AllocationMeter.Result m = AllocationMeter.steadyState(2_000, Duration.ofSeconds(30), i -> round(a, b, i));
                assertEquals(0, m.bytes(), "bytes allocated by 2,000 rounds of WRITE, READ, SEND/RECV, imm and atomics"
                        + " and 125 of REG_MR, WRITE, LOCAL_INV: " + m);
                IwarpEngine ea = IwarpEngine.of(((Context) a.ctx));
                IwarpEngine eb = IwarpEngine.of(((Context) b.ctx));
                // writev for gather lists of more than one entry: zero-copy FPDUs (the copying path's are one)
                assertEquals(writev && zeroCopy, ea.vectorWrites + eb.vectorWrites > 0, "writev calls");
                if (zeroCopy) {
                    assertTrue(ea.zeroCopySent + eb.zeroCopySent > 0, "some FPDUs were sent from their regions");
                    assertEquals(zc != null, ea.zeroCopyPlaced + eb.zeroCopyPlaced > 0,
                            "some FPDUs were read into their regions (not by default)");
                }
            } finally {
                fast.close();
                ca.close();
                cb.close();
                l.close();
                a.close();
                b.close();
            }
        }
    }

    private void round(Side a, Side b, int i) {
        WrOpcode op = WrOpcode.of(i % (WrOpcode.SEND_WITH_INV.ordinal() + 1)); // the opcodes on the wire, not the local ones
        if (op.consumesRecv()) {
            assertEquals(0, b.postRecv(rwr.reset().wrId(i).sge(0, b.mr, 0, 256 * 1024)));
        }
        // every eighth round a large message: its FPDUs take the zero-copy paths (region views, direct placement)
        int size = op.isAtomic() ? 8 : i % 8 == 7 ? 150_000 + (i % 1000) : 100 + (i % 5000);
        wr.reset().wrId(i).opcode(op).flags(SendFlags.SIGNALED).sge(0, a.mr, 8192, size)
                .remote(b.mr.address() + 16384, b.mr.rkey()).imm(i).atomic(1, 2);
        if (op == WrOpcode.SEND_WITH_INV) {
            wr.invalidate(b.inv.rkey());
        }
        assertEquals(0, a.qp.postSend(wr));
        int want = op.consumesRecv() ? 2 : 1;
        assertEquals(want, await(a, b, want, op));
        if (i % 16 == 5) {
            int key = io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey());
            assertEquals(0, b.qp.postSend(wr.reset().wrId(i).flags(SendFlags.SIGNALED)
                    .regMr(fast, fastSegment, key, Access.LOCAL_WRITE | Access.REMOTE_WRITE)));
            await(a, b, 1, WrOpcode.REG_MR);
            int len = i % 32 == 5 ? 150_000 : 1000; // the large one is placed through the region's views
            // an iWARP WRITE completes once TCP took it, so wait until its last byte is placed before invalidating
            byte marker = (byte) (0x80 | (i >>> 4));
            fastSegment.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 64 + len - 1, (byte) 0);
            a.mr.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, 8192 + len - 1, marker);
            assertEquals(0, a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, a.mr, 8192, len).remote(fastSegment.address() + 64, key)));
            await(a, b, 1, WrOpcode.RDMA_WRITE);
            long placedBy = System.nanoTime() + 5_000_000_000L;
            while (fastSegment.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 64 + len - 1) != marker) {
                a.ctx.progress();
                b.ctx.progress();
                if (System.nanoTime() > placedBy) {
                    throw new AssertionError("the WRITE into the fast-registration region was not placed");
                }
            }
            assertEquals(0, b.qp.postSend(wr.reset().wrId(i).flags(SendFlags.SIGNALED).localInv(key)));
            await(a, b, 1, WrOpcode.LOCAL_INV);
        }
    }

    private MemoryRegion fast;
    private java.lang.foreign.MemorySegment fastSegment;

    /** Drives both sides until {@code want} successful completions arrived (within 5 s). @return how many arrived */
    private int await(Side a, Side b, int want, WrOpcode op) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        int got = 0;
        while (got < want) {
            a.ctx.progress();
            b.ctx.progress();
            int n = a.cq.poll(wcs);
            n += b.cq.poll(wcs);
            for (int k = 0; k < n; k++) {
                if (wcs[k].status() != WcStatus.SUCCESS) {
                    throw new AssertionError("completion failed: " + wcs[k].status() + " for " + op);
                }
            }
            got += n;
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion for " + op);
            }
        }
        return got;
    }
}

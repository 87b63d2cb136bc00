package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.engine.link.NativeTcp;
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
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Zero copy between two jrdma iWARP contexts (CRC on; without it in IwarpZeroCopyNoCrcTest; both
 * INVOKER, driven by this thread): large
 * payloads leave from the sender's region (gather entries) and land in the receiver's region read
 * straight from the socket (direct placement), across FPDU boundaries that fall anywhere in the
 * TCP reads, with partial socket writes, into multi-SGE receive and READ scatter lists. Every byte
 * is checked, and the engines' counters show that the zero-copy paths carried the FPDUs.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IwarpZeroCopyTest {
    private static final long DEADLINE = Duration.ofSeconds(20).toNanos();
    private static final int REGION = 8 << 20;

    private Arena arena;
    private Side a;
    private Side b;
    private ConnectionManager.Listener listener;
    private ConnectionManager.Connection ca;
    private ConnectionManager.Connection cb;
    private final WorkCompletion wc = new WorkCompletion();

    private record Side(Context ctx, ProtectionDomain pd, MemorySegment buf, MemoryRegion mr, MemorySegment buf2,
            MemoryRegion mr2, CompletionQueue cq, QueuePair qp) {
        IwarpEngine iwarp() {
            return IwarpEngine.of(ctx);
        }

        void close() {
            qp.close();
            cq.close();
            mr.close();
            mr2.close();
            pd.close();
            ctx.close();
        }
    }

    private Side side() {
        InetAddress lo = InetAddress.getLoopbackAddress();
        Context ctx = SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER), List.of(lo),
                        io.jrdma.engine.util.NanoClock.SYSTEM);
        ProtectionDomain pd = ctx.allocPd();
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
        MemorySegment buf = arena.allocate(REGION, 4096);
        MemorySegment buf2 = arena.allocate(REGION, 4096);
        CompletionQueue cq = ctx.createCq(64);
        return new Side(ctx, pd, buf, pd.register(buf, access), buf2, pd.register(buf2, access), cq,
                pd.createQp(QpInitAttr.rc(cq)));
    }

    @BeforeEach
    void connect() throws Exception {
        arena = Arena.ofShared();
        System.setProperty(IwarpEngine.ZERO_COPY_PROPERTY, "true"); // read when a context opens
        try {
            a = side();
            b = side();
        } finally {
            System.clearProperty(IwarpEngine.ZERO_COPY_PROPERTY);
        }
        listener = b.ctx.connectionManager().listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        // CRC on (read when connecting; jrdma peers go without it by default): the CRC of directly placed
        // pieces is checked too. IwarpZeroCopyNoCrcTest runs the same tests with the default, no CRC.
        if (crc()) {
            System.setProperty(IwarpConnectionManager.CRC_PROPERTY, "true");
        }
        try {
            CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() ->
                    listener.poll(Duration.ofSeconds(10)).accept(b.qp, ConnParam.defaults(), Duration.ofSeconds(10)));
            ca = a.ctx.connectionManager().connect(a.qp, listener.address(), ConnParam.defaults(),
                    Duration.ofSeconds(10));
            cb = accepted.get(10, TimeUnit.SECONDS);
        } finally {
            System.clearProperty(IwarpConnectionManager.CRC_PROPERTY);
        }
        assertEquals(crc(), ((IwarpQp) a.qp).iw.crc, "CRC on the client's stream");
        assertEquals(crc(), ((IwarpQp) b.qp).iw.crc, "CRC on the server's stream");
    }

    /** @return true to connect with MPA CRC ({@code -Djrdma.iwarp.crc=true}), false for the default between jrdma peers */
    boolean crc() {
        return true;
    }

    @AfterEach
    void close() {
        ca.close();
        cb.close();
        listener.close();
        a.close();
        b.close();
        arena.close();
    }

    private static void pattern(MemorySegment s, long off, long len, int seed) {
        for (long i = 0; i < len; i++) {
            s.set(ValueLayout.JAVA_BYTE, off + i, (byte) (i * 31 + seed + (i >>> 13)));
        }
    }

    private static void expectPattern(MemorySegment s, long off, long len, int seed, long from, String what) {
        for (long i = 0; i < len; i++) {
            byte want = (byte) ((from + i) * 31 + seed + ((from + i) >>> 13));
            if (s.get(ValueLayout.JAVA_BYTE, off + i) != want) {
                fail(what + ": byte " + (from + i) + " of the message is " + s.get(ValueLayout.JAVA_BYTE, off + i)
                        + ", expected " + want);
            }
        }
    }

    /** Drives both engines until {@code cq} has a completion; @return it (in {@link #wc}) */
    private WorkCompletion await(CompletionQueue cq) {
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            a.ctx.progress();
            b.ctx.progress();
            if (System.nanoTime() - end > 0) {
                fail("no completion within 20 s; QPs " + a.qp.state() + " / " + b.qp.state());
            }
        }
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        return wc;
    }

    @Test
    void largeWriteLeavesFromTheRegionAndLandsInTheRegion() {
        int len = 3 * 1024 * 1024 + 12345; // FPDUs of ~64 KiB on loopback, the last a short one
        pattern(a.buf, 100, len, 7);
        SendWorkRequest wr = new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, a.mr, 100, len).remote(b.mr.address() + 333, b.mr.rkey());
        long sent = a.iwarp().zeroCopySent;
        long placed = b.iwarp().zeroCopyPlaced;
        assertEquals(0, a.qp.postSend(wr));
        await(a.cq);
        // a WRITE completes once TCP took it: the last bytes may still be on their way
        long end = System.nanoTime() + DEADLINE;
        while (b.buf.get(ValueLayout.JAVA_BYTE, 333 + len - 1) != (byte) ((len - 1L) * 31 + 7 + ((len - 1L) >>> 13))
                || b.iwarp().zeroCopyPlaced - placed < 40) {
            b.ctx.progress();
            assertTrue(System.nanoTime() - end < 0, "the WRITE was not placed within 20 s");
        }
        expectPattern(b.buf, 333, len, 7, 0, "WRITE");
        assertTrue(a.iwarp().zeroCopySent - sent >= 40, "FPDUs sent from the region: " + (a.iwarp().zeroCopySent - sent));
        // the tests run with --add-opens java.base/sun.nio.ch: one writev per flush, payloads read with readv
        assertTrue(a.iwarp().vectorWrites > 0, "writev: " + NativeTcp.unavailableReason());
        assertTrue(b.iwarp().vectorReads > 0, "readv: " + NativeTcp.unavailableReason());
        assertEquals(0, b.buf.get(ValueLayout.JAVA_BYTE, 332), "nothing before the target");
        assertEquals(0, b.buf.get(ValueLayout.JAVA_BYTE, 333 + len), "nothing after it");
    }

    @Test
    void partialSocketWritesOfRegionPayloadsResumeWhereTheyStopped() {
        // the receiver is not driven while the sender posts: its socket fills, writes stop part way in a payload
        int len = 2 * 1024 * 1024 + 77;
        int n = 3;
        SendWorkRequest wr = new SendWorkRequest();
        for (int k = 0; k < n; k++) {
            pattern(a.buf, (long) k * len, len, k);
            wr.reset().wrId(k).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).sge(0, a.mr, (long) k * len, len)
                    .remote(b.mr.address() + (long) k * len, b.mr.rkey());
            assertEquals(0, a.qp.postSend(wr));
        }
        for (int i = 0; i < 200; i++) {
            a.ctx.progress();
        }
        assertTrue(a.ctx.counter(Counter.SEND_ERR) > 0, "the socket refused part of a write (else nothing was tested)");
        for (int k = 0; k < n; k++) {
            assertEquals(k, await(a.cq).wrId());
        }
        long end = System.nanoTime() + DEADLINE;
        while (b.buf.get(ValueLayout.JAVA_BYTE, (long) n * len - 1) != (byte) ((len - 1L) * 31 + (n - 1) + ((len - 1L) >>> 13))) {
            b.ctx.progress();
            assertTrue(System.nanoTime() - end < 0, "the WRITEs were not placed within 20 s");
        }
        for (int k = 0; k < n; k++) {
            expectPattern(b.buf, (long) k * len, len, k, 0, "WRITE " + k);
        }
    }

    @Test
    void largeSendScattersStraightIntoAMultiSgeReceive() {
        // three SGEs in two regions with odd lengths: FPDU payloads straddle them
        int l0 = 100_003;
        int l1 = 65_536 + 17;
        int l2 = 300_000;
        int len = l0 + l1 + l2 - 5; // a little shorter than the list
        RecvWorkRequest rwr = new RecvWorkRequest().wrId(9).sge(0, b.mr, 11, l0).sge(1, b.mr2, 4099, l1)
                .sge(2, b.mr, 1_000_000, l2);
        assertEquals(0, b.qp.postRecv(rwr));
        pattern(a.buf2, 0, len, 3);
        long placed = b.iwarp().zeroCopyPlaced;
        SendWorkRequest wr = new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, a.mr2, 0, len);
        assertEquals(0, a.qp.postSend(wr));
        await(a.cq);
        WorkCompletion r = await(b.cq);
        assertEquals(9, r.wrId());
        assertEquals(WcOpcode.RECV, r.opcode());
        assertEquals(len, r.byteLen());
        expectPattern(b.buf, 11, l0, 3, 0, "SGE 0");
        expectPattern(b.buf2, 4099, l1, 3, l0, "SGE 1");
        expectPattern(b.buf, 1_000_000, len - l0 - l1, 3, l0 + l1, "SGE 2");
        assertTrue(b.iwarp().zeroCopyPlaced > placed, "the SEND's FPDUs were read into the receive's regions");
    }

    @Test
    void largeReadResponseScattersStraightIntoTheReadersList() {
        int l0 = 70_001;
        int l1 = 500_000;
        int len = l0 + l1;
        pattern(b.buf, 5, len, 11);
        long placed = a.iwarp().zeroCopyPlaced;
        long sent = b.iwarp().zeroCopySent;
        SendWorkRequest wr = new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, a.mr, 64, l0).sge(1, a.mr2, 0, l1).remote(b.mr.address() + 5, b.mr.rkey());
        assertEquals(0, a.qp.postSend(wr));
        WorkCompletion c = await(a.cq);
        assertEquals(WcOpcode.RDMA_READ, c.opcode());
        expectPattern(a.buf, 64, l0, 11, 0, "READ SGE 0");
        expectPattern(a.buf2, 0, l1, 11, l0, "READ SGE 1");
        assertTrue(b.iwarp().zeroCopySent > sent, "the READ Response left from the responder's region");
        assertTrue(a.iwarp().zeroCopyPlaced > placed, "the READ Response was read into the requester's regions");
    }

    @Test
    void smallAndLargeMessagesInterleaveOnOneStream() {
        SendWorkRequest wr = new SendWorkRequest();
        int[] sizes = {8, 200_000, 1, 4_000, 65_000, 3, 1_000_000, 17};
        long off = 0;
        for (int k = 0; k < sizes.length; k++) {
            pattern(a.buf, off, sizes[k], 40 + k);
            wr.reset().wrId(k).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).sge(0, a.mr, off, sizes[k])
                    .remote(b.mr.address() + off, b.mr.rkey());
            assertEquals(0, a.qp.postSend(wr));
            off += sizes[k] + 1000;
        }
        // a SEND last: when its receive completes, every WRITE before it is placed (TCP keeps the order)
        assertEquals(0, b.qp.postRecv(new RecvWorkRequest().wrId(99).sge(0, b.mr2, 0, 16)));
        assertEquals(0, a.qp.postSend(wr.reset().wrId(99).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, a.mr2, 0, 16)));
        assertEquals(99, await(b.cq).wrId());
        off = 0;
        for (int k = 0; k < sizes.length; k++) {
            expectPattern(b.buf, off, sizes[k], 40 + k, 0, "WRITE " + k + " (" + sizes[k] + " B)");
            off += sizes[k] + 1000;
        }
    }
}

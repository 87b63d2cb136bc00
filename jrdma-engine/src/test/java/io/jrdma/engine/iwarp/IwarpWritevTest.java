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
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.Rdmap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The soft-iWARP transmitter with zero copy, with {@code writev} on the socket's descriptor
 * ({@link NativeTcp}) and without it (the SocketChannel calls, as without the add-opens): the
 * jrdma side (INVOKER, driven by this thread) sends to a raw MPA peer that reads slowly from a small
 * socket buffer, so that writes stop anywhere inside headers, payloads and trailers, and every
 * FPDU the peer receives is checked (CRC, headers, every payload byte). A region deregistered or
 * freed while its payload is still queued is not read: its WRITE fails, the connection ends.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IwarpWritevTest {
    private static final long DEADLINE = Duration.ofSeconds(20).toNanos();

    private final List<Arena> arenas = new ArrayList<>();
    private final List<MemoryRegion> regions = new ArrayList<>();
    private Context ctx;
    private ProtectionDomain pd;
    private CompletionQueue cq;
    private QueuePair qp;
    private ConnectionManager.Listener listener;
    private ConnectionManager.Connection conn;
    private SocketChannel peer;
    private final WorkCompletion wc = new WorkCompletion();

    private void open(boolean writev) throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        System.setProperty(IwarpEngine.ZERO_COPY_PROPERTY, "true");
        System.setProperty(NativeTcp.PROPERTY, Boolean.toString(writev));
        try {
            ctx = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                    .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        } finally {
            System.clearProperty(IwarpEngine.ZERO_COPY_PROPERTY);
            System.clearProperty(NativeTcp.PROPERTY);
        }
        assertEquals(writev, IwarpEngine.of(ctx).vectored, "writev: " + NativeTcp.unavailableReason());
        pd = ctx.allocPd();
        cq = ctx.createCq(64);
        qp = pd.createQp(QpInitAttr.rc(cq));
        listener = ctx.connectionManager().listen(new InetSocketAddress(lo, 0));
        CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() ->
                listener.poll(Duration.ofSeconds(10)).accept(qp, ConnParam.defaults(), Duration.ofSeconds(10)));
        peer = SocketChannel.open(listener.address());
        peer.setOption(StandardSocketOptions.SO_RCVBUF, 16 * 1024);
        RawMpa.request(peer, true, new byte[0]);
        conn = accepted.get(10, TimeUnit.SECONDS);
        peer.configureBlocking(false);
        IwarpStream s = ((IwarpQp) qp).iw;
        assertEquals(writev, s.fd >= 0, "the stream has a descriptor exactly with writev");
        s.channel.setOption(StandardSocketOptions.SO_SNDBUF, 8 * 1024); // short writes, often
    }

    @AfterEach
    void close() throws IOException {
        if (peer != null) {
            peer.close();
        }
        if (conn != null) {
            conn.close();
        }
        if (listener != null) {
            listener.close();
            qp.close();
            cq.close();
            regions.forEach(MemoryRegion::close);
            pd.close();
            ctx.close();
        }
        for (Arena a : arenas) {
            if (a.scope().isAlive()) {
                a.close();
            }
        }
    }

    private MemoryRegion region(Arena arena, int size, int seed) {
        MemorySegment m = arena.allocate(size, 4096);
        for (int i = 0; i < size; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, pattern(seed, i));
        }
        MemoryRegion mr = pd.register(m, Access.LOCAL_WRITE);
        regions.add(mr);
        return mr;
    }

    private Arena arena() {
        Arena a = Arena.ofShared();
        arenas.add(a);
        return a;
    }

    private static byte pattern(int seed, long i) {
        return (byte) (i * 31 + seed + (i >>> 11));
    }

    /** The bytes the peer has received, parsed as they come: whole FPDUs checked, payloads handed on. */
    private final class Receiver {
        final ByteBuffer in = ByteBuffer.allocateDirect(4 * 65536);
        final MemorySegment seg = MemorySegment.ofBuffer(in);
        long writeBytes;
        int fpdus;
        boolean ended;

        /** Reads at most {@code max} bytes; checks every complete FPDU with {@code check}. */
        void poll(int max, PayloadCheck check) throws IOException {
            in.limit(Math.min(in.capacity(), in.position() + max));
            int n = peer.read(in);
            in.limit(in.capacity());
            if (n < 0) {
                ended = true;
            }
            int off = 0;
            while (true) {
                int total = Fpdu.scan(seg, off, in.position() - off, Fpdu.MAX_ULPDU_LENGTH);
                assertTrue(total >= 0, "framing: " + total);
                if (total == 0) {
                    break;
                }
                int p = Fpdu.check(seg, off, total, true, Fpdu.MAX_ULPDU_LENGTH);
                assertTrue(p > 0, "FPDU " + fpdus + " is valid (CRC, headers): " + p);
                int ddp = off + Fpdu.ULPDU_OFFSET;
                assertEquals(Rdmap.WRITE, Rdmap.opcode(seg, ddp), "a WRITE");
                int len = Fpdu.ulpduLength(seg, off) - (p - Fpdu.ULPDU_OFFSET);
                check.payload(Ddp.stag(seg, ddp), Ddp.taggedOffset(seg, ddp), seg, off + p, len);
                writeBytes += len;
                fpdus++;
                off += total;
            }
            if (off > 0) {
                MemorySegment.copy(seg, off, seg, 0, in.position() - off);
                in.position(in.position() - off);
            }
        }
    }

    @FunctionalInterface
    private interface PayloadCheck {
        void payload(int stag, long to, MemorySegment s, long off, int len);
    }

    private WorkCompletion await() {
        long end = System.nanoTime() + DEADLINE;
        while (cq.poll(wc) == 0) {
            ctx.progress();
            assertTrue(System.nanoTime() - end < 0, "no completion within 20 s; QP " + qp.state());
        }
        return wc;
    }

    @ParameterizedTest(name = "writev {0}")
    @ValueSource(booleans = {true, false})
    void shortWritesToASlowReaderResumeExactly(boolean writev) throws Exception {
        open(writev);
        // six regions: more than one writev keeps alive (NativeTcp.KEEP), so vectors also end at a region
        int n = 6;
        int len = 400_000 + 4321;
        MemoryRegion[] src = new MemoryRegion[n];
        Arena arena = arena();
        SendWorkRequest wr = new SendWorkRequest();
        for (int k = 0; k < n; k++) {
            src[k] = region(arena, len, k);
            // STag = k + 1, TO = k << 32: the receiver tells the WRITEs apart by them
            wr.reset().wrId(k).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED).sge(0, src[k], 0, len)
                    .remote((long) k << 32, k + 1);
            assertEquals(0, qp.postSend(wr));
        }
        long sent = IwarpEngine.of(ctx).zeroCopySent;
        long[] got = new long[n];
        Receiver r = new Receiver();
        PayloadCheck check = (stag, to, s, off, l) -> {
            int k = stag - 1;
            long at = to - ((long) k << 32);
            assertEquals(got[k], at, "WRITE " + k + " continues where it stopped");
            for (int i = 0; i < l; i++) {
                if (s.get(ValueLayout.JAVA_BYTE, off + i) != pattern(k, at + i)) {
                    fail("WRITE " + k + ": byte " + (at + i) + " differs");
                }
            }
            got[k] += l;
        };
        long end = System.nanoTime() + DEADLINE;
        int completed = 0;
        int round = 0;
        while (r.writeBytes < (long) n * len) {
            ctx.progress();
            r.poll(1000 + (round++ % 7) * 1777, check); // odd amounts: the sender stops anywhere
            while (cq.poll(wc) > 0) {
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                assertEquals(completed++, wc.wrId(), "in order");
            }
            assertFalse(r.ended, "the connection closed");
            assertTrue(System.nanoTime() - end < 0, "not all received within 20 s: " + r.writeBytes);
        }
        for (int k = 0; k < n; k++) {
            assertEquals(len, got[k], "WRITE " + k);
        }
        while (completed < n) {
            assertEquals(WcStatus.SUCCESS, await().status());
            assertEquals(completed++, wc.wrId());
        }
        assertTrue(ctx.counter(Counter.SEND_ERR) > 0, "the socket refused part of a write (else nothing was tested)");
        assertTrue(IwarpEngine.of(ctx).zeroCopySent - sent >= (long) n * (len / 65536), "FPDUs sent from the regions");
        assertEquals(writev, IwarpEngine.of(ctx).vectorWrites > 0, "writev calls");
        assertEquals(QpState.RTS, qp.state());
    }

    @ParameterizedTest(name = "writev {0}")
    @ValueSource(booleans = {true, false})
    void aWriteCompletesOnceTcpTookItWhileLaterOnesWait(boolean writev) throws Exception {
        open(writev);
        Arena arena = arena();
        MemoryRegion small = region(arena, 6_000, 3);
        MemoryRegion big = region(arena, 4 << 20, 4);
        SendWorkRequest wr = new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, small, 0, 6_000).remote(0, 1);
        assertEquals(0, qp.postSend(wr));
        assertEquals(0, qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, big, 0, 4 << 20).remote(0, 2)));
        // the peer reads nothing: the socket takes the first WRITE and part of the second
        assertEquals(1, await().wrId());
        assertEquals(WcStatus.SUCCESS, wc.status());
        assertTrue(((IwarpQp) qp).iw.txPending(), "the second WRITE still waits for the socket");
        assertEquals(0, cq.poll(wc), "and does not complete");
    }

    /** Posts a large WRITE and a small one behind it, drives until the socket is full part way into the first. */
    private MemoryRegion[] stuckWrites(Arena big, int len) {
        MemoryRegion a = region(big, len, 1);
        MemoryRegion b = region(arena(), 4096, 2);
        SendWorkRequest wr = new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, a, 0, len).remote(0, 1);
        assertEquals(0, qp.postSend(wr));
        assertEquals(0, qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, b, 0, 4096).remote(0, 2)));
        for (int i = 0; i < 100; i++) {
            ctx.progress();
        }
        IwarpStream s = ((IwarpQp) qp).iw;
        assertTrue(s.txPending(), "payloads wait for the socket");
        assertTrue(ctx.counter(Counter.SEND_ERR) > 0, "the socket is full");
        assertEquals(0, cq.poll(wc), "nothing completed yet");
        return new MemoryRegion[] {a, b};
    }

    /** The large WRITE fails with LOC_PROT_ERR, the one behind it is flushed, the QP is in ERROR, the connection closes. */
    private void expectFailedWrite(PayloadCheck check) throws IOException {
        assertEquals(1, await().wrId());
        assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
        assertEquals(2, await().wrId());
        assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(), wc.toString());
        assertEquals(QpState.ERROR, qp.state());
        Receiver r = new Receiver();
        long end = System.nanoTime() + DEADLINE;
        while (!r.ended) {
            ctx.progress();
            r.poll(65536, check);
            assertTrue(System.nanoTime() - end < 0, "the connection was not closed within 20 s");
        }
        assertTrue(r.writeBytes < 4 << 20, "the WRITE did not all leave: " + r.writeBytes);
    }

    @ParameterizedTest(name = "writev {0}")
    @ValueSource(booleans = {true, false})
    void regionDeregisteredWhileQueuedIsNotRead(boolean writev) throws Exception {
        open(writev);
        int len = 4 << 20;
        MemoryRegion[] m = stuckWrites(arena(), len);
        m[0].close();
        m[0].segment().fill((byte) 0x77); // the memory lives on: had it been read, these bytes would arrive
        long errors = ctx.counter(Counter.ENGINE_ERRORS);
        // every payload byte that arrives was sent before the deregistration (the pattern, never 0x77 runs)
        expectFailedWrite((stag, to, s, off, l) -> {
            for (int i = 0; i < l; i++) {
                if (stag == 1 && s.get(ValueLayout.JAVA_BYTE, off + i) != pattern(1, to + i)) {
                    fail("byte " + (to + i) + " of the deregistered region was sent after deregistration");
                }
            }
        });
        assertTrue(ctx.counter(Counter.ENGINE_ERRORS) > errors);
    }

    @ParameterizedTest(name = "writev {0}")
    @ValueSource(booleans = {true, false})
    void regionFreedWhileQueuedIsNotRead(boolean writev) throws Exception {
        open(writev);
        Arena big = Arena.ofShared();
        stuckWrites(big, 4 << 20);
        big.close(); // the region is still registered, its memory is gone
        expectFailedWrite((stag, to, s, off, l) -> { });
    }

    @Test
    void byDefaultZeroCopyTransmitGoesWithWritevAndReceiveCopies() {
        InetAddress lo = InetAddress.getLoopbackAddress();
        for (boolean writev : new boolean[] {true, false}) {
            System.setProperty(NativeTcp.PROPERTY, Boolean.toString(writev));
            Context c;
            try {
                c = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                        .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            } finally {
                System.clearProperty(NativeTcp.PROPERTY);
            }
            try {
                assertEquals(writev, IwarpEngine.of(c).vectored);
                assertEquals(writev, IwarpEngine.of(c).zeroCopy, "zero-copy transmit exactly with writev");
                assertFalse(IwarpEngine.of(c).zeroCopyRx, "a copying receive");
            } finally {
                c.close();
            }
        }
    }

    @Test
    void withoutTheAddOpensTheEngineKeepsToSocketChannel() throws Exception {
        // a JVM like this one, without --add-opens java.base/sun.nio.ch
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), Probe.class.getName())
                .redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = p.getInputStream()) {
            in.transferTo(out);
        }
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), text);
        assertTrue(text.contains("vectored=false zeroCopy=false"), text);
        assertTrue(text.contains("--add-opens java.base/sun.nio.ch=ALL-UNNAMED"), text);
    }

    /** Run in a JVM of its own by {@link #withoutTheAddOpensTheEngineKeepsToSocketChannel}. */
    static final class Probe {
        public static void main(String[] args) {
            InetAddress lo = InetAddress.getLoopbackAddress();
            Context c = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                    .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            System.out.println("vectored=" + IwarpEngine.of(c).vectored + " zeroCopy=" + IwarpEngine.of(c).zeroCopy
                    + " reason=" + NativeTcp.unavailableReason());
            c.close();
        }
    }
}

package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.DeviceContext;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * shm0 between two processes: the target ({@link ShmPeerMain}) in a child JVM. One-sided
 * operations complete while the target is stopped (SIGSTOP): no thread of the target runs; a
 * SEND, which needs the target's engine, waits until it is resumed. A killed target moves the
 * initiator's QP to ERROR with its requests flushed.
 */
class ShmTwoProcessTest {
    private Process peer;
    private BufferedReader peerOut;
    private PrintStream peerIn;
    private final Arena arena = Arena.ofShared();
    private DeviceContext ctx;
    private ProtectionDomain pd;
    private CompletionQueue cq;
    private QueuePair qp;
    private MemorySegment buf;
    private MemoryRegion mr;
    private ConnectionManagerHolder conn;
    private long raddr;
    private int rkey;
    /** the peer's own memory (not allocateBuffer's), reached by cross-memory attach */
    private long ownAddr;
    private int ownKey;
    private final SendWorkRequest wr = new SendWorkRequest();
    private final WorkCompletion wc = new WorkCompletion();

    private record ConnectionManagerHolder(io.jrdma.verbs.ConnectionManager.Connection c) {
    }

    private void start() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // no counters file: a peer the test kills would leave it behind (the test reads only its own counters)
        peer = new ProcessBuilder(java, "-Xmx256m", "-Djrdma.stat=false", "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), ShmPeerMain.class.getName())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        peerOut = new BufferedReader(new InputStreamReader(peer.getInputStream()));
        peerIn = new PrintStream(peer.getOutputStream(), true);
        int port = Integer.parseInt(line());
        ctx = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        pd = ctx.allocPd();
        cq = ctx.createCq(64);
        qp = pd.createQp(QpInitAttr.rc(cq).withDepth(16, 16));
        buf = ctx.allocateBuffer(ShmPeerMain.SIZE, 4096, arena);
        mr = pd.register(buf, Access.LOCAL_WRITE);
        conn = new ConnectionManagerHolder(ctx.connectionManager().connect(qp, new InetSocketAddress("127.0.0.1", port),
                ConnParam.defaults(), Duration.ofSeconds(30)));
        ByteBuffer where = ByteBuffer.wrap(conn.c().peerParam().privateData());
        raddr = where.getLong();
        rkey = where.getInt();
        ownAddr = where.getLong();
        ownKey = where.getInt();
    }

    /** A line of the peer's output, within 30 s. */
    private String line() throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!peerOut.ready()) {
            assertTrue(peer.isAlive(), "the peer exited with " + (peer.isAlive() ? "" : peer.exitValue()));
            assertTrue(System.nanoTime() < deadline, "no line from the peer within 30 s");
            Thread.onSpinWait();
        }
        return peerOut.readLine();
    }

    private void signal(String sig) throws Exception {
        Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(peer.pid())).inheritIO().start();
        assertTrue(k.waitFor(10, java.util.concurrent.TimeUnit.SECONDS) && k.exitValue() == 0, "kill -" + sig);
    }

    /**
     * {@code kill -STOP} returns once the signal is sent, not once the peer's threads have stopped: its engine
     * thread can still take a message in between. Waits (10 s at most) until every thread of the peer shows 'T'
     * in /proc/<pid>/task/<tid>/stat.
     */
    private void stopPeer() throws Exception {
        signal("STOP");
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!allThreadsStopped()) {
            assertTrue(System.nanoTime() < deadline, "the peer's threads did not all stop within 10 s");
            Thread.onSpinWait();
        }
    }

    private boolean allThreadsStopped() throws Exception {
        try (var tasks = Files.list(Path.of("/proc/" + peer.pid() + "/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                String stat;
                try {
                    stat = Files.readString(t.resolve("stat"));
                } catch (java.nio.file.NoSuchFileException gone) {
                    continue; // a thread that exited meanwhile
                }
                if (stat.charAt(stat.lastIndexOf(')') + 2) != 'T') {
                    return false;
                }
            }
        }
        return true;
    }

    /** @return the peer's state letter in /proc/<pid>/stat ('T' when stopped) */
    private char state() throws Exception {
        String stat = Files.readString(Path.of("/proc/" + peer.pid() + "/stat"));
        return stat.charAt(stat.lastIndexOf(')') + 2);
    }

    private WorkCompletion run(SendWorkRequest r) {
        assertEquals(0, qp.postSend(r));
        return await();
    }

    private WorkCompletion await() {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "no completion within 10 s");
            Thread.onSpinWait();
        }
        return wc;
    }

    @AfterEach
    void stop() throws Exception {
        if (peer != null && peer.isAlive()) {
            signal("CONT");
            peer.getOutputStream().close();
            if (!peer.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
                peer.destroyForcibly();
            }
        }
        if (conn != null) {
            conn.c().close();
        }
        if (qp != null) {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            ctx.close();
        }
        arena.close();
    }

    @Test
    void oneSidedOperationsCompleteWhileTheTargetIsStopped() throws Exception {
        start();
        stopPeer();
        int len = 1 << 20;
        for (int i = 0; i < len; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 5));
        }
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mr, 0, len).remote(raddr + 4096, rkey)).status());
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, mr, 2L << 20, len).remote(raddr + 4096, rkey)).status());
        assertEquals(buf.asSlice(0, len).mismatch(buf.asSlice(2L << 20, len)), -1L, "READ returns what WRITE wrote");
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(3).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .flags(SendFlags.SIGNALED).sge(0, mr, 3L << 20, 8).remote(raddr, rkey).atomic(5, 0)).status());
        assertEquals(0, buf.get(ValueLayout.JAVA_LONG, 3L << 20));
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(4).opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                .flags(SendFlags.SIGNALED).sge(0, mr, 3L << 20, 8).remote(raddr, rkey).atomic(5, 77)).status());
        assertEquals(5, buf.get(ValueLayout.JAVA_LONG, 3L << 20));
        // a SEND needs the target's engine: it waits while the target is stopped
        buf.set(ValueLayout.JAVA_LONG, 3L << 20, 0x5EED);
        assertEquals(0, qp.postSend(wr.reset().wrId(5).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                .sge(0, mr, 3L << 20, 8).imm(42)));
        long until = System.nanoTime() + 200_000_000L;
        while (System.nanoTime() < until) {
            assertEquals(0, cq.poll(wc), "a SEND completed while its target was stopped");
        }
        assertEquals('T', state(), "the target stayed stopped throughout");
        signal("CONT");
        WorkCompletion sent = await();
        assertEquals(5, sent.wrId());
        assertEquals(WcStatus.SUCCESS, sent.status());
        // the target's own view of its memory
        CRC32 crc = new CRC32();
        crc.update(buf.asSlice(0, len).asByteBuffer());
        peerIn.println("crc 4096 " + len);
        assertEquals(Long.toString(crc.getValue()), line());
        peerIn.println("recv");
        assertEquals("SUCCESS 8 42", line());
    }

    /**
     * Memory the target allocated itself (a plain arena's), registered with remote read and write: WRITEs and READs
     * reach it by cross-memory attach while every thread of the target is stopped, and the target sees the data once
     * it runs again; an atomic is refused (REM_ACCESS_ERR) without touching it.
     */
    @Test
    void crossMemoryAttachReachesTheTargetsOwnMemoryWhileItIsStopped() throws Exception {
        start();
        stopPeer();
        int len = 256 << 10;
        for (int i = 0; i < len; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 17 + 3));
        }
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mr, 0, len).remote(ownAddr + 4096, ownKey)).status());
        buf.set(ValueLayout.JAVA_LONG, 3L << 20, 0x0123456789ABCDEFL);
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mr, 3L << 20, 8).remote(ownAddr, ownKey)).status());
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(3).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, mr, 2L << 20, len).remote(ownAddr + 4096, ownKey)).status());
        assertEquals(-1L, buf.asSlice(0, len).mismatch(buf.asSlice(2L << 20, len)), "READ returns what WRITE wrote");
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(4).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, mr, (3L << 20) + 8, 8).remote(ownAddr, ownKey)).status());
        assertEquals(0x0123456789ABCDEFL, buf.get(ValueLayout.JAVA_LONG, (3L << 20) + 8));
        assertEquals('T', state(), "the target stayed stopped throughout");
        signal("CONT");
        CRC32 crc = new CRC32();
        crc.update(buf.asSlice(0, len).asByteBuffer());
        peerIn.println("owncrc 4096 " + len);
        assertEquals(Long.toString(crc.getValue()), line(), "the target's own view of its memory");
        crc.reset();
        crc.update(buf.asSlice(3L << 20, 8).asByteBuffer());
        peerIn.println("owncrc 0 8");
        assertEquals(Long.toString(crc.getValue()), line());
        // no atomics by a kernel copy: refused, the word unchanged
        assertEquals(WcStatus.REM_ACCESS_ERR, run(wr.reset().wrId(5).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                .flags(SendFlags.SIGNALED).sge(0, mr, 3L << 20, 8).remote(ownAddr, ownKey).atomic(1, 0)).status());
        peerIn.println("owncrc 0 8");
        assertEquals(Long.toString(crc.getValue()), line(), "an atomic changed the target's own memory");
    }

    /**
     * Several SENDs in flight to a target in another process whose engine runs on its own thread (DEDICATED): twelve
     * posted at once against four receives; the fifth is refused (RNR) and the rest dropped behind it; once the
     * target posts eight more, every message arrives once and in order, and every SEND completes in order.
     */
    @Test
    void sendsInFlightToAnotherProcessSurviveAnRnrInTheMiddle() throws Exception {
        start();
        for (int i = 0; i < 12; i++) {
            buf.set(ValueLayout.JAVA_LONG, 8L * i, i);
            assertEquals(0, qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                    .sge(0, mr, 8L * i, 8).imm(1000 + i)));
        }
        ShmQp q = (ShmQp) qp;
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (q.rnrUntil == 0) { // this thread drives the INVOKER engine: the refusal is read here
            ctx.progress();
            assertTrue(System.nanoTime() < deadline, "no RNR with 12 messages against 4 receives");
        }
        peerIn.println("post 8");
        assertEquals("posted", line());
        for (int i = 0; i < 12; i++) {
            WorkCompletion s = await();
            assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
            assertEquals(i, s.wrId(), "the SENDs complete in order");
        }
        for (int i = 0; i < 12; i++) {
            peerIn.println("recv");
            assertEquals("SUCCESS 8 " + (1000 + i), line(), "message " + i + " arrives once, in order");
        }
    }

    @Test
    void aKilledTargetMovesTheQpToErrorAndFlushes() throws Exception {
        start();
        assertEquals(WcStatus.SUCCESS, run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mr, 0, 64).remote(raddr, rkey)).status());
        stopPeer();
        // a SEND waits for the stopped target; then the target dies
        assertEquals(0, qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, mr, 0, 8)));
        assertEquals(0, qp.postSend(wr.reset().wrId(3).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mr, 0, 8).remote(raddr, rkey)));
        // the engine watches the peer through a pidfd: it reports the exit (a zombie's too), never a reused pid
        int pidfd = Native.pidfd((int) peer.pid());
        assertTrue(pidfd >= 0, "pidfd_open");
        MemorySegment pfd = arena.allocate(8, 8);
        assertTrue(!Native.exited(pidfd, pfd), "a stopped process has not exited");
        peer.destroyForcibly();
        assertTrue(peer.waitFor(10, java.util.concurrent.TimeUnit.SECONDS));
        assertTrue(Native.exited(pidfd, pfd), "the pidfd reports the exit");
        Native.close(pidfd);
        WorkCompletion first = await();
        assertEquals(2, first.wrId());
        assertTrue(first.status() == WcStatus.WR_FLUSH_ERR || first.status() == WcStatus.RETRY_EXC_ERR, first.toString());
        WorkCompletion second = await();
        assertEquals(3, second.wrId());
        assertEquals(WcStatus.WR_FLUSH_ERR, second.status());
        assertEquals(QpState.ERROR, qp.state());
    }

    /**
     * A peer that dies inside a copy on one of this process's keys leaves its hold in the held word of the QP it was
     * connected to; once its death is seen, that hold holds nothing: deregistering the key does not wait out the
     * drain's 1 s nor count an engine error (before, it did, and again for every later withdrawal of that index).
     * The dead initiator's hold is put in the word by hand, as it would have left it.
     */
    @Test
    void aHoldLeftByAPeerThatDiedEndsWithIt() throws Exception {
        start();
        MemorySegment own = ctx.allocateBuffer(4096, 4096, arena);
        MemoryRegion remote = pd.register(own, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        io.jrdma.engine.core.Context c = (io.jrdma.engine.core.Context) ctx;
        MemorySegment seg = ((ShmTransport) c.engine.transport).ctrl;
        ShmTransport.INT.setVolatile(seg, ((ShmQp) qp).dir + Ctrl.Q_HELD, remote.rkey() >>> 8); // the peer's hold, mid-copy
        peer.destroyForcibly();
        assertTrue(peer.waitFor(10, java.util.concurrent.TimeUnit.SECONDS));
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (qp.state() != QpState.ERROR) { // the death seen (the liveness check, every 20 ms)
            cq.poll(wc);
            assertTrue(System.nanoTime() < deadline, "the peer's death was not seen within 10 s");
            Thread.onSpinWait();
        }
        long errors = c.counters().getOrDefault("engine_errors", 0L);
        long t0 = System.nanoTime();
        remote.close();
        long took = System.nanoTime() - t0;
        assertEquals(errors, c.counters().getOrDefault("engine_errors", 0L), "the withdrawal ran out its drain");
        assertTrue(took < 500_000_000L, "the deregistration took " + took / 1_000_000 + " ms");
    }
}

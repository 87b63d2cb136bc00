package io.jrdma.engine.roce;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two processes over UDP on loopback: this JVM (INVOKER mode) against {@link UdpPeerMain} in a
 * child JVM (dedicated engine thread), connected by the connection manager. Every opcode moves
 * 0 B, 1 B, MTU−1, MTU, MTU+1 and 16 MiB, and the data is checked (written data is read back).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class UdpTwoProcessTest {
    static final int MTU = 4096;
    static final int[] SIZES = {0, 1, MTU - 1, MTU, MTU + 1, 16 << 20};
    static Process peer;
    static Arena arena;
    static DeviceContext ctx;
    static ProtectionDomain pd;
    static CompletionQueue cq;
    static QueuePair qp;
    static MemoryRegion mr;
    static MemorySegment buf;
    static ConnectionManager.Connection conn;
    static long remoteAddr;
    static int rkey;

    @BeforeAll
    static void start() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // no counters file: a peer the test kills would leave it behind (the test reads only its own counters)
        peer = new ProcessBuilder(java, "-Xmx512m", "-Djrdma.stat=false", "-cp", System.getProperty("java.class.path"),
                UdpPeerMain.class.getName(), "127.0.0.1").redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader r = new BufferedReader(new InputStreamReader(peer.getInputStream()));
        String line = r.readLine();
        assertTrue(line != null && line.startsWith("PORT "), "peer said: " + line);
        int port = Integer.parseInt(line.split(" ")[1]);
        arena = Arena.ofShared();
        buf = arena.allocate(40L << 20, 4096);
        var dev = Rdma.resolve(InetAddress.getByName("127.0.0.1"), Transport.ROCE_V2).device();
        ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        pd = ctx.allocPd();
        cq = ctx.createCq(1024);
        qp = pd.createQp(QpInitAttr.rc(cq).withDepth(128, 16));
        mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        conn = ctx.connectionManager().connect(qp, new InetSocketAddress("127.0.0.1", port), ConnParam.defaults(),
                Duration.ofSeconds(20));
        ByteBuffer pdata = ByteBuffer.wrap(conn.peerParam().privateData());
        remoteAddr = pdata.getLong();
        rkey = pdata.getInt();
        assertEquals(io.jrdma.verbs.QpState.RTS, qp.state());
        assertEquals(MTU, qp.query().pathMtu().bytes());
    }

    @AfterAll
    static void stop() throws Exception {
        if (conn != null) {
            conn.close();
        }
        if (qp != null) {
            qp.close();
            mr.close();
            cq.close();
            pd.close();
            ctx.close();
        }
        if (arena != null) {
            arena.close();
        }
        if (peer != null) {
            peer.getOutputStream().close();
            if (!peer.waitFor(10, TimeUnit.SECONDS)) {
                peer.destroyForcibly();
            }
        }
    }

    private static WorkCompletion run(SendWorkRequest wr) {
        assertEquals(0, qp.postSend(wr.flags(SendFlags.SIGNALED)));
        WorkCompletion wc = new WorkCompletion();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "no completion for " + wr.opcode() + " of " + wr.totalLength()
                    + " bytes; counters " + ctx.counters());
        }
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        return wc;
    }

    private static void fill(long off, int len, int seed) {
        for (int i = 0; i < len; i++) {
            buf.set(ValueLayout.JAVA_BYTE, off + i, (byte) (seed + i * 13 + (i >>> 11)));
        }
    }

    private static void readBackAndCompare(long remoteOff, long localOff, int len) {
        buf.asSlice(20L << 20, Math.max(len, 1)).fill((byte) 0);
        run(new SendWorkRequest().wrId(99).opcode(WrOpcode.RDMA_READ).sge(0, mr, 20L << 20, len)
                .remote(remoteAddr + remoteOff, rkey));
        assertEquals(-1, buf.asSlice(localOff, len).mismatch(buf.asSlice(20L << 20, len)), "data read back differs");
    }

    @Test
    void write() {
        for (int size : SIZES) {
            fill(0, size, size);
            run(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sge(0, mr, 0, size)
                    .remote(remoteAddr + (40L << 20), rkey));
            readBackAndCompare(40L << 20, 0, size);
        }
    }

    @Test
    void writeWithImm() {
        for (int size : SIZES) {
            fill(0, size, size + 1);
            run(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).sge(0, mr, 0, size).imm(size)
                    .remote(remoteAddr + (40L << 20), rkey));
            readBackAndCompare(40L << 20, 0, size);
        }
    }

    @Test
    void read() {
        for (int size : SIZES) {
            WorkCompletion wc = run(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).sge(0, mr, 0, size)
                    .remote(remoteAddr + UdpPeerMain.PATTERN_OFFSET, rkey));
            assertEquals(size, wc.byteLen());
            for (int i = 0; i < size; i++) {
                if (buf.get(ValueLayout.JAVA_BYTE, i) != UdpPeerMain.pattern(i)) {
                    throw new AssertionError("READ of " + size + " differs at " + i);
                }
            }
        }
    }

    @Test
    void send() {
        for (WrOpcode op : new WrOpcode[] {WrOpcode.SEND, WrOpcode.SEND_WITH_IMM}) {
            for (int size : SIZES) {
                fill(0, size, size + 7);
                // the peer's receives all point at offset 0 of its region; its re-post follows each completion
                run(new SendWorkRequest().wrId(3).opcode(op).sge(0, mr, 0, size).imm(5));
                readBackAndCompare(0, 0, size);
            }
        }
    }

    @Test
    void atomics() {
        buf.asSlice(0, 64).fill((byte) 0);
        run(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sge(0, mr, 0, 8).remote(remoteAddr + (60L << 20), rkey));
        run(new SendWorkRequest().wrId(4).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sge(0, mr, 8, 8)
                .remote(remoteAddr + (60L << 20), rkey).atomic(41, 0));
        run(new SendWorkRequest().wrId(5).opcode(WrOpcode.ATOMIC_CMP_AND_SWP).sge(0, mr, 16, 8)
                .remote(remoteAddr + (60L << 20), rkey).atomic(41, 1234));
        assertEquals(0L, buf.get(ValueLayout.JAVA_LONG, 8));
        assertEquals(41L, buf.get(ValueLayout.JAVA_LONG, 16));
        run(new SendWorkRequest().wrId(6).opcode(WrOpcode.RDMA_READ).sge(0, mr, 24, 8).remote(remoteAddr + (60L << 20), rkey));
        assertEquals(1234L, buf.get(ValueLayout.JAVA_LONG, 24));
    }
}

package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
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
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.MpaRequestReply;
import io.jrdma.wire.iwarp.Rdmap;
import io.jrdma.wire.iwarp.ReadRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fuzzing soft-iWARP from a raw TCP peer: MPA requests (random, truncated, mutated valid ones) at the listener,
 * then FPDUs on accepted connections (WRITE, SEND, READ Request, any opcode, with the live STag, an lkey, another
 * PD's STag or random ones, tagged offsets across and outside the region, random lengths; valid framing and CRC,
 * or mutated). Bounded: {@code -Djrdma.fuzz.mpa=N}, {@code -Djrdma.fuzz.fpduConnections=N}. Nothing may crash the
 * engine (engine_errors 0), touch a byte outside the target region (guards and another PD's region), or stop the
 * listener from accepting a real client afterwards; every bad FPDU ends in a counted drop or TERMINATE.
 */
@Timeout(value = 3, unit = TimeUnit.HOURS) // bounded inside; the scripts run 10^6 inputs
class IwarpFuzzTest {
    private static final int REGION = 64 * 1024;
    private static final int GUARD = 16 * 1024;
    private static final byte SENTINEL = (byte) 0x5A;

    @Test
    void mpaRequestsAndFpdusFromAHostilePeer() throws Exception {
        int mpaInputs = Integer.getInteger("jrdma.fuzz.mpa", 600);
        int fpduConnections = Integer.getInteger("jrdma.fuzz.fpduConnections", 300);
        SplittableRandom r = new SplittableRandom(Long.getLong("jrdma.fuzz.seed", 16));
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (Arena arena = Arena.ofShared()) {
            Context ctx = (Context) SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                    .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            ProtectionDomain pd = ctx.allocPd();
            ProtectionDomain otherPd = ctx.allocPd();
            MemorySegment area = arena.allocate(3L * GUARD + 2L * REGION, 4096);
            area.fill(SENTINEL);
            MemorySegment target = area.asSlice(GUARD, REGION);
            MemorySegment foreign = area.asSlice(2L * GUARD + REGION, REGION);
            int all = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
            MemoryRegion mr = pd.register(target, all);
            MemoryRegion other = otherPd.register(foreign, all);
            CompletionQueue cq = ctx.createCq(4096);
            ConnectionManager.Listener listener = ctx.connectionManager().listen(new InetSocketAddress(lo, 0));
            long t0 = System.nanoTime();
            // 1. MPA requests: each on a connection of its own, then closed; a request that still parses is rejected
            byte[] valid = frame(MpaRequestReply.enhanced(false, true, false, 4, 4, false, false, false, false,
                    new byte[0]));
            int parsedAndRejected = 0;
            // no hang: a deadline of 60 s plus 50 ms an input and connection (a loaded host takes about 10 ms)
            long runDeadline = System.nanoTime() + 60_000_000_000L + (mpaInputs + 20L * fpduConnections) * 50_000_000L;
            for (int i = 0; i < mpaInputs; i++) {
                assertTrue(System.nanoTime() < runDeadline, "MPA fuzzing stopped making progress at input " + i);
                byte[] in = switch (i % 3) {
                    case 0 -> random(r, r.nextInt(0, 120));
                    case 1 -> java.util.Arrays.copyOf(valid, r.nextInt(0, valid.length));
                    default -> mutate(r, valid.clone());
                };
                try (SocketChannel ch = SocketChannel.open(listener.address())) {
                    ch.write(ByteBuffer.wrap(in));
                    ch.shutdownOutput();
                    ConnectionManager.ConnectRequest req = listener.poll(Duration.ofMillis(i % 3 == 2 ? 20 : 0));
                    if (req != null) {
                        req.reject(new byte[0]);
                        parsedAndRejected++;
                    }
                }
            }
            long mpaMs = (System.nanoTime() - t0) / 1_000_000;
            // 2. FPDUs on accepted connections
            long fpdus = 0;
            long t1 = System.nanoTime();
            for (int c = 0; c < fpduConnections; c++) {
                assertTrue(System.nanoTime() < runDeadline, "FPDU fuzzing stopped making progress at connection " + c);
                QueuePair qp = pd.createQp(QpInitAttr.rc(cq).withDepth(64, 64));
                qp.postRecv(new RecvWorkRequest().wrId(c).sge(0, mr, 0, 256));
                boolean crc = r.nextBoolean();
                try (SocketChannel peer = SocketChannel.open(listener.address())) {
                    RawMpa.write(peer, MpaRequestReply.enhanced(false, crc, false, 4, 4, false, false, false, false,
                            new byte[0]));
                    ConnectionManager.ConnectRequest req = pollUntil(listener, ctx);
                    ConnectionManager.Connection conn = req.accept(qp, ConnParam.defaults(), Duration.ofSeconds(10));
                    MpaRequestReply reply = RawMpa.read(peer, true);
                    assertEquals(crc, reply.crc());
                    peer.configureBlocking(false);
                    MemorySegment f = Arena.ofAuto().allocate(2048);
                    int msn = 1;
                    for (int k = 0; k < 20; k++) {
                        int len = fpdu(r, f, crc, mr, other, msn);
                        if (r.nextInt(10) == 0) {
                            f.set(ValueLayout.JAVA_BYTE, r.nextInt(len), (byte) r.nextInt(256)); // after the seal
                        }
                        ByteBuffer b = f.asSlice(0, len).asByteBuffer();
                        boolean closed = false;
                        long deadline = System.nanoTime() + 5_000_000_000L;
                        try {
                            while (b.hasRemaining() && System.nanoTime() < deadline) {
                                peer.write(b);
                                ctx.progress();
                            }
                        } catch (IOException e) {
                            closed = true; // the jrdma side terminated and closed
                        }
                        fpdus++;
                        msn++;
                        for (int i = 0; i < 4; i++) {
                            ctx.progress();
                        }
                        if (closed || qp.state() == io.jrdma.verbs.QpState.ERROR) {
                            break;
                        }
                    }
                    conn.close();
                }
                for (int i = 0; i < 8; i++) {
                    ctx.progress();
                }
                io.jrdma.verbs.WorkCompletion[] wcs = {new io.jrdma.verbs.WorkCompletion()};
                while (cq.poll(wcs) > 0) {
                    // flushed receives and failed ones: drained
                }
                qp.close();
            }
            long fpduMs = (System.nanoTime() - t1) / 1_000_000;
            // the guards and the other PD's region are untouched
            for (long g : new long[] {0, GUARD + REGION, 2L * GUARD + 2L * REGION}) {
                for (long i = 0; i < GUARD; i++) {
                    assertEquals(SENTINEL, area.get(ValueLayout.JAVA_BYTE, g + i), "guard byte " + (g + i));
                }
            }
            for (long i = 0; i < REGION; i++) {
                assertEquals(SENTINEL, foreign.get(ValueLayout.JAVA_BYTE, i), "other PD's region byte " + i);
            }
            assertEquals(0, ctx.counter(Counter.ENGINE_ERRORS), "engine_errors");
            // a real (raw, siw-like) client is still accepted and its WRITE lands
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq));
            try (SocketChannel peer = SocketChannel.open(listener.address())) {
                RawMpa.write(peer, MpaRequestReply.enhanced(false, true, false, 4, 4, false, false, false, false,
                        new byte[0]));
                ConnectionManager.Connection conn = pollUntil(listener, ctx).accept(qp, ConnParam.defaults(),
                        Duration.ofSeconds(10));
                RawMpa.read(peer, true);
                MemorySegment f = Arena.ofAuto().allocate(256);
                Ddp.writeTagged(f, Fpdu.ULPDU_OFFSET, true, Rdmap.controlByte(Rdmap.WRITE), mr.rkey(),
                        mr.address() + 1000);
                for (int i = 0; i < 64; i++) {
                    f.set(ValueLayout.JAVA_BYTE, Fpdu.ULPDU_OFFSET + Ddp.TAGGED_HEADER_LENGTH + i, (byte) (i + 1));
                }
                Fpdu.writeHeader(f, 0, Ddp.TAGGED_HEADER_LENGTH + 64);
                int len = Fpdu.seal(f, 0, Ddp.TAGGED_HEADER_LENGTH + 64, true);
                ByteBuffer b = f.asSlice(0, len).asByteBuffer();
                while (b.hasRemaining()) {
                    peer.write(b);
                }
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (target.get(ValueLayout.JAVA_BYTE, 1000 + 63) != 64) {
                    ctx.progress();
                    assertTrue(System.nanoTime() < deadline, "the WRITE after the fuzzing did not land");
                }
                conn.close();
            }
            qp.close();
            System.out.println("iwarp fuzz: " + mpaInputs + " MPA requests in " + mpaMs + " ms (" + parsedAndRejected
                    + " still parsed, rejected), " + fpdus + " FPDUs on " + fpduConnections + " connections in " + fpduMs
                    + " ms; counters " + nonZero(ctx));
            listener.close();
            cq.close();
            other.close();
            mr.close();
            otherPd.close();
            pd.close();
            ctx.close();
        }
    }

    private static String nonZero(Context ctx) {
        StringBuilder sb = new StringBuilder();
        for (Counter c : Counter.values()) {
            long v = ctx.counter(c);
            if (v != 0) {
                sb.append(c.counterName()).append('=').append(v).append(' ');
            }
        }
        return sb.toString().trim();
    }

    private static ConnectionManager.ConnectRequest pollUntil(ConnectionManager.Listener l, Context ctx) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            ConnectionManager.ConnectRequest req = l.poll(Duration.ofMillis(5));
            if (req != null) {
                return req;
            }
            ctx.progress();
            assertTrue(System.nanoTime() < deadline, "no connect request");
        }
    }

    private static byte[] frame(MpaRequestReply f) {
        ByteBuffer b = ByteBuffer.allocate(f.length());
        f.encode(MemorySegment.ofBuffer(b), 0);
        return b.array();
    }

    private static byte[] random(SplittableRandom r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    private static byte[] mutate(SplittableRandom r, byte[] b) {
        int n = 1 + r.nextInt(3);
        for (int i = 0; i < n; i++) {
            b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8));
        }
        return b;
    }

    /** One hostile FPDU in {@code f}, framed and sealed; @return its length */
    private static int fpdu(SplittableRandom r, MemorySegment f, boolean crc, MemoryRegion mr, MemoryRegion other,
                            int msn) {
        f.fill((byte) 0);
        int ddp = Fpdu.ULPDU_OFFSET;
        int stag = switch (r.nextInt(5)) {
            case 0, 1 -> mr.rkey();
            case 2 -> mr.lkey();
            case 3 -> other.rkey();
            default -> r.nextInt();
        };
        long to = switch (r.nextInt(6)) {
            case 0 -> mr.address();
            case 1 -> mr.address() + r.nextInt(0, REGION);
            case 2 -> mr.address() + REGION - r.nextInt(0, 64);
            case 3 -> mr.address() - r.nextInt(1, GUARD);
            case 4 -> -r.nextInt(1, 4096);
            default -> r.nextLong();
        };
        int payload = r.nextInt(4) == 0 ? r.nextInt(0, 1500) : r.nextInt(0, 128);
        int ulpdu;
        switch (r.nextInt(5)) {
            case 0, 1 -> {
                Ddp.writeTagged(f, ddp, r.nextInt(4) != 0, Rdmap.controlByte(Rdmap.WRITE), stag, to);
                ulpdu = Ddp.TAGGED_HEADER_LENGTH + payload;
            }
            case 2 -> {
                Ddp.writeUntagged(f, ddp, r.nextBoolean(), Rdmap.controlByte(Rdmap.SEND), 0, Rdmap.QN_SEND,
                        r.nextInt(4) == 0 ? r.nextInt() : msn, r.nextInt(4) == 0 ? r.nextInt(0, 4096) : 0);
                ulpdu = Ddp.UNTAGGED_HEADER_LENGTH + payload;
            }
            case 3 -> {
                Ddp.writeUntagged(f, ddp, true, Rdmap.controlByte(Rdmap.READ_REQUEST), 0, Rdmap.QN_READ_REQUEST,
                        r.nextInt(4) == 0 ? r.nextInt() : msn, 0);
                ReadRequest.write(f, ddp + Ddp.UNTAGGED_HEADER_LENGTH, r.nextInt(), r.nextLong(),
                        r.nextInt(4) == 0 ? r.nextInt() : r.nextInt(0, 2 * REGION), stag, to);
                ulpdu = Ddp.UNTAGGED_HEADER_LENGTH + 28;
                payload = 0;
            }
            default -> {
                // any header bytes at all (any opcode, version, queue number)
                ulpdu = Ddp.UNTAGGED_HEADER_LENGTH + payload;
                for (int i = 0; i < Ddp.TAGGED_HEADER_LENGTH; i++) {
                    f.set(ValueLayout.JAVA_BYTE, ddp + i, (byte) r.nextInt(256));
                }
            }
        }
        ulpdu = Math.min(ulpdu, 1800);
        for (int i = ulpdu - payload; i < ulpdu; i++) {
            f.set(ValueLayout.JAVA_BYTE, ddp + i, (byte) r.nextInt(256));
        }
        Fpdu.writeHeader(f, 0, ulpdu);
        return Fpdu.seal(f, 0, ulpdu, crc);
    }
}

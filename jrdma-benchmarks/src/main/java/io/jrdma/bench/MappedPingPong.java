package io.jrdma.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The shared-memory floor: two processes map one file and ping-pong through it, each side one
 * thread spinning on a flag word read with acquire and written with release ({@link VarHandle}
 * {@code getAcquire}/{@code setRelease} on the mapped {@link MemorySegment}). Nothing else runs: no
 * system call, no library, so this is what any shared-memory transport in Java pays at least for
 * "the other process sees my 8 bytes".
 *
 * <p>A message of {@code size} bytes is written as perftest's write_lat writes it: the bytes before
 * the last 8 with plain stores, then the last 8-byte word (the sequence number, the flag) with a
 * release store; the reader acquires the flag in a loop with no PAUSE ({@link Thread#onSpinWait}), as
 * the waits it is compared with, and checks the message's first word (for 8 B the flag itself); {@code pause=true}
 * (both sides) waits with a PAUSE per turn instead, to measure what the wait's shape does on a host. The ping and the pong areas lie 128 bytes apart at least (no shared cache line, nor an
 * adjacent-line prefetch pair).
 *
 * <pre>
 * server: MappedPingPong role=server port=P size=S iters=N warmup=W [file=PATH] [timeout=30] [pause=false] [blocks=0]
 * client: MappedPingPong role=client port=P size=S iters=N warmup=W [file=PATH] [timeout=30] [pause=false] [blocks=0]
 * </pre>
 * The file is {@code /dev/shm/jrdma-bench-mapped-P} unless {@code file=} says otherwise; the server
 * creates it (replacing a stale one) and deletes it when it ends. The client prints
 * {@code RESULT mapped_pingpong size=S ... median_us=...}: half the round trip, as perftest. Samples
 * are the differences of consecutive timestamps, one {@link System#nanoTime} per round trip, read right
 * after the ping's store (so not between the pong's arrival and the next ping); the client makes
 * {@code warmup + iters + 1} round trips, the first timestamp being the extra one's. With {@code blocks=N} the
 * client also prints the medians of N consecutive blocks of the samples ({@link Blocks}).
 */
public final class MappedPingPong {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long MAGIC = 0x6a72646d61736d31L; // "jrdmasm1"
    private static final long READY = 0;   // server: MAGIC once the file is zeroed and mapped
    private static final long HELLO = 64;  // client: 1 once it mapped the file
    private static final long PING = 256;  // the client's message
    private static final int SPINS = 1 << 16;
    /** pause=true: a PAUSE per turn of the message wait */
    private static boolean pause;

    private MappedPingPong() {
    }

    public static void main(String[] argv) throws IOException {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        int port = a.integer("port", 19030);
        int size = a.integer("size", 8);
        int iters = a.integer("iters", 1_000_000);
        int warmup = a.integer("warmup", 200_000);
        long timeoutNanos = a.num("timeout", 30) * 1_000_000_000L;
        pause = a.bool("pause", false);
        int blocks = a.integer("blocks", 0);
        if (blocks < 0 || blocks > iters) {
            Result.fail("blocks must be 0 to iters (got " + blocks + ")");
        }
        if (size < 8 || size % 8 != 0) {
            Result.fail("size must be a multiple of 8 bytes, at least 8 (got " + size + ")");
        }
        if (!role.equals("server") && !role.equals("client")) {
            Result.fail("role must be server or client (got " + role + ")");
        }
        Path file = Path.of(a.str("file", SharedFile.inShm("jrdma-bench-mapped-" + port).toString()));
        long area = (size + 127L) / 128 * 128 + 128; // the message rounded up to 128 B, plus a 128 B gap
        long pong = PING + area;
        long length = pong + area;
        boolean server = role.equals("server");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment map;
            if (server) {
                map = SharedFile.create(file, length, arena);
                try {
                    LONG.setRelease(map, READY, MAGIC);
                    System.out.println("LISTENING mapped_pingpong port=" + port + " file=" + file);
                    System.out.flush();
                    await(map, HELLO, 1, timeoutNanos, "no client mapped " + file + " within the timeout");
                    serve(map, pong, size, (long) warmup + iters + 1, timeoutNanos);
                } finally {
                    Files.deleteIfExists(file);
                }
            } else {
                map = SharedFile.open(file, length, arena, "role=server port=" + port, "is the server running with the same size?");
                await(map, READY, MAGIC, timeoutNanos, "the server did not initialise " + file);
                LONG.setRelease(map, HELLO, 1L);
                long[] rtt = ping(map, pong, size, iters, warmup, timeoutNanos);
                Blocks.print("mapped_pingpong", rtt, iters, blocks, 2.0);
                Result.latency("mapped_pingpong", size, rtt, iters, 2.0);
            }
        }
    }

    /** Spins until the word at {@code off} reads {@code want} (acquire), or fails after the timeout. */
    private static void await(MemorySegment map, long off, long want, long timeoutNanos, String why) {
        long deadline = System.nanoTime() + timeoutNanos;
        int spins = 0;
        while ((long) LONG.getAcquire(map, off) != want) {
            if (++spins == SPINS) {
                spins = 0;
                if (System.nanoTime() - deadline > 0) {
                    Result.fail(why);
                }
            }
            Thread.onSpinWait();
        }
    }

    /** Writes message {@code seq} at {@code off}: the first word and the payload plainly, the last word (the flag) with release. */
    private static void put(MemorySegment map, long off, MemorySegment payload, int size, long seq) {
        if (size > 8) {
            MemorySegment.copy(payload, 0, map, off, size - 8);
            map.set(ValueLayout.JAVA_LONG, off, seq);
        }
        LONG.setRelease(map, off + size - 8, seq);
    }

    /** Spins until message {@code seq} is at {@code off}; checks its first word. */
    private static void take(MemorySegment map, long off, int size, long seq, long timeoutNanos) {
        long flag = off + size - 8;
        int spins = 0;
        long deadline = 0;
        long v;
        while ((v = (long) LONG.getAcquire(map, flag)) != seq) {
            if (v != seq - 1) {
                Result.fail("mapped_pingpong: expected message " + seq + " or its predecessor, read " + v);
            }
            if (++spins == SPINS) {
                spins = 0;
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + timeoutNanos;
                } else if (now - deadline > 0) {
                    Result.fail("mapped_pingpong: message " + seq + " did not arrive within the timeout");
                }
            }
            // no Thread.onSpinWait (PAUSE) unless pause=true: neither jrdma perf's write_lat nor ucx_perftest's put_lat
            // pauses in its wait (what a PAUSE does differs by host: docs/shm-performance.md, "The initiator's own hold, and the wait's PAUSE")
            if (pause) {
                Thread.onSpinWait();
            }
        }
        if (size > 8 && map.get(ValueLayout.JAVA_LONG, off) != seq) {
            Result.fail("mapped_pingpong: message " + seq + "'s flag arrived before its first word");
        }
    }

    private static long[] ping(MemorySegment map, long pong, int size, int iters, int warmup, long timeoutNanos) {
        MemorySegment payload = MemorySegment.ofArray(new byte[size]);
        long seq = 0;
        for (int i = 0; i < warmup; i++) {
            put(map, PING, payload, size, ++seq);
            take(map, pong, size, seq, timeoutNanos);
        }
        // each timestamp right after a ping's store, not after the pong: consecutive differences are the same
        // round trips, and the clock read (~27 ns on this project's host) overlaps the peer's turn instead of
        // lying between the pong's arrival and the next ping, as jrdma perf's and perftest's loops read theirs
        // one more round trip than warmup + iters: its timestamp starts the first sample
        put(map, PING, payload, size, ++seq);
        long t = System.nanoTime();
        long[] rtt = new long[iters];
        for (int i = 0; i < iters; i++) {
            take(map, pong, size, seq, timeoutNanos);
            put(map, PING, payload, size, ++seq);
            long now = System.nanoTime();
            rtt[i] = now - t;
            t = now;
        }
        take(map, pong, size, seq, timeoutNanos);
        return rtt;
    }

    private static void serve(MemorySegment map, long pong, int size, long total, long timeoutNanos) {
        MemorySegment payload = MemorySegment.ofArray(new byte[size]);
        for (long seq = 1; seq <= total; seq++) {
            take(map, PING, size, seq, timeoutNanos);
            put(map, pong, payload, size, seq);
        }
    }
}

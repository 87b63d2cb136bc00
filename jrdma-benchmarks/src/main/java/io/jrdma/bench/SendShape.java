package io.jrdma.bench;

import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What an 8 B SEND/RECV ping-pong costs between two processes in the shape of shm0's two-sided path, with no
 * provider around it: each process has an inbound ring in one mapped file, laid out as shm0's (16 slots of a 64-byte
 * header line and 8 KiB of payload; the sequence and the destination QPN in the line's first word, stored last with a
 * release store; up to 40 bytes of payload in the header's own line), and a result line the receiver writes. The
 * rest is each process's own, in plain Java, in one class: the verbs' steps written as straight-line code, to tell
 * the cost of the steps from the cost of the engine that runs them ({@code jrdma perf send_lat -d shm0}). Three
 * shapes ({@code shape=}):
 * <ul>
 * <li>{@code bare}: the ring alone. The receiver finds the slot, copies the 8 bytes out and answers with a slot of its
 * own: what a message costs in this layout with no verbs step at all: the shape of Aeron's data path
 * (without Aeron's agents' duty cycles).</li>
 * <li>{@code verbs}: what a SEND/RECV needs, in the order shm0 does it. The receiver takes the head of its receive queue,
 * checks the receive's local key (PD, access, bounds), places the 8 bytes, pushes the completion into its CQ ring,
 * stores the message's result for the sender (RC: the SEND completes when the receiver took it) and reads the
 * completion back into the caller's {@link WorkCompletion}; the sender checks the request, the source's key and the
 * ring's room, keeps a send-queue entry, writes the slot, and retires the entry when the result says DONE; each
 * side posts its used receive again after its reply and then waits for its SEND's completion, as {@code send_lat}
 * does with perftest's latency defaults (a send queue of one, so every SEND signaled: {@code cqmod=1}; before
 * 2026-11-28 this model signaled one in a hundred and waited for none; {@code cqmod=100} signals one in a hundred and
 * waits for those).</li>
 * <li>{@code staged}: the same steps, moved off the path between a message's arrival and the reply where they can be:
 * the wait resolves the head receive ahead (its key checked, its target computed), the completion goes straight into
 * the caller's {@code WorkCompletion} when the CQ is empty, and the SEND's retire runs in empty polls (and in a
 * post that finds the send queue full, as a provider's post runs its service). The result is stored at the
 * placement, as {@code verbs} stores it: {@code send_lat}'s peer waits for its SEND's completion before its next
 * receive, so the result is on the path. {@code result=late} stores it after the reply's slot instead (or by the
 * next empty poll), which gains only where the peer does not wait for it (as the model before 2026-11-28 did not;
 * {@code cqmod=100} waits for one SEND in a hundred).</li>
 * </ul>
 * Every shape checks what arrives (each slot's QPN and length, and the payload: each side's message carries its
 * iteration number, which the other side compares with its own), and the verbs shapes fail on what a provider would
 * complete with an error (no receive posted, a key that does not cover the receive): the figures come from messages
 * that were checked, not assumed. The keys are looked up in a table of regions indexed by the key's upper bits and
 * compared with the entry's key, PD, access and bounds, all read from the entry (nothing the compiler can fold).
 * {@code pause=true} (both sides) waits with a PAUSE ({@link Thread#onSpinWait}) after each empty poll, as
 * {@code jrdma perf --pause}; {@code bench/compare.sh} gives both the wait the round's floor ran faster with.
 *
 * <pre>
 * server: SendShape role=server port=P shape=bare|verbs|staged [iters=200000] [warmup=50000] [timeout=30] [pause=false] [delay=0] [cqmod=1] [result=early] [file=PATH]
 * client: SendShape role=client port=P shape=bare|verbs|staged [iters=200000] [warmup=50000] [timeout=30] [pause=false] [delay=0] [cqmod=1] [result=early] [blocks=0] [file=PATH]
 * </pre>
 * The file is {@code /dev/shm/jrdma-bench-sendshape-P} unless {@code file=} says otherwise; the server creates it (replacing a stale one) and deletes it
 * when it ends. The client prints {@code RESULT send_shape_<shape> size=8 ... median_us=...}: half the round trip,
 * one clock read per round trip right after the post, as {@code jrdma perf send_lat} reads it; each side then prints
 * {@code STATS send_shape role=R post_retires=N send_completions=C send_retired=S}: the posts that found the send
 * queue full and retired it themselves, the SEND completions the side waited for, and the signaled SENDs its peer's
 * results retired (the same count when every wait waited for its own).
 * <p>Two settings for telling where a turn's time goes (docs/shm-performance.md, "The 8 B SEND ping-pong, eighth pass"):
 * {@code blocks=N} (client) also prints the medians of N consecutive blocks of the samples ({@link Blocks}), and
 * {@code delay=D} (both sides) adds D dependent multiply-adds of CPU work between a message's completion and the
 * reply's post (on the client, before its next SEND), a known amount of work on the path from arrival to reply.
 */
public final class SendShape {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int SLOTS = 16;
    private static final int CHUNK = 8192;
    private static final long SLOT = 64 + CHUNK;
    private static final long RING = SLOTS * SLOT;
    private static final int INLINE = 40;
    // a slot's header line
    private static final long S_SEQ = 0;       // sequence (low int) and destination QPN (high int), stored last
    private static final long S_FLAGS_LEN = 8; // flags and opcode (low int), length (high int)
    private static final long S_IMM_MSG = 16;  // immediate data (low int), message number (high int)
    private static final long S_INLINE = 24;
    // a result line: slots read (every half ring), then the last message's result (number low, status high)
    private static final long R_READ = 0;
    private static final long R_RESULT = 8;
    private static final int DONE = 2;
    private static final int F_FIRST_LAST = 3;
    private static final long MAGIC = 0x6a72646d61737368L;
    private static final long READY = 2 * RING;       // server: MAGIC once mapped
    private static final long HELLO = 2 * RING + 64;  // client: 1 once mapped
    private static final long RESULTS = 2 * RING + 256;
    private static final long LENGTH = RESULTS + 512;
    private static final int LOCAL_KEY = 0x1A5;
    private static final int LOCAL_WRITE = 1;
    private static final WcOpcode[] OPCODES = WcOpcode.values();
    private static final WcStatus[] STATUSES = WcStatus.values();

    private enum Shape { BARE, VERBS, STAGED }

    private final Shape shape;
    private final int qpn;
    private final int destQpn;
    private final MemorySegment in;      // my inbound ring
    private final MemorySegment out;     // the peer's inbound ring
    private final MemorySegment result;  // my result line (I write it)
    private final MemorySegment peerResult;
    private final MemorySegment buf;     // my registered buffer: the source at 0, receives at 64
    private final long bufAddr;
    /** A registered region as a key table holds it. */
    private static final class Region {
        int key;
        long pd;
        int access;
        long addr;
        long len;
        MemorySegment segment;
    }

    /** the key table: regions indexed by key >>> 8 (one registered, the buffer) */
    private final Region[] keys = new Region[256];
    private long qpPd;
    private int lkey;
    private long postRetires;
    private long ringRead;
    private long ringReadPublished;
    private long ringWrite;
    private long ringReadSeen;
    private final long[] rq = new long[4 * 64]; // wr id, address, length, key
    private long rqProducer;
    private long rqConsumer;
    private final long[] sq = new long[2 * 64]; // wr id, message number and signaled (1 << 32)
    private long sqProducer;
    private long sqConsumer;
    private final long[] cq = new long[4 * 256];
    private long cqProducer;
    private long cqConsumer;
    private int msg;
    private long pendingResult = -1;
    // staged: the head receive, resolved ahead
    private boolean armed;
    private long armedWrId;
    private MemorySegment armedSegment;
    private long armedOffset;
    private int armedCapacity;
    private final WorkCompletion wc = new WorkCompletion();
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final long timeoutNanos;
    private final boolean pause;
    /** delay=D: dependent multiply-adds between a message's completion and the reply */
    private int delay;
    /** cqmod=N: one SEND in N signaled, and its completion awaited after the post (send_lat's defaults: every one) */
    private int cqMod = 1;
    /** staged, result=early (the default): the result stored at the placement; result=late: after the reply's slot */
    private boolean lateResult;
    /** signaled SENDs retired: the send CQ's entries (its own CQ, as send_lat's), of which {@link #sendReaped} polled */
    private long sendCompleted;
    private long sendReaped;
    private long sendCqWrId;
    /** delay's result, kept so that the compiler cannot drop the work */
    private long delaySink;

    private SendShape(Shape shape, boolean server, MemorySegment map, Arena arena, long timeoutNanos, boolean pause) {
        this.shape = shape;
        this.qpn = server ? 0x11 : 0x22;
        this.destQpn = server ? 0x22 : 0x11;
        this.in = map.asSlice(server ? 0 : RING, RING);
        this.out = map.asSlice(server ? RING : 0, RING);
        this.result = map.asSlice(RESULTS + (server ? 0 : 128), 128);
        this.peerResult = map.asSlice(RESULTS + (server ? 128 : 0), 128);
        this.buf = arena.allocate(4096, 64);
        this.bufAddr = buf.address();
        Region r = new Region();
        r.key = LOCAL_KEY;
        r.pd = 7;
        r.access = LOCAL_WRITE;
        r.addr = bufAddr;
        r.len = buf.byteSize();
        r.segment = buf;
        keys[(LOCAL_KEY >>> 8) & 255] = r;
        this.qpPd = 7;
        this.lkey = LOCAL_KEY;
        this.timeoutNanos = timeoutNanos;
        this.pause = pause;
    }

    public static void main(String[] argv) throws IOException {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        int port = a.integer("port", 19040);
        int iters = a.integer("iters", 200_000);
        int warmup = a.integer("warmup", 50_000);
        long timeoutNanos = a.num("timeout", 30) * 1_000_000_000L;
        boolean pause = a.bool("pause", false);
        int delay = a.integer("delay", 0);
        int blocks = a.integer("blocks", 0);
        int cqMod = a.integer("cqmod", 1);
        String resultAt = a.str("result", "early");
        if (!resultAt.equals("late") && !resultAt.equals("early")) {
            Result.fail("result must be late or early (got " + resultAt + ")");
        }
        if (delay < 0 || blocks < 0 || blocks > iters || cqMod < 1) {
            Result.fail("delay must be 0 or more, blocks 0 to iters, cqmod 1 or more (got delay=" + delay + " blocks="
                    + blocks + " cqmod=" + cqMod + ")");
        }
        Shape shape;
        try {
            shape = Shape.valueOf(a.str("shape", "verbs").toUpperCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            Result.fail("shape must be bare, verbs or staged (got " + a.str("shape", "") + ")");
            return;
        }
        if (!role.equals("server") && !role.equals("client")) {
            Result.fail("role must be server or client (got " + role + ")");
        }
        Path file = Path.of(a.str("file", SharedFile.inShm("jrdma-bench-sendshape-" + port).toString()));
        boolean server = role.equals("server");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment map;
            if (server) {
                map = SharedFile.create(file, LENGTH, arena);
                SendShape s = new SendShape(shape, true, map, arena, timeoutNanos, pause);
                s.set(delay, cqMod, resultAt.equals("late"));
                try {
                    LONG.setRelease(map, READY, MAGIC);
                    System.out.println("LISTENING send_shape port=" + port + " file=" + file);
                    System.out.flush();
                    await(map, HELLO, 1, timeoutNanos, "no client mapped " + file + " within the timeout");
                    s.serve((long) warmup + iters + 1);
                    System.out.println(s.stats("server"));
                } finally {
                    Files.deleteIfExists(file);
                }
            } else {
                map = SharedFile.open(file, LENGTH, arena, "role=server port=" + port, "is the server a SendShape?");
                await(map, READY, MAGIC, timeoutNanos, "the server did not initialise " + file);
                SendShape s = new SendShape(shape, false, map, arena, timeoutNanos, pause);
                s.set(delay, cqMod, resultAt.equals("late"));
                LONG.setRelease(map, HELLO, 1L);
                long[] rtt = s.ping(iters, warmup);
                String name = "send_shape_" + shape.name().toLowerCase(java.util.Locale.ROOT);
                Blocks.print(name, rtt, iters, blocks, 2.0);
                Result.latency(name, 8, rtt, iters, 2.0);
                System.out.println(s.stats("client"));
            }
        }
    }

    /** The settings both roles take: {@code delay=}, {@code cqmod=} and {@code result=late}. */
    private void set(int delay, int cqMod, boolean lateResult) {
        this.delay = delay;
        this.cqMod = cqMod;
        this.lateResult = lateResult;
    }

    /** @return this side's {@code STATS} line (see the class comment) */
    private String stats(String role) {
        return "STATS send_shape role=" + role + " post_retires=" + postRetires + " send_completions=" + sendReaped
                + " send_retired=" + sendCompleted + (delay > 0 ? " delay_sink=" + delaySink : "");
    }

    private static void await(MemorySegment map, long off, long want, long timeoutNanos, String why) {
        long deadline = System.nanoTime() + timeoutNanos;
        while ((long) LONG.getAcquire(map, off) != want) {
            if (System.nanoTime() - deadline > 0) {
                Result.fail(why);
            }
            Thread.onSpinWait();
        }
    }

    // ------------------------------------------------------------------ the loops (send_lat's order)

    private void serve(long total) {
        for (int i = 0; i < 3; i++) {
            postRecv();
        }
        for (long i = 0; i < total; i++) {
            boolean signaled = buildSend(i);
            awaitRecv(i);
            postSend();
            postRecv();
            if (signaled) {
                awaitSend(i);
            }
        }
        storePendingResult();
    }

    private long[] ping(int iters, int warmup) {
        for (int i = 0; i < 3; i++) {
            postRecv();
        }
        long[] rtt = new long[iters];
        long total = (long) warmup + iters + 1;
        long prev = 0;
        for (long i = 0; i < total; i++) {
            boolean signaled = buildSend(i);
            postSend();
            long now = System.nanoTime();
            long k = i - warmup - 1;
            if (k >= 0) {
                rtt[(int) k] = now - prev;
            }
            prev = now;
            postRecv();
            if (signaled) {
                awaitSend(i);
            }
            awaitRecv(i);
        }
        storePendingResult();
        return rtt;
    }

    /**
     * The next SEND's request, made before the wait (send_lat's order): 8 B INLINE, one in {@link #cqMod} signaled.
     * @return whether it is signaled (the bare ring has no completions: never)
     */
    private boolean buildSend(long i) {
        buf.set(ValueLayout.JAVA_LONG, 0, i);
        boolean signaled = shape != Shape.BARE && i % cqMod == cqMod - 1;
        wr.reset().opcode(WrOpcode.SEND).wrId(1).flags(SendFlags.INLINE | (signaled ? SendFlags.SIGNALED : 0))
                .sge(0, bufAddr, 8, lkey);
        return signaled;
    }

    private int waitSpins;
    private long waitDeadline;

    private void waitBegin() {
        waitSpins = 0;
        waitDeadline = 0;
    }

    /**
     * One empty turn of a wait: a PAUSE when asked, and every 2^16 turns a look at the clock.
     * @return false once the wait has lasted the timeout
     */
    private boolean idleTurn() {
        if (pause) {
            Thread.onSpinWait();
        }
        if (++waitSpins == 1 << 16) {
            waitSpins = 0;
            long now = System.nanoTime();
            if (waitDeadline == 0) {
                waitDeadline = now + timeoutNanos;
            } else if (now - waitDeadline > 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * send_lat's wait for a signaled SEND's completion, from the send CQ (its own, as send_lat's): each empty poll
     * of it retires what the peer's result covers (staged: and stores a result still held back), as a provider's
     * poll runs its service; then the completion is read into the caller's {@code WorkCompletion}.
     */
    private void awaitSend(long i) {
        waitBegin();
        while (sendReaped == sendCompleted) {
            storePendingResult(); // (staged with result=late: a result still held back; else none)
            retire();
            if (sendReaped == sendCompleted && !idleTurn()) {
                Result.fail("send_shape: the SEND of message " + i + " did not complete within the timeout");
            }
        }
        sendReaped++;
        wc.set(sendCqWrId, WcStatus.SUCCESS, WcOpcode.SEND, 0, 8, 0, 0, qpn, destQpn);
    }

    private void awaitRecv(long i) {
        waitBegin();
        while (true) {
            if (poll() == 0) {
                if (!idleTurn()) {
                    Result.fail("send_shape: message " + i + " did not arrive within the timeout");
                }
                continue;
            }
            if (wc.status() != WcStatus.SUCCESS) {
                Result.fail("send_shape: completion with error: " + wc);
            }
            if (wc.opcode() == WcOpcode.RECV) {
                long got = buf.get(ValueLayout.JAVA_LONG, 64);
                if (got != i) {
                    Result.fail("send_shape: message " + i + " carried " + got);
                }
                if (delay > 0) {
                    long x = delaySink | 1;
                    for (int k = 0; k < delay; k++) {
                        x = x * 0x9E3779B97F4A7C15L + k; // each step waits for the one before: D multiply latencies
                    }
                    delaySink = x;
                }
                return;
            }
        }
    }

    /**
     * staged: stores the result of the last message placed, if it is still held back (after the reply's slot, by an
     * empty poll, or at the end: a side whose peer stops next must not leave it unstored).
     */
    private void storePendingResult() {
        if (pendingResult != -1) {
            LONG.setRelease(result, R_RESULT, pendingResult);
            pendingResult = -1;
        }
    }

    // ------------------------------------------------------------------ the verbs, three ways

    private int poll() {
        return switch (shape) {
            case BARE -> pollBare();
            case VERBS -> pollVerbs();
            case STAGED -> pollStaged();
        };
    }

    private int pollBare() {
        long pos = ringRead;
        long s = (pos & (SLOTS - 1)) * SLOT;
        long seq = (long) LONG.getAcquire(in, s + S_SEQ);
        if ((int) seq != (int) (pos + 1)) {
            return 0;
        }
        checkSlot(seq, in.get(ValueLayout.JAVA_LONG, s + S_FLAGS_LEN));
        buf.set(ValueLayout.JAVA_LONG_UNALIGNED, 64, in.get(ValueLayout.JAVA_LONG_UNALIGNED, s + S_INLINE));
        consumed(pos);
        wc.set(2, WcStatus.SUCCESS, WcOpcode.RECV, 0, 8, 0, 0, qpn, destQpn);
        return 1;
    }

    private void checkSlot(long seq, long flagsLen) {
        int len = (int) (flagsLen >>> 32);
        if ((int) (seq >>> 32) != qpn || len != 8) {
            Result.fail("send_shape: a slot for QP " + (int) (seq >>> 32) + " of " + len + " bytes (expected QP " + qpn + ", 8 bytes)");
        }
    }

    private void consumed(long pos) {
        ringRead = pos + 1;
        if (ringRead - ringReadPublished >= SLOTS / 2) {
            ringReadPublished = ringRead;
            LONG.setRelease(result, R_READ, ringRead);
        }
    }

    private int pollVerbs() {
        long pos = ringRead;
        long s = (pos & (SLOTS - 1)) * SLOT;
        long seq = (long) LONG.getAcquire(in, s + S_SEQ);
        if ((int) seq == (int) (pos + 1)) {
            long flagsLen = in.get(ValueLayout.JAVA_LONG, s + S_FLAGS_LEN);
            long immMsg = in.get(ValueLayout.JAVA_LONG, s + S_IMM_MSG);
            checkSlot(seq, flagsLen);
            int len = (int) (flagsLen >>> 32);
            if (rqConsumer == rqProducer) {
                Result.fail("send_shape: no receive posted (RNR)");
            }
            int i = (int) (rqConsumer & 63) * 4;
            long wrId = rq[i];
            long va = rq[i + 1];
            int cap = (int) rq[i + 2];
            int key = (int) rq[i + 3];
            rqConsumer++;
            Region reg = lookup(key);
            if (len > cap || reg == null || !permits(reg, LOCAL_WRITE, va, len)) {
                Result.fail("send_shape: the receive's key does not cover it");
            }
            reg.segment.set(ValueLayout.JAVA_LONG_UNALIGNED, va - reg.addr, in.get(ValueLayout.JAVA_LONG_UNALIGNED, s + S_INLINE));
            push(wrId, WcStatus.SUCCESS, WcOpcode.RECV, len, (int) immMsg, 0);
            LONG.setRelease(result, R_RESULT, (immMsg >>> 32) | (long) DONE << 32);
            consumed(pos);
        }
        retire();
        return completion();
    }

    private int pollStaged() {
        long pos = ringRead;
        long s = (pos & (SLOTS - 1)) * SLOT;
        long seq = (long) LONG.getAcquire(in, s + S_SEQ);
        if ((int) seq == (int) (pos + 1)) {
            long flagsLen = in.get(ValueLayout.JAVA_LONG, s + S_FLAGS_LEN);
            long immMsg = in.get(ValueLayout.JAVA_LONG, s + S_IMM_MSG);
            checkSlot(seq, flagsLen);
            int len = (int) (flagsLen >>> 32);
            if (!armed && !arm()) {
                Result.fail("send_shape: no receive posted (RNR), or its key does not cover it");
            }
            if (len > armedCapacity) {
                Result.fail("send_shape: the receive is too short");
            }
            armedSegment.set(ValueLayout.JAVA_LONG_UNALIGNED, armedOffset, in.get(ValueLayout.JAVA_LONG_UNALIGNED, s + S_INLINE));
            rqConsumer++;
            armed = false;
            if (lateResult) {
                pendingResult = (immMsg >>> 32) | (long) DONE << 32; // stored after the reply's slot
            } else {
                LONG.setRelease(result, R_RESULT, (immMsg >>> 32) | (long) DONE << 32);
            }
            consumed(pos);
            if (cqProducer == cqConsumer) {
                wc.set(armedWrId, WcStatus.SUCCESS, WcOpcode.RECV, 0, len, (int) immMsg, 0, qpn, destQpn);
                return 1;
            }
            push(armedWrId, WcStatus.SUCCESS, WcOpcode.RECV, len, (int) immMsg, 0);
        }
        storePendingResult();
        retire();
        if (!armed) {
            arm();
        }
        return completion();
    }

    /** staged: resolves the head receive ahead of its message. @return false when none is posted or its key fails */
    private boolean arm() {
        if (rqConsumer == rqProducer) {
            return false;
        }
        int i = (int) (rqConsumer & 63) * 4;
        long va = rq[i + 1];
        int cap = (int) rq[i + 2];
        Region reg = lookup((int) rq[i + 3]);
        if (reg == null || !permits(reg, LOCAL_WRITE, va, cap)) {
            return false;
        }
        armedWrId = rq[i];
        armedSegment = reg.segment;
        armedOffset = va - reg.addr;
        armedCapacity = cap;
        armed = true;
        return true;
    }

    private Region lookup(int key) {
        Region r = keys[(key >>> 8) & 255];
        return r != null && r.key == key ? r : null;
    }

    private boolean permits(Region r, int access, long va, long len) {
        return r.pd == qpPd && (r.access & access) == access && va >= r.addr && va - r.addr <= r.len - len;
    }

    /** The head SEND's answer: retired (and completed if signaled) when the peer's result covers it. */
    private void retire() {
        if (sqConsumer == sqProducer) {
            return;
        }
        long r = (long) LONG.getAcquire(peerResult, R_RESULT);
        if ((int) (r >>> 32) != DONE) {
            return;
        }
        while (sqConsumer != sqProducer) {
            int i = (int) (sqConsumer & 63) * 2;
            long m = sq[i + 1];
            if ((int) r - (int) m < 0) {
                break;
            }
            sqConsumer++;
            if ((m >>> 32) != 0) { // its completion into the send CQ
                sendCqWrId = sq[i];
                sendCompleted++;
            }
        }
    }

    private void push(long wrId, WcStatus st, WcOpcode op, int len, int imm, int flags) {
        if (cqProducer - cqConsumer >= 256) {
            Result.fail("send_shape: the CQ overran");
        }
        int i = (int) (cqProducer & 255) * 4;
        cq[i] = wrId;
        cq[i + 1] = (len & 0xFFFFFFFFL) | (long) imm << 32;
        cq[i + 2] = (qpn & 0xFFFFFFFFL) | (long) destQpn << 32;
        cq[i + 3] = st.ordinal() | op.ordinal() << 8 | (long) flags << 32;
        cqProducer++;
    }

    private int completion() {
        long c = cqConsumer;
        if (cqProducer == c) {
            return 0;
        }
        int i = (int) (c & 255) * 4;
        long lenImm = cq[i + 1];
        long qps = cq[i + 2];
        long kind = cq[i + 3];
        wc.set(cq[i], STATUSES[(int) kind & 0xFF], OPCODES[(int) kind >>> 8 & 0xFF], 0, (int) lenImm,
                (int) (lenImm >>> 32), (int) (kind >>> 32), (int) qps, (int) (qps >>> 32));
        cqConsumer = c + 1;
        return 1;
    }

    private void postSend() {
        if (shape == Shape.BARE) {
            writeSlot(buf.get(ValueLayout.JAVA_LONG, 0), 0);
            return;
        }
        if (wr.opcode() != WrOpcode.SEND || wr.numSge() != 1 || wr.sgeLength(0) > INLINE) {
            Result.fail("send_shape: a request this model does not take");
        }
        int len = wr.sgeLength(0);
        long la = wr.sgeAddr(0);
        Region src = lookup(wr.sgeLkey(0));
        if (src == null || !permits(src, 0, la, len)) {
            Result.fail("send_shape: the source's key does not cover it");
        }
        if (sqProducer - sqConsumer >= 64) {
            retire(); // a full queue: the post runs the retire itself, as a provider's post runs its service
            postRetires++;
        }
        if (sqProducer - sqConsumer >= 64) {
            Result.fail("send_shape: the send queue is full (the peer's results stopped): SENDs " + sqConsumer + "-" + sqProducer
                    + " unanswered, the peer's result word " + Long.toHexString((long) LONG.getAcquire(peerResult, R_RESULT))
                    + ", the head's " + Long.toHexString(sq[(int) (sqConsumer & 63) * 2 + 1]));
        }
        int m = ++msg;
        int i = (int) (sqProducer & 63) * 2;
        sq[i] = wr.wrId();
        sq[i + 1] = (m & 0xFFFFFFFFL) | ((wr.flags() & SendFlags.SIGNALED) != 0 ? 1L << 32 : 0);
        sqProducer++;
        writeSlot(src.segment.get(ValueLayout.JAVA_LONG_UNALIGNED, la - src.addr), m);
        storePendingResult(); // staged: the result of the message this answers, after the answer
    }

    private void writeSlot(long payload, int m) {
        long pos = ringWrite;
        if (pos - ringReadSeen >= SLOTS) {
            long deadline = System.nanoTime() + timeoutNanos;
            while (pos - (ringReadSeen = (long) LONG.getAcquire(peerResult, R_READ)) >= SLOTS) {
                if (System.nanoTime() - deadline > 0) {
                    Result.fail("send_shape: the peer's ring stayed full for the whole timeout");
                }
            }
        }
        long s = (pos & (SLOTS - 1)) * SLOT;
        out.set(ValueLayout.JAVA_LONG_UNALIGNED, s + S_INLINE, payload);
        out.set(ValueLayout.JAVA_LONG, s + S_FLAGS_LEN, (F_FIRST_LAST | WrOpcode.SEND.ordinal() << 8) | 8L << 32);
        out.set(ValueLayout.JAVA_LONG, s + S_IMM_MSG, (long) m << 32);
        LONG.setRelease(out, s + S_SEQ, ((pos + 1) & 0xFFFFFFFFL) | (long) destQpn << 32);
        ringWrite = pos + 1;
    }

    private void postRecv() {
        if (shape == Shape.BARE) {
            return;
        }
        rwr.reset().wrId(2).sge(0, bufAddr + 64, 64, lkey);
        if (rqProducer - rqConsumer >= 64) {
            Result.fail("send_shape: the receive queue is full");
        }
        int i = (int) (rqProducer & 63) * 4;
        rq[i] = rwr.wrId();
        rq[i + 1] = rwr.sgeAddr(0);
        rq[i + 2] = rwr.sgeLength(0);
        rq[i + 3] = rwr.sgeLkey(0);
        rqProducer++;
    }
}

package io.jrdma.bench;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
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

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;

/**
 * An 8-byte WRITE ping-pong over the shared-memory device between two processes, with the loop
 * stripped to one step at a time, to find which step of {@code jrdma perf write_lat -d shm0} costs
 * what against the mapped-file floor ({@link MappedPingPong}). Each side waits for the peer's
 * sequence number in its own buffer (an 8-byte word read with acquire), then WRITEs its own number
 * into the peer's buffer, in one of these ways ({@code step=}):
 * <ul>
 * <li>{@code unsig}: an unsignaled WRITE (INVOKER: it is done inside {@code postSend}); no CQ at all
 * (every 64th is signaled and its completion reaped, off the measured path's average);</li>
 * <li>{@code sig}: a signaled WRITE, then the poll that returns its completion;</li>
 * <li>{@code perf}: as {@code sig}, and the wait calls {@code DeviceContext.progress()} on each turn, as
 * {@code jrdma perf}'s loop does;</li>
 * <li>{@code pair}: the floor and {@code sig} in the same two processes, in alternating blocks of
 * {@code block} round trips ({@code blocks} of each; which goes first alternates too): the floor is a
 * plain release store into a file both map ({@code /dev/shm}, as {@link MappedPingPong}), the other a
 * signaled WRITE and its poll. The two vCPUs of a virtual machine may sit on one physical core or two,
 * and that changes with time (the floor here has two modes, 0.06 and 0.18 µs); blocks next to each other
 * share the placement, so their ratio is the WRITE's cost over the floor's without it.</li>
 * <li>{@code sendpair}: as {@code pair}, with an 8-byte SEND ping-pong in place of the WRITE, in
 * {@code jrdma perf send_lat}'s order: each side keeps {@value #RECVS} receives posted, the client posts its
 * SEND and waits for the server's; the server waits, posts its SEND, then replaces the receive it used (every
 * 64th SEND is signaled, its completion taken from the same CQ as the receives'). Its line is
 * {@code RESULT shm_pingpong_sendpair floor_us=... send_us=... ratio=...}.</li>
 * </ul>
 *
 * <pre>
 * server: ShmPingPong role=server dir=D [step=sig] [iters=200000] [warmup=50000] [timeout=30] [blocks=10] [block=20000]
 * client: ShmPingPong role=client dir=D [step=sig] [iters=200000] [warmup=50000] [timeout=30] [blocks=10] [block=20000]
 * </pre>
 * With {@code step=pair} the client prints {@code RESULT shm_pingpong_pair floor_us=... write_us=... ratio=...
 * ratio_min=... ratio_max=...}: the medians over the blocks of each block's median one-way time, and the
 * median, least and greatest of the ratios of each WRITE block to the floor block next to it.</p>
 * The two meet through files in directory {@code D} (GID, QPN, address and rkey of each side). The client
 * prints {@code RESULT shm_pingpong step=S median_us=... p99_us=... cpu_ns=... turns=... median_turns=...}:
 * half the round trip (samples: differences of consecutive timestamps, one per round trip, read after the
 * post), the client thread's CPU time per round trip (it spins: on a host with idle cores, about its wall
 * time), and the turns of its wait loop per round trip (mean, and in the median round trip). A wait fails
 * when nothing came for {@code timeout} seconds.
 */
public final class ShmPingPong {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    /** where the peer's number lands in each side's buffer (its own line, 128 B from the source word at 0) */
    private static final long IN = 128;

    private ShmPingPong() {
    }

    public static void main(String[] argv) throws IOException, InterruptedException {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        String step = a.str("step", "sig");
        int iters = a.integer("iters", 200_000);
        int warmup = a.integer("warmup", 50_000);
        long timeout = a.num("timeout", 30) * 1_000_000_000L;
        Path dir = Path.of(a.str("dir", System.getProperty("java.io.tmpdir") + "/jrdma-shmpp"));
        if (!role.equals("server") && !role.equals("client")) {
            Result.fail("role must be server or client (got " + role + ")");
        }
        if (!step.equals("unsig") && !step.equals("sig") && !step.equals("perf") && !step.equals("pair")
                && !step.equals("sendpair")) {
            Result.fail("step must be unsig, sig, perf, pair or sendpair (got " + step + ")");
        }
        boolean server = role.equals("server");
        pause = a.bool("pause", false);
        pairSignaled = a.bool("pairsig", true);
        Device dev = ShmRendezvous.device(a);
        Files.createDirectories(dir);
        Path mine = dir.resolve(server ? "server" : "client");
        Path theirs = dir.resolve(server ? "client" : "server");
        Path ready = dir.resolve("ready");
        if (server) {
            Files.deleteIfExists(theirs);
            Files.deleteIfExists(ready);
        }
        try (Arena arena = Arena.ofShared();
             DeviceContext ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(256);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq).withDepth(128, 16));
            MemorySegment buf = ctx.allocateBuffer(4096, 4096, arena);
            MemoryRegion mr = pd.register(buf, ALL);
            String info = HexFormat.of().formatHex(ctx.gid(0).raw()) + " " + qp.qpn() + " " + mr.address() + " " + mr.rkey();
            boolean sends = step.equals("sendpair");
            long deadline = System.nanoTime() + timeout;
            String[] peer;
            if (server) {
                ShmRendezvous.publish(mine, info);
                System.out.println("LISTENING " + dir); // bench/compare.sh starts the client on this line
                System.out.flush();
                peer = ShmRendezvous.await(theirs, deadline);
                ShmRendezvous.connect(qp, peer, ALL);
                if (sends) {
                    postRecvs(qp, mr, RECVS);
                }
                ShmRendezvous.publish(ready, "1");
            } else {
                peer = ShmRendezvous.await(theirs, deadline);
                ShmRendezvous.connect(qp, peer, ALL);
                if (sends) {
                    postRecvs(qp, mr, RECVS);
                }
                ShmRendezvous.publish(mine, info);
                ShmRendezvous.await(ready, deadline);
            }
            long rAddr = Long.parseLong(peer[2]);
            int rKey = Integer.parseInt(peer[3]);
            if (step.equals("pair") || step.equals("sendpair")) {
                pair(server, step.equals("sendpair"), a.integer("blocks", 10), a.integer("block", 20_000), warmup,
                        timeout, dir, deadline, arena, qp, cq, mr, buf, rAddr, rKey);
                qp.close();
                mr.close();
                cq.close();
                pd.close();
                return;
            }
            SendWorkRequest wr = new SendWorkRequest();
            WorkCompletion wc = new WorkCompletion();
            long[] t = new long[iters];
            long[] spinsAt = new long[iters];
            int total = warmup + iters;
            boolean sig = !step.equals("unsig");
            boolean progress = step.equals("perf");
            long cpu0 = 0;
            long turns0 = 0;
            for (int i = 1; i <= total; i++) {
                if (i == warmup + 1) {
                    cpu0 = ShmRendezvous.threadCpu();
                    turns0 = turns;
                }
                if (server) {
                    waitFor(buf, i, progress ? ctx : null, timeout, role);
                }
                buf.set(ValueLayout.JAVA_LONG, 0, i);
                write(qp, cq, wr, wc, mr, i, sig || i % 64 == 0, rAddr, rKey, timeout, role);
                if (!server) {
                    if (i > warmup) { // after the post, before the wait: the clock read overlaps the peer's turn
                        t[i - warmup - 1] = System.nanoTime();
                    }
                    waitFor(buf, i, progress ? ctx : null, timeout, role);
                    if (i > warmup) {
                        spinsAt[i - warmup - 1] = lastSpins;
                    }
                }
            }
            long cpu = ShmRendezvous.threadCpu() - cpu0;
            if (!server) {
                double[] d = new double[iters - 1];
                for (int i = 1; i < iters; i++) {
                    d[i - 1] = (t[i] - t[i - 1]) / 2e3;
                }
                Arrays.sort(d);
                Arrays.sort(spinsAt);
                System.out.printf(Locale.ROOT, "RESULT shm_pingpong step=%s median_us=%.4f p99_us=%.4f cpu_ns=%.1f turns=%.2f median_turns=%d%n",
                        step, d[d.length / 2], d[(int) (d.length * 0.99)], (double) cpu / iters,
                        (double) (turns - turns0) / iters, spinsAt[iters / 2]);
            }
            qp.close();
            mr.close();
            cq.close();
            pd.close();
        } finally {
            if (server) {
                Files.deleteIfExists(mine);
                Files.deleteIfExists(ready);
            } else {
                Files.deleteIfExists(mine);
            }
        }
    }

    /**
     * WRITEs the 8 bytes at the start of the local buffer (the caller stored {@code n} there) to the peer's
     * {@code IN}; when {@code signaled}, polls until its completion arrives (failing after {@code timeout} ns without one).
     */
    private static void write(QueuePair qp, CompletionQueue cq, SendWorkRequest wr, WorkCompletion wc, MemoryRegion mr,
                              long n, boolean signaled, long rAddr, int rKey, long timeout, String role) {
        wr.reset().opcode(WrOpcode.RDMA_WRITE).wrId(n).flags(signaled ? SendFlags.SIGNALED : 0)
                .sge(0, mr, 0, 8).remote(rAddr + IN, rKey);
        int rc = qp.postSend(wr);
        if (rc != 0) {
            Result.fail(role + ": postSend " + io.jrdma.verbs.RdmaException.Errno.of(rc));
        }
        if (!signaled) {
            return;
        }
        long spins = 0;
        long waitEnd = 0;
        while (cq.poll(wc) == 0) {
            if ((++spins & 0xFFFFF) == 0) {
                if (waitEnd == 0) {
                    waitEnd = System.nanoTime() + timeout;
                } else if (System.nanoTime() > waitEnd) {
                    Result.fail(role + ": no completion within the timeout");
                }
            }
        }
        if (wc.status() != WcStatus.SUCCESS) {
            Result.fail(role + ": completion with error " + wc);
        }
    }

    /** sendpair: receives each side keeps posted */
    private static final int RECVS = 8;
    /** sendpair: where the receives land (one buffer for all, as perftest's send_lat) */
    private static final long RECV_AT = 512;

    private static final RecvWorkRequest RWR = new RecvWorkRequest();

    private static void postRecvs(QueuePair qp, MemoryRegion mr, int n) {
        for (int i = 0; i < n; i++) {
            int rc = qp.postRecv(RWR.reset().wrId(0).sge(0, mr, RECV_AT, 64));
            if (rc != 0) {
                Result.fail("postRecv " + io.jrdma.verbs.RdmaException.Errno.of(rc));
            }
        }
    }

    /** sendpair: posts an 8-byte SEND of the local buffer's first word (signaled every 64th). */
    private static void send(QueuePair qp, SendWorkRequest wr, MemoryRegion mr, long n, String role) {
        wr.reset().opcode(WrOpcode.SEND).wrId(n).flags(n % 64 == 0 ? SendFlags.SIGNALED : 0).sge(0, mr, 0, 8);
        int rc = qp.postSend(wr);
        if (rc != 0) {
            Result.fail(role + ": postSend " + io.jrdma.verbs.RdmaException.Errno.of(rc));
        }
    }

    /** sendpair: polls until the peer's SEND {@code n} completes a receive (send completions on the way are checked and passed). */
    private static void awaitRecv(CompletionQueue cq, WorkCompletion wc, MemorySegment buf, long n, long timeout, String role) {
        long spins = 0;
        long waitEnd = 0;
        while (true) {
            if (cq.poll(wc) != 0) {
                if (wc.status() != WcStatus.SUCCESS) {
                    Result.fail(role + ": completion with error " + wc);
                }
                if (wc.opcode() == io.jrdma.verbs.WcOpcode.RECV) {
                    break;
                }
            } else if ((++spins & 0xFFFFF) == 0) {
                if (waitEnd == 0) {
                    waitEnd = System.nanoTime() + timeout;
                } else if (System.nanoTime() > waitEnd) {
                    Result.fail(role + ": no SEND " + n + " from the peer within the timeout");
                }
            }
        }
        long got = buf.get(ValueLayout.JAVA_LONG, RECV_AT);
        if (got != n) {
            Result.fail(role + ": received " + got + ", expected " + n);
        }
    }

    /**
     * step=pair (sendpair: {@code sends}): floor and WRITE (SEND) blocks in turn (see the class comment); the file
     * {@code dir/floor} is the floor's.
     */
    private static void pair(boolean server, boolean sends, int blocks, int block, int warmup, long timeout, Path dir, long deadline,
                             Arena arena, QueuePair qp, CompletionQueue cq, MemoryRegion mr, MemorySegment buf, long rAddr,
                             int rKey) throws IOException, InterruptedException {
        // in /dev/shm where there is one (as MappedPingPong's): the kernel never writes a tmpfs page back, so no
        // write-protect fault lands in a measured store; the server names the file in dir/floor.ready
        Path shm = Path.of("/dev/shm");
        Path file = Files.isDirectory(shm) ? shm.resolve("jrdma-bench-pair-" + ProcessHandle.current().pid()) : dir.resolve("floor");
        Path mapped = dir.resolve("floor.ready");
        MemorySegment map;
        if (server) {
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                    java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.READ,
                    java.nio.file.StandardOpenOption.WRITE, java.nio.file.StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.truncate(4096);
                map = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
            }
            ShmRendezvous.publish(mapped, file.toString());
        } else {
            file = Path.of(ShmRendezvous.await(mapped, deadline)[0]);
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                    java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
                map = ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
            }
        }
        // the client's word at 0 and the server's at 256: no shared line, nor an adjacent-line pair
        long pingOff = 0;
        long pongOff = 256;
        SendWorkRequest wr = new SendWorkRequest();
        WorkCompletion wc = new WorkCompletion();
        long[] t = new long[block + 1];
        double[] floorMed = new double[blocks];
        double[] writeMed = new double[blocks];
        long floorSeq = 0;
        long writeSeq = 0;
        // a warm-up of each kind first, then the blocks; the order within block b alternates with b
        for (int b = -1; b < blocks; b++) {
            for (int k = 0; k < 2; k++) {
                boolean floor = (k == 0) == (b % 2 == 0);
                int n = b < 0 ? warmup : block;
                for (int i = 0; i <= n; i++) {
                    if (floor) {
                        long seq = ++floorSeq;
                        if (server) {
                            spin(map, pingOff, seq, timeout, "server: floor ping " + seq);
                            LONG.setRelease(map, pongOff, seq);
                        } else {
                            LONG.setRelease(map, pingOff, seq);
                            if (b >= 0) {
                                t[i] = System.nanoTime();
                            }
                            spin(map, pongOff, seq, timeout, "client: floor pong " + seq);
                        }
                    } else if (sends) {
                        long seq = ++writeSeq;
                        String role = server ? "server" : "client";
                        if (server) {
                            awaitRecv(cq, wc, buf, seq, timeout, role);
                        }
                        buf.set(ValueLayout.JAVA_LONG, 0, seq);
                        send(qp, wr, mr, seq, role);
                        if (!server) {
                            if (b >= 0) {
                                t[i] = System.nanoTime();
                            }
                            awaitRecv(cq, wc, buf, seq, timeout, role);
                        }
                        postRecvs(qp, mr, 1); // after the reply, one more stays posted meanwhile (send_lat's order)
                    } else {
                        long seq = ++writeSeq;
                        if (server) {
                            waitFor(buf, seq, null, timeout, "server");
                        }
                        buf.set(ValueLayout.JAVA_LONG, 0, seq);
                        write(qp, cq, wr, wc, mr, seq, pairSignaled || seq % 64 == 0, rAddr, rKey, timeout, server ? "server" : "client");
                        if (!server) {
                            if (b >= 0) {
                                t[i] = System.nanoTime();
                            }
                            waitFor(buf, seq, null, timeout, "client");
                        }
                    }
                }
                if (server && b < 0 && k == 1) {
                    Files.deleteIfExists(file); // both have mapped it (the warm-up ran through it): no name left behind
                }
                if (!server && b >= 0) {
                    double[] d = new double[block];
                    for (int i = 1; i <= block; i++) {
                        d[i - 1] = (t[i] - t[i - 1]) / 2e3;
                    }
                    Arrays.sort(d);
                    (floor ? floorMed : writeMed)[b] = d[block / 2];
                }
            }
        }
        if (server) {
            Files.deleteIfExists(file);
            Files.deleteIfExists(mapped);
            return;
        }
        double[] ratio = new double[blocks];
        for (int b = 0; b < blocks; b++) {
            ratio[b] = writeMed[b] / floorMed[b];
        }
        double[] r = ratio.clone();
        Arrays.sort(r);
        double[] f = floorMed.clone();
        Arrays.sort(f);
        double[] w = writeMed.clone();
        Arrays.sort(w);
        StringBuilder each = new StringBuilder();
        for (int b = 0; b < blocks; b++) {
            each.append(String.format(Locale.ROOT, "%s%.4f/%.4f", b == 0 ? "" : ",", writeMed[b], floorMed[b]));
        }
        System.out.printf(Locale.ROOT, "RESULT shm_pingpong_%s floor_us=%.4f %s_us=%.4f ratio=%.3f ratio_min=%.3f "
                + "ratio_max=%.3f blocks=%d block=%d each=%s%n", sends ? "sendpair" : "pair", f[blocks / 2],
                sends ? "send" : "write", w[blocks / 2], r[blocks / 2], r[0],
                r[blocks - 1], blocks, block, each);
    }

    /** The floor's wait: spins (no PAUSE, as {@link MappedPingPong}) until the word at {@code off} is {@code seq}. */
    private static void spin(MemorySegment map, long off, long seq, long timeout, String what) {
        long spins = 0;
        long deadline = 0;
        while ((long) LONG.getAcquire(map, off) != seq) {
            if (pause) {
                Thread.onSpinWait();
            }
            if ((++spins & 0xFFFFF) == 0) { // the clock only now and then
                if (deadline == 0) {
                    deadline = System.nanoTime() + timeout;
                } else if (System.nanoTime() > deadline) {
                    Result.fail(what + ": nothing within the timeout");
                }
            }
        }
    }

    /** Spins until the peer's number {@code n} is in {@code buf} (with a duty cycle per turn when {@code ctx} is given). */
    private static void waitFor(MemorySegment buf, long n, DeviceContext ctx, long timeout, String role) {
        long spins = 0;
        long deadline = 0;
        while ((long) LONG.getAcquire(buf, IN) != n) {
            if (pause) {
                Thread.onSpinWait();
            }
            if (ctx != null) {
                ctx.progress();
            }
            if ((++spins & 0xFFFFF) == 0) { // the clock only now and then: nothing happened for the timeout
                if (deadline == 0) {
                    deadline = System.nanoTime() + timeout;
                } else if (System.nanoTime() > deadline) {
                    Result.fail(role + ": no number " + n + " from the peer within the timeout (the buffer holds "
                            + (long) LONG.getAcquire(buf, IN) + ")");
                }
            }
        }
        turns += spins;
        lastSpins = spins;
    }

    private static long lastSpins;
    /** pause=true: a PAUSE per turn of every wait (the floor's and the WRITE's alike) */
    private static boolean pause;
    /** pairsig=false: the pair's WRITE blocks post unsignaled WRITEs (every 64th signaled) */
    private static boolean pairSignaled = true;

    /** turns of the wait loops (the client's: per round trip in the result) */
    private static long turns;
}

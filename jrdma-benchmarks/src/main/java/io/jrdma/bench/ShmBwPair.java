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
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * WRITE and READ bandwidth over the shared-memory device between two processes, in blocks that alternate with
 * plain copies of the same size in the same two processes, to tell what a bandwidth run of {@code jrdma perf
 * write_bw|read_bw -d shm0} loses against a single-thread {@link MemorySegment#copy} ({@link MemCopy}) and where
 * (docs/shm-performance.md, "Bandwidth against the copy"). The client runs, for {@code secs} each and in turn
 * ({@code kinds=}, the order rotating from block to block, after a warm-up of each):
 * <ul>
 * <li>{@code write} / {@code read}: jrdma WRITEs (READs) of {@code size} bytes from (into) one local buffer into
 * (from) one buffer of the server, in {@code jrdma perf}'s loop: up to {@value #TX_DEPTH} outstanding, every
 * {@value #CQ_MOD}th signaled, a poll whenever the queue is full (perftest's defaults, which compare.sh's runs use);</li>
 * <li>{@code copy} / {@code copyin}: {@link MemorySegment#copy} from the same local buffer into (from) a file in
 * {@code /dev/shm} that the server created, filled and mapped: another process's shared memory, as the WRITE's
 * target is;</li>
 * <li>{@code private}: {@link MemorySegment#copy} between two buffers of this process's own (malloc'd) memory, as
 * {@link MemCopy span=size} copies, in the same process and the same minutes as the others.</li>
 * </ul>
 * Each block is measured on the wall clock and on the thread's CPU-time clock; the client prints one {@code BLOCK}
 * line per block and, per kind, {@code RESULT shm_bw_pair size=S kind=K gbps=<median> min=.. max=.. cpu_gbps=..
 * vs_private=<median ratio to the private block of the same round> vs_min=.. vs_max=..}. The server's context is
 * DEDICATED, as {@code jrdma perf}'s passive server (or INVOKER, {@code server=invoker}: no engine thread at all).
 *
 * <pre>
 * server: ShmBwPair role=server dir=D size=S [server=dedicated|invoker] [timeout=60]
 * client: ShmBwPair role=client dir=D size=S [kinds=write,copy,private] [rounds=5] [secs=0.3] [warm=0.5] [timeout=60]
 * </pre>
 */
public final class ShmBwPair {
    private static final int RKEYS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
    /** perftest's default tx depth and cq_mod for bandwidth tests (jrdma perf's too) */
    static final int TX_DEPTH = 128;
    static final int CQ_MOD = 100;

    private ShmBwPair() {
    }

    public static void main(String[] argv) throws IOException, InterruptedException {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        int size = a.integer("size", 65536);
        long timeout = a.num("timeout", 60) * 1_000_000_000L;
        Path dir = Path.of(a.str("dir", System.getProperty("java.io.tmpdir") + "/jrdma-shmbw"));
        if (!role.equals("server") && !role.equals("client")) {
            Result.fail("role must be server or client (got " + role + ")");
        }
        if (size < 8 || size % 8 != 0) {
            Result.fail("size must be a multiple of 8 bytes, at least 8 (got " + size + ")");
        }
        String serverMode = a.str("server", "dedicated");
        if (!serverMode.equals("dedicated") && !serverMode.equals("invoker")) {
            Result.fail("server must be dedicated (jrdma perf's passive server) or invoker (no engine thread), not "
                    + serverMode);
        }
        boolean server = role.equals("server");
        Device dev = ShmRendezvous.device(a);
        Files.createDirectories(dir);
        Path mine = dir.resolve(server ? "server" : "client");
        Path theirs = dir.resolve(server ? "client" : "server");
        Path ready = dir.resolve("ready");
        Path done = dir.resolve("done");
        if (server) {
            Files.deleteIfExists(theirs);
            Files.deleteIfExists(ready);
            Files.deleteIfExists(done);
        }
        ThreadingMode mode = server && serverMode.equals("dedicated") ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER;
        Path file = null;
        try (Arena arena = Arena.ofShared();
             DeviceContext ctx = dev.open(DeviceOptions.defaults().withThreadingMode(mode))) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(TX_DEPTH + 16);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq).withDepth(TX_DEPTH, 1));
            MemorySegment buf = ctx.allocateBuffer(size, 4096, arena);
            buf.fill((byte) (server ? 0x5a : 0x3c));
            MemoryRegion mr = pd.register(buf, server ? RKEYS : Access.LOCAL_WRITE);
            long deadline = System.nanoTime() + timeout;
            String info = HexFormat.of().formatHex(ctx.gid(0).raw()) + " " + qp.qpn() + " " + mr.address() + " " + mr.rkey();
            if (server) {
                // another process's shared memory for the plain copies: a tmpfs file, created, filled and mapped here
                file = Path.of("/dev/shm").resolve("jrdma-bench-bw-" + ProcessHandle.current().pid());
                MemorySegment map;
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
                    ch.truncate(size);
                    map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                }
                map.fill((byte) 0x5a);
                ShmRendezvous.publish(mine, info + " " + file);
                System.out.println("LISTENING " + dir);
                System.out.flush();
                String[] peer = ShmRendezvous.await(theirs, deadline);
                Files.deleteIfExists(file); // the client mapped it before it answered: no name left behind
                ShmRendezvous.connect(qp, peer, RKEYS);
                ShmRendezvous.publish(ready, "1");
                while (!Files.exists(done)) { // the client measures meanwhile; this thread sleeps
                    if (System.nanoTime() > deadline) {
                        Result.fail("server: the client did not finish within the timeout");
                    }
                    Thread.sleep(100);
                }
            } else {
                String[] peer = ShmRendezvous.await(theirs, deadline);
                MemorySegment map; // mapped before answering: the server then removes the file's name
                try (FileChannel ch = FileChannel.open(Path.of(peer[4]), StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
                    map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                }
                ShmRendezvous.connect(qp, peer, RKEYS);
                ShmRendezvous.publish(mine, info);
                ShmRendezvous.await(ready, deadline);
                MemorySegment p1 = arena.allocate(size, 4096);
                MemorySegment p2 = arena.allocate(size, 4096);
                p1.fill((byte) 1);
                p2.fill((byte) 2);
                try {
                    new Client(a, size, qp, cq, mr, buf, map, p1, p2, Long.parseLong(peer[2]),
                            Integer.parseInt(peer[3])).run();
                } finally {
                    ShmRendezvous.publish(done, "1");
                }
            }
            qp.close();
            mr.close();
            cq.close();
            pd.close();
        } finally {
            Files.deleteIfExists(mine);
            if (server) {
                Files.deleteIfExists(ready);
                Files.deleteIfExists(done);
                if (file != null) {
                    Files.deleteIfExists(file);
                }
            }
        }
    }

    private static final class Client {
        private final int size;
        private final QueuePair qp;
        private final CompletionQueue cq;
        private final MemoryRegion mr;
        private final MemorySegment buf;
        private final MemorySegment map;
        private final MemorySegment p1;
        private final MemorySegment p2;
        private final long rAddr;
        private final int rKey;
        private final String[] kinds;
        private final int rounds;
        private final long blockNanos;
        private final long warmNanos;
        private final SendWorkRequest wr = new SendWorkRequest();
        private final WorkCompletion[] wcs = new WorkCompletion[16];

        Client(Args a, int size, QueuePair qp, CompletionQueue cq, MemoryRegion mr, MemorySegment buf, MemorySegment map,
               MemorySegment p1, MemorySegment p2, long rAddr, int rKey) {
            this.size = size;
            this.qp = qp;
            this.cq = cq;
            this.mr = mr;
            this.buf = buf;
            this.map = map;
            this.p1 = p1;
            this.p2 = p2;
            this.rAddr = rAddr;
            this.rKey = rKey;
            this.kinds = a.str("kinds", "write,copy,private").split(",");
            for (String k : kinds) {
                if (!List.of("write", "read", "copy", "copyin", "private").contains(k)) {
                    Result.fail("kinds are write, read, copy, copyin and private, not " + k);
                }
            }
            this.rounds = a.integer("rounds", 5);
            this.blockNanos = (long) (a.dbl("secs", 0.3) * 1e9);
            this.warmNanos = (long) (a.dbl("warm", 0.5) * 1e9);
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
        }

        void run() {
            for (String k : kinds) {
                block(k, warmNanos);
            }
            int n = kinds.length;
            double[][] wall = new double[n][rounds];
            double[][] cpu = new double[n][rounds];
            for (int r = 0; r < rounds; r++) {
                StringBuilder line = new StringBuilder("BLOCK round=" + r);
                for (int j = 0; j < n; j++) {
                    int k = (j + r) % n; // the order rotates
                    double[] g = block(kinds[k], blockNanos);
                    wall[k][r] = g[0];
                    cpu[k][r] = g[1];
                }
                for (int k = 0; k < n; k++) {
                    line.append(String.format(Locale.ROOT, " %s=%.2f/%.2f", kinds[k], wall[k][r], cpu[k][r]));
                }
                System.out.println(line);
            }
            int priv = List.of(kinds).indexOf("private");
            List<String> out = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                double[] w = wall[k].clone();
                Arrays.sort(w);
                double[] c = cpu[k].clone();
                Arrays.sort(c);
                String vs = "";
                if (priv >= 0) {
                    double[] ratio = new double[rounds];
                    for (int r = 0; r < rounds; r++) {
                        ratio[r] = wall[k][r] / wall[priv][r];
                    }
                    Arrays.sort(ratio);
                    vs = String.format(Locale.ROOT, " vs_private=%.3f vs_min=%.3f vs_max=%.3f", ratio[rounds / 2],
                            ratio[0], ratio[rounds - 1]);
                }
                out.add(String.format(Locale.ROOT, "RESULT shm_bw_pair size=%d kind=%s gbps=%.2f min=%.2f max=%.2f "
                        + "cpu_gbps=%.2f%s", size, kinds[k], w[rounds / 2], w[0], w[rounds - 1], c[rounds / 2], vs));
            }
            out.forEach(System.out::println);
        }

        /** @return GB/s on the wall clock and per CPU second of one block of {@code kind} lasting about {@code nanos} */
        private double[] block(String kind, long nanos) {
            long c0 = ShmRendezvous.threadCpu();
            long t0 = System.nanoTime();
            long ops = switch (kind) {
                case "write" -> rdma(WrOpcode.RDMA_WRITE, t0 + nanos);
                case "read" -> rdma(WrOpcode.RDMA_READ, t0 + nanos);
                case "copy" -> copy(buf, map, t0 + nanos);
                case "copyin" -> copy(map, buf, t0 + nanos);
                default -> copy(p1, p2, t0 + nanos);
            };
            long t1 = System.nanoTime();
            long c1 = ShmRendezvous.threadCpu();
            double bytes = (double) ops * size;
            return new double[] {bytes / (t1 - t0), bytes / (c1 - c0)};
        }

        /** jrdma perf's bandwidth loop (runIterBw, one QP): posts while fewer than TX_DEPTH are outstanding, then polls */
        private long rdma(WrOpcode op, long end) {
            long posted = 0;
            long done = 0;
            boolean stop = false;
            int lkey = mr.lkey();
            long la = mr.address();
            wr.reset().opcode(op);
            while (true) {
                while (posted - done + 1 <= TX_DEPTH && !(stop && posted % CQ_MOD == 0)) {
                    boolean signaled = posted % CQ_MOD == CQ_MOD - 1;
                    wr.wrId(posted).flags(signaled ? SendFlags.SIGNALED : 0).sge(0, la, size, lkey).remote(rAddr, rKey);
                    int rc = qp.postSend(wr);
                    if (rc != 0) {
                        Result.fail("postSend: " + io.jrdma.verbs.RdmaException.Errno.of(rc) + " after " + posted);
                    }
                    posted++;
                }
                if (stop && done == posted) {
                    return posted;
                }
                int ne = cq.poll(wcs);
                for (int i = 0; i < ne; i++) {
                    if (wcs[i].status() != WcStatus.SUCCESS) {
                        Result.fail("completion with error: " + wcs[i]);
                    }
                    done += CQ_MOD;
                }
                if (ne > 0 && !stop && System.nanoTime() - end >= 0) {
                    stop = true;
                }
            }
        }

        /** {@link MemorySegment#copy} of the size from {@code src} into {@code dst} (MemCopy's loop) */
        private long copy(MemorySegment src, MemorySegment dst, long end) {
            int batch = Math.max(1, (1 << 20) / size);
            long ops = 0;
            do {
                for (int i = 0; i < batch; i++) {
                    MemorySegment.copy(src, 0, dst, 0, size);
                }
                ops += batch;
            } while (System.nanoTime() - end < 0);
            return ops;
        }
    }
}

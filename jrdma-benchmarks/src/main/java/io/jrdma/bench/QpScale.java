package io.jrdma.bench;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.IdleStrategy;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * RDMA WRITE over many connected QPs of one device, two processes on loopback: the 8 B message
 * rate with 1 and 16 QPs, and the aggregate bandwidth of 1,000 QPs against one.
 *
 * <p>Threading as {@code jrdma perf write_bw}: the server is a passive target (DEDICATED engine,
 * BACKOFF idling, its main thread blocked on a control socket); the client is one INVOKER thread
 * that posts and polls. All QPs of a side share one PD, one CQ and one registered buffer.
 *
 * <p>Load: at most {@code depth} messages outstanding in total (default 128, perf's TX depth),
 * at most {@code max(1, depth/qps)} on each QP, posted round robin; each QP signals every
 * {@code max(1, min(perQp/2, 64))}th request (selective signaling, as perf). After {@code warm}
 * seconds, messages completed over {@code secs} seconds are counted.
 *
 * <p>Memory: heap (after a full GC) and direct-buffer bytes before and after creating and
 * connecting the QPs (default attributes, {@link QpInitAttr#rc}: 128-deep queues), divided by the
 * number of QPs, on each side: {@code RESULT qp_mem side=client|server qps=N heap_per_qp=... direct_per_qp=...}.
 *
 * <pre>
 * server: QpScale role=server port=P qps=N size=S [timeout=60]
 * client: QpScale role=client port=P qps=N size=S [depth=128] [secs=2] [warm=0.5]
 * </pre>
 * The control socket is on TCP port P+1.
 */
public final class QpScale {
    private QpScale() {
    }

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        InetAddress host = InetAddress.getByName(a.str("host", "127.0.0.1"));
        int port = a.integer("port", 19010);
        int qps = a.integer("qps", 1);
        int size = a.integer("size", 8);
        long timeoutSec = a.num("timeout", 60);
        long area = Math.min(64L * size, Math.max(size, 8L << 20));
        Device dev = Rdma.resolve(host, Transport.ROCE_V2).device();
        if (role.equals("server")) {
            server(dev, host, port, qps, area, timeoutSec);
        } else {
            client(dev, host, port, qps, size, area, a.integer("depth", 128), a.dbl("warm", 0.5), a.dbl("secs", 2),
                    timeoutSec);
        }
    }

    private static void server(Device dev, InetAddress host, int port, int qps, long area, long timeoutSec)
            throws IOException {
        Duration timeout = Duration.ofSeconds(timeoutSec);
        try (ServerSocket ctl = new ServerSocket(port + 1, 1, host);
             Arena arena = Arena.ofShared();
             DeviceContext ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED)
                     .withIdleStrategy(IdleStrategy.BACKOFF))) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(256);
            MemorySegment buf = arena.allocate(area, 4096);
            MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            byte[] where = ByteBuffer.allocate(20).putLong(mr.address()).putInt(mr.rkey()).putLong(area).array();
            var listener = ctx.connectionManager().listen(new InetSocketAddress(host, port));
            System.out.println("LISTENING qpscale port=" + port);
            System.out.flush();
            long[] before = memory();
            List<QueuePair> qpList = new ArrayList<>();
            List<ConnectionManager.Connection> conns = new ArrayList<>();
            for (int i = 0; i < qps; i++) {
                var cr = listener.poll(timeout);
                if (cr == null) {
                    Result.fail("qpscale server: connection " + i + " did not come within " + timeoutSec + " s");
                }
                QueuePair qp = pd.createQp(QpInitAttr.rc(cq));
                qpList.add(qp);
                conns.add(cr.accept(qp, ConnParam.defaults().withRetry(7, 7).withPrivateData(where), timeout));
            }
            printMemory("server", qps, before, memory());
            ctl.setSoTimeout((int) (timeoutSec * 1000));
            try (Socket s = ctl.accept(); InputStream in = s.getInputStream()) {
                s.setSoTimeout((int) (timeoutSec * 1000));
                in.read(); // the client's end of run (or its exit)
            }
            Map<String, Long> c = ctx.counters();
            System.out.println("COUNTERS server " + c);
            for (var conn : conns) {
                conn.close();
            }
            for (QueuePair qp : qpList) {
                qp.close();
            }
            listener.close();
            mr.close();
            cq.close();
            pd.close();
        }
    }

    private static void client(Device dev, InetAddress host, int port, int qps, int size, long area, int depth,
            double warm, double secs, long timeoutSec) throws IOException {
        Duration timeout = Duration.ofSeconds(timeoutSec);
        try (Arena arena = Arena.ofShared();
             DeviceContext ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(Math.max(1024, 2 * depth));
            MemorySegment buf = arena.allocate(area, 4096);
            MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
            long[] before = memory();
            QueuePair[] qp = new QueuePair[qps];
            List<ConnectionManager.Connection> conns = new ArrayList<>();
            long rbase = 0;
            int rkey = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < qps; i++) {
                qp[i] = pd.createQp(QpInitAttr.rc(cq));
                var conn = ctx.connectionManager().connect(qp[i], new InetSocketAddress(host, port),
                        ConnParam.defaults().withRetry(7, 7), timeout);
                conns.add(conn);
                ByteBuffer w = ByteBuffer.wrap(conn.peerParam().privateData());
                rbase = w.getLong();
                rkey = w.getInt();
            }
            double connectMs = (System.nanoTime() - t0) / 1e6;
            printMemory("client", qps, before, memory());
            System.out.println(String.format(Locale.ROOT, "CONNECT qps=%d ms=%.1f ms_per_qp=%.3f", qps, connectMs,
                    connectMs / qps));
            try (Socket ctl = new Socket(host, port + 1)) {
                run(ctx, cq, qp, mr, rbase, rkey, size, area, depth, warm, secs, timeoutSec);
                ctl.getOutputStream().write(1);
                ctl.getOutputStream().flush();
            }
            // keep the engine turning a little, so the last acknowledgements are handled before closing
            long end = System.nanoTime() + 20_000_000L;
            while (System.nanoTime() - end < 0) {
                ctx.progress();
            }
            System.out.println("COUNTERS client " + ctx.counters());
            for (var c : conns) {
                c.close();
            }
            for (QueuePair q : qp) {
                q.close();
            }
            mr.close();
            cq.close();
            pd.close();
        }
    }

    private static void run(DeviceContext ctx, CompletionQueue cq, QueuePair[] qp, MemoryRegion mr, long rbase,
            int rkey, int size, long area, int depth, double warm, double secs, long timeoutSec) {
        int n = qp.length;
        int perQp = Math.max(1, Math.min(128, depth / n));
        int sig = Math.max(1, Math.min(perQp / 2, 64));
        long[] posted = new long[n];
        long[] done = new long[n];
        int slots = (int) Math.max(1, Math.min(64, area / size));
        WorkCompletion[] wcs = new WorkCompletion[32];
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        SendWorkRequest wr = new SendWorkRequest(1).opcode(WrOpcode.RDMA_WRITE);
        long lbase = mr.address();
        int lkey = mr.lkey();
        long outstanding = 0;
        long completed = 0;
        long postedTotal = 0;
        int rr = 0;
        long start = System.nanoTime();
        long warmEnd = start + (long) (warm * 1e9);
        long stop = warmEnd + (long) (secs * 1e9);
        long warmCompleted = -1;
        long warmAt = 0;
        long lastProgress = start;
        long timeoutNanos = timeoutSec * 1_000_000_000L;
        int loops = 0;
        while (true) {
            // post: round robin over the QPs, each up to its share, all up to the total depth
            for (int scanned = 0; scanned < n && outstanding < depth; scanned++) {
                int q = rr;
                rr = rr + 1 == n ? 0 : rr + 1;
                while (posted[q] - done[q] < perQp && outstanding < depth) {
                    long seq = posted[q];
                    long off = (postedTotal % slots) * size;
                    wr.wrId(((long) q << 40) | seq).flags((seq + 1) % sig == 0 ? SendFlags.SIGNALED : 0)
                            .sge(0, lbase + off, size, lkey).remote(rbase + off, rkey);
                    int rc = qp[q].postSend(wr);
                    if (rc != 0) {
                        if (rc == RdmaException.Errno.ENOMEM.value()) {
                            break;
                        }
                        Result.fail("postSend: " + RdmaException.Errno.of(rc));
                    }
                    posted[q] = seq + 1;
                    outstanding++;
                    postedTotal++;
                }
            }
            int got = cq.poll(wcs); // INVOKER: one engine duty cycle
            for (int k = 0; k < got; k++) {
                WorkCompletion wc = wcs[k];
                if (wc.status() != WcStatus.SUCCESS) {
                    Result.fail("work completion " + wc.status() + " on QP " + (wc.wrId() >>> 40));
                }
                int q = (int) (wc.wrId() >>> 40);
                long seq = wc.wrId() & ((1L << 40) - 1);
                long retired = seq + 1 - done[q];
                done[q] = seq + 1;
                outstanding -= retired;
                completed += retired;
            }
            if ((++loops & 63) == 0 || got > 0) {
                long now = System.nanoTime();
                if (got > 0) {
                    lastProgress = now;
                } else if (now - lastProgress > timeoutNanos) {
                    Result.fail("no completion for " + timeoutSec + " s (" + outstanding + " outstanding)");
                }
                if (warmCompleted < 0 && now - warmEnd >= 0) {
                    warmCompleted = completed;
                    warmAt = now;
                } else if (warmCompleted >= 0 && now - stop >= 0) {
                    long msgs = completed - warmCompleted;
                    Result.rate("qpscale", size, msgs * size, msgs, now - warmAt, String.format(Locale.ROOT,
                            "qps=%d depth=%d per_qp=%d signal_every=%d", n, depth, perQp, sig));
                    return;
                }
            }
        }
    }

    /** @return {heap used after a full GC, direct buffer bytes} */
    private static long[] memory() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        long direct = 0;
        for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (b.getName().equals("direct")) {
                direct = b.getMemoryUsed();
            }
        }
        return new long[] {heap, direct};
    }

    private static void printMemory(String side, int qps, long[] before, long[] after) {
        System.out.println(String.format(Locale.ROOT,
                "RESULT qp_mem side=%s qps=%d heap_per_qp=%d direct_per_qp=%d heap_total=%d direct_total=%d",
                side, qps, (after[0] - before[0]) / qps, (after[1] - before[1]) / qps, after[0] - before[0],
                after[1] - before[1]));
        System.out.flush();
    }
}

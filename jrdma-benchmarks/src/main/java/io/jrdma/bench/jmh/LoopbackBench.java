package io.jrdma.bench.jmh;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Queue post + poll through the public API, everything on the benchmark thread:
 * <ul>
 *   <li>{@link #writePostPoll}: a signaled 8 B RDMA WRITE between two INVOKER contexts on
 *       {@code roce_lo}, both driven by this thread until the completion is polled: SQ ring,
 *       requester, UDP send and receive, responder with the rkey lookup and access check, ACK,
 *       completer, CQ ring. With {@code regions=1000}, each side has 1,000 registered regions
 *       and the WRITE names a different one (lkey and rkey) each time: the key lookup through
 *       the public API.</li>
 *   <li>{@link #flushPostPoll}: post to a QP in the ERROR state and poll its WR_FLUSH_ERR
 *       completion: the SQ and CQ rings and one engine duty cycle, no packet.</li>
 * </ul>
 * Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is the bytes allocated per operation.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "--enable-native-access=ALL-UNNAMED"})
public class LoopbackBench {
    @Param({"1", "1000"})
    public int regions;

    private Arena arena;
    private DeviceContext server;
    private DeviceContext client;
    private QueuePair sqp;
    private QueuePair cqp;
    private QueuePair errQp;
    private CompletionQueue ccq;
    private CompletionQueue ecq;
    private ConnectionManager.Connection conn;
    private ConnectionManager.Connection serverConn;
    private ConnectionManager.Listener listener;
    private MemoryRegion[] cmrs;
    private MemoryRegion[] smrs;
    private ProtectionDomain spd;
    private ProtectionDomain cpd;
    private CompletionQueue scq;
    private MemoryRegion errMr;
    private long[] remoteAddr;
    private int[] remoteKey;
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final WorkCompletion wc = new WorkCompletion();
    private int next;
    private long id;

    @Setup(Level.Trial)
    public void setup() throws Exception {
        InetAddress lo = InetAddress.getByName("127.0.0.1");
        Device dev = Rdma.resolve(lo, Transport.ROCE_V2).device();
        arena = Arena.ofShared();
        DeviceOptions invoker = DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER);
        server = dev.open(invoker);
        client = dev.open(invoker);
        spd = server.allocPd();
        scq = server.createCq(256);
        sqp = spd.createQp(QpInitAttr.rc(scq));
        cpd = client.allocPd();
        ccq = client.createCq(256);
        cqp = cpd.createQp(QpInitAttr.rc(ccq));
        smrs = new MemoryRegion[regions];
        cmrs = new MemoryRegion[regions];
        remoteAddr = new long[regions];
        remoteKey = new int[regions];
        for (int i = 0; i < regions; i++) {
            smrs[i] = spd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            cmrs[i] = cpd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE);
            remoteAddr[i] = smrs[i].address();
            remoteKey[i] = smrs[i].rkey();
        }
        listener = server.connectionManager().listen(new InetSocketAddress(lo, 0));
        CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() -> {
            var request = listener.poll(Duration.ofSeconds(10));
            return request.accept(sqp, ConnParam.defaults().withPrivateData(new byte[0]), Duration.ofSeconds(10));
        });
        conn = client.connectionManager().connect(cqp, new InetSocketAddress(lo, listener.address().getPort()),
                ConnParam.defaults(), Duration.ofSeconds(10));
        serverConn = accepted.get(20, TimeUnit.SECONDS);

        // a QP in ERROR: everything posted to it completes with WR_FLUSH_ERR on the next duty cycle
        ecq = client.createCq(256);
        errQp = cpd.createQp(QpInitAttr.rc(ecq));
        errQp.modify(new QpAttr().state(QpState.ERROR));
        errMr = cmrs[0];
    }

    /**
     * Closes the connections only. JMH's {@code -prof gc} counts the trial's teardown in the last
     * measured iteration, and deregistering 2,000 regions (each a copy-on-write of the key table)
     * would show up there as bytes per operation although it is no part of the data path; the
     * forked benchmark JVM ends right after, which releases the rest.
     */
    @TearDown(Level.Trial)
    public void tearDown() {
        conn.close();
        serverConn.close();
        listener.close();
    }

    @Benchmark
    public long writePostPoll() {
        int i = next;
        next = i + 1 == regions ? 0 : i + 1;
        MemoryRegion mr = cmrs[i];
        int rc = cqp.postSend(wr.reset().wrId(++id).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, mr.address(), 8, mr.lkey()).remote(remoteAddr[i], remoteKey[i]));
        if (rc != 0) {
            throw new IllegalStateException("postSend " + rc);
        }
        while (ccq.poll(wc) == 0) {
            server.progress();
        }
        if (wc.status() != WcStatus.SUCCESS) {
            throw new IllegalStateException(wc.status().toString());
        }
        server.progress(); // lets the responder's deferred work finish, as a DEDICATED target would
        return wc.wrId();
    }

    @Benchmark
    public long flushPostPoll() {
        int rc = errQp.postSend(wr.reset().wrId(++id).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, errMr.address(), 8, errMr.lkey()).remote(remoteAddr[0], remoteKey[0]));
        if (rc != 0) {
            throw new IllegalStateException("postSend " + rc);
        }
        while (ecq.poll(wc) == 0) {
            Thread.onSpinWait();
        }
        return wc.wrId();
    }

}

package io.jrdma.engine.roce;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionChannel;
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
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * The passive side of {@link UdpTwoProcessTest}, run in its own JVM: a soft-RoCE context on
 * the loopback device with a dedicated engine thread, a 64 MiB region (receives at 0, a
 * known pattern at 20 MiB, WRITE target at 40 MiB), receives re-posted as they complete. It prints its TCP port, accepts one
 * connection (private data: address, rkey), and exits when its standard input closes.
 */
public final class UdpPeerMain {
    static final int RECV_SIZE = 17 << 20;
    static final long PATTERN_OFFSET = 20L << 20;
    static final int PATTERN_SIZE = 17 << 20;

    public static void main(String[] args) throws Exception {
        String host = args.length > 0 ? args[0] : "127.0.0.1";
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(64L << 20, 4096);
            for (long i = 0; i < PATTERN_SIZE; i++) {
                buf.set(ValueLayout.JAVA_BYTE, PATTERN_OFFSET + i, pattern(i));
            }
            var dev = Rdma.resolve(InetAddress.getByName(host), io.jrdma.verbs.Transport.ROCE_V2).device();
            DeviceContext ctx = dev.open(DeviceOptions.defaults());
            ProtectionDomain pd = ctx.allocPd();
            CompletionChannel ch = ctx.createCompletionChannel();
            CompletionQueue cq = ctx.createCq(256, ch);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq).withDepth(64, 64));
            MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
                    | Access.REMOTE_ATOMIC);
            // as rdma_cm does: the QP is in INIT before the connection, so receives can be posted
            qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.INIT).pkeyIndex(0).portNum(1)
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
            RecvWorkRequest rwr = new RecvWorkRequest();
            for (int i = 0; i < 8; i++) {
                if (qp.postRecv(rwr.reset().wrId(i).sge(0, mr, 0, RECV_SIZE)) != 0) {
                    throw new IllegalStateException("postRecv failed");
                }
            }
            ConnectionManager cm = ctx.connectionManager();
            try (ConnectionManager.Listener l = cm.listen(new InetSocketAddress(InetAddress.getByName(host), 0))) {
                System.out.println("PORT " + l.address().getPort() + " UDP " + ctx.queryPort().udpPort());
                System.out.flush();
                ConnectionManager.ConnectRequest req = l.poll(Duration.ofSeconds(30));
                if (req == null) {
                    System.err.println("no connection request");
                    System.exit(2);
                }
                ByteBuffer pdata = ByteBuffer.allocate(12).putLong(mr.address()).putInt(mr.rkey());
                ConnectionManager.Connection c = req.accept(qp, ConnParam.defaults().withPrivateData(pdata.array()),
                        Duration.ofSeconds(10));
                Thread reposter = Thread.ofPlatform().daemon().start(() -> {
                    WorkCompletion wc = new WorkCompletion();
                    while (true) {
                        cq.requestNotify(false);
                        while (cq.poll(wc) > 0) {
                            qp.postRecv(new RecvWorkRequest().wrId(wc.wrId()).sge(0, mr, 0, RECV_SIZE));
                        }
                        ch.await(Duration.ofMillis(100));
                    }
                });
                while (System.in.read() >= 0) {
                    // wait for the test to close our stdin
                }
                reposter.interrupt();
                c.close();
            }
            System.exit(0);
        }
    }

    static byte pattern(long i) {
        return (byte) (i * 131 + (i >>> 9));
    }
}

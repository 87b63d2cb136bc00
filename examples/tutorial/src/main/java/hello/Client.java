package hello;

import io.jrdma.verbs.*;
import java.lang.foreign.*;
import java.net.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A client of {@link Service}: connects, adds to the counter in its region with
 * ATOMIC_FETCH_AND_ADD, writes a note there with RDMA WRITE, reads the counter back with RDMA
 * READ, sends a request and prints the reply; then disconnects, or with {@code --stay} stays
 * connected until the service disconnects it.
 *
 * <pre>java ... hello.Client PORT NAME [--stay]</pre>
 */
public class Client {
    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3 || (args.length == 3 && !args[2].equals("--stay"))) {
            throw new IllegalArgumentException("usage: hello.Client PORT NAME [--stay]");
        }
        InetAddress host = InetAddress.getByName("127.0.0.1");
        var service = new InetSocketAddress(host, Integer.parseInt(args[0]));
        String name = args[1];
        boolean stay = args.length == 3;
        Device dev = Rdma.resolve(host, Transport.ROCE_V2).device();

        try (Arena arena = Arena.ofShared();
             DeviceContext ctx = dev.open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(16);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq));
            MemorySegment buf = arena.allocate(4096, 4096);
            MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
            ConnectionManager.Connection conn;
            try {
                conn = ctx.connectionManager().connect(qp, service, ConnParam.defaults(), Duration.ofSeconds(10));
            } catch (ConnectionRejectedException e) {
                System.out.println(name + ": rejected: " + new String(e.privateData(), StandardCharsets.UTF_8));
                qp.close(); mr.close(); cq.close(); pd.close();
                return;
            }
            ByteBuffer where = ByteBuffer.wrap(conn.peerParam().privateData());
            long addr = where.getLong();
            int rkey = where.getInt();
            System.out.println(name + ": connected, a region of " + where.getInt() + " bytes");

            SendWorkRequest wr = new SendWorkRequest();
            WorkCompletion wc = new WorkCompletion();
            // three FETCH_ADDs on the counter (offset 0): each returns the value before it
            for (int i = 0; i < 3; i++) {
                post(qp, cq, wc, wr.reset().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                        .sge(0, mr, 0, 8).remote(addr, rkey).atomic(1, 0));
                System.out.println(name + ": FETCH_ADD 1 returned " + buf.get(ValueLayout.JAVA_LONG, 0));
            }
            // a note at offset 8, with RDMA WRITE; the counter read back with RDMA READ
            buf.setString(64, "hello from " + name);
            post(qp, cq, wc, wr.reset().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, mr, 64, 64).remote(addr + 8, rkey));
            post(qp, cq, wc, wr.reset().opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, mr, 128, 8).remote(addr, rkey));
            System.out.println(name + ": READ counter " + buf.get(ValueLayout.JAVA_LONG, 128));
            // a request (SEND) and its reply (into the receive posted first)
            if (qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, mr, 1024, 256)) != 0) {
                throw new IllegalStateException("receive not posted");
            }
            buf.setString(512, "status");
            if (qp.postSend(wr.reset().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, mr, 512, 7)) != 0) {
                throw new IllegalStateException("request not posted");
            }
            boolean sent = false, replied = false;
            while (!sent || !replied) {                   // the two completions, in either order
                await(cq, wc);
                sent |= wc.opcode() == WcOpcode.SEND;
                replied |= wc.opcode() == WcOpcode.RECV;
            }
            System.out.println(name + ": reply: " + buf.getString(1024));

            if (stay) {                                   // until the service disconnects (or this process dies)
                System.out.println(name + ": staying");
                while (conn.pollEvent(Duration.ofSeconds(1)) != ConnectionManager.Event.DISCONNECTED) { }
                System.out.println(name + ": the service disconnected");
            }
            conn.close();
            for (int i = 0; i < 4 && conn.pollEvent(Duration.ofSeconds(1)) != ConnectionManager.Event.TIMEWAIT_EXIT; i++) { }
            qp.close(); mr.close(); cq.close(); pd.close();
            System.out.println(name + ": done");
        }
    }

    /** Posts one signaled request and waits (at most 10 s) for its completion, which must succeed. */
    static void post(QueuePair qp, CompletionQueue cq, WorkCompletion wc, SendWorkRequest wr) {
        int err = qp.postSend(wr);
        if (err != 0) {
            throw new IllegalStateException(wr.opcode() + " not posted: errno " + err);
        }
        await(cq, wc);
    }

    /** Waits (at most 10 s) for the next completion, which must succeed. */
    static void await(CompletionQueue cq, WorkCompletion wc) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no completion within 10 s");
            }
            Thread.onSpinWait();
        }
        if (wc.status() != WcStatus.SUCCESS) {
            throw new IllegalStateException(wc.opcode() + " completed with " + wc.status());
        }
    }
}

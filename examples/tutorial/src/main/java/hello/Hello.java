package hello;

import io.jrdma.verbs.*;
import java.lang.foreign.*;
import java.net.*;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

public class Hello {
    public static void main(String[] args) throws Exception {
        InetAddress host = InetAddress.getByName("127.0.0.1");
        // the device whose interface routes to the peer, as rdma_resolve_addr picks it
        Device dev = Rdma.resolve(host, Transport.ROCE_V2).device();          // roce_lo

        try (Arena arena = Arena.ofShared();
             // the server's engine runs in its own thread: it serves WRITE/READ with no calls
             DeviceContext server = dev.open();
             // the client drives its engine from its own polling thread
             DeviceContext client = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {

            // --- server: a PD, a CQ, a QP, 1 MiB of registered memory
            ProtectionDomain spd = server.allocPd();
            CompletionQueue scq = server.createCq(64);
            QueuePair sqp = spd.createQp(QpInitAttr.rc(scq));
            MemorySegment sbuf = arena.allocate(1 << 20, 4096);
            MemoryRegion smr = spd.register(sbuf,
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);

            // --- client
            ProtectionDomain cpd = client.allocPd();
            CompletionQueue ccq = client.createCq(64);
            QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
            MemorySegment cbuf = arena.allocate(1 << 20, 4096);
            MemoryRegion cmr = cpd.register(cbuf, Access.LOCAL_WRITE);

            // --- connect: the server tells the client where its memory is in the private data
            var listener = server.connectionManager().listen(new InetSocketAddress(host, 0));
            var accepted = CompletableFuture.supplyAsync(() -> {
                var request = listener.poll(Duration.ofSeconds(10));
                byte[] where = ByteBuffer.allocate(12).putLong(smr.address()).putInt(smr.rkey()).array();
                return request.accept(sqp, ConnParam.defaults().withPrivateData(where), Duration.ofSeconds(10));
            });
            var conn = client.connectionManager().connect(cqp,
                    new InetSocketAddress(host, listener.address().getPort()),
                    ConnParam.defaults(), Duration.ofSeconds(10));
            var serverConn = accepted.get();
            ByteBuffer where = ByteBuffer.wrap(conn.peerParam().privateData());
            long remoteAddr = where.getLong();
            int rkey = where.getInt();

            // --- RDMA WRITE 4 KiB into the server's memory
            cbuf.setString(0, "hello, remote memory");
            SendWorkRequest wr = new SendWorkRequest();
            WorkCompletion wc = new WorkCompletion();
            cqp.postSend(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 0, 4096).remote(remoteAddr, rkey));
            while (ccq.poll(wc) == 0) { }                     // INVOKER: poll drives the engine
            System.out.println(wc.status() + ": " + sbuf.getString(0));

            // --- RDMA READ it back into another part of the client's buffer
            cqp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 8192, 4096).remote(remoteAddr, rkey));
            while (ccq.poll(wc) == 0) { }
            System.out.println(wc.status() + ": " + cbuf.getString(8192));

            // --- SEND with immediate data into a receive the server posted
            sqp.postRecv(new RecvWorkRequest().wrId(7).sge(0, smr, 65536, 4096));
            cqp.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 0, 64).imm(42));
            while (ccq.poll(wc) == 0) { }
            while (scq.poll(wc) == 0) { Thread.onSpinWait(); }  // DEDICATED: the engine thread fills it
            System.out.println(wc.opcode() + " " + wc.byteLen() + " bytes, imm " + wc.imm());

            conn.close(); serverConn.close(); listener.close();
            cqp.close(); cmr.close(); ccq.close(); cpd.close();
            sqp.close(); smr.close(); scq.close(); spd.close();
        }
    }
}

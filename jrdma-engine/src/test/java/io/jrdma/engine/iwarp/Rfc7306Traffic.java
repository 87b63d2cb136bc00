package io.jrdma.engine.iwarp;

import io.jrdma.verbs.*;

import java.lang.foreign.*;
import java.net.*;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Not a test: the program that made {@code testdata/pcaps/jrdma-iwarp-rfc7306.pcap}. Two jrdma
 * iWARP peers on 127.0.0.1 (MPA with CRC, the jrdma trailer, so RFC 7306 is on) run, in order: an
 * 8-byte RDMA READ, a FETCH_AND_ADD, a CMP_AND_SWP, a SEND_WITH_IMM of 0 bytes (a plain RFC 7306
 * Immediate Data message), a SEND_WITH_IMM of 16 bytes with SOLICITED, an RDMA_WRITE_WITH_IMM of
 * 8 bytes. The values are fixed (below); STags and addresses are whatever the run gets.
 *
 * <pre>
 * tcpdump -i lo -U -w /tmp/rfc7306.pcap tcp port 19306 &amp;
 * java -cp jrdma-engine/target/test-classes:jrdma-engine/target/classes:jrdma-verbs/target/classes:\
 *      jrdma-wire/target/classes io.jrdma.engine.iwarp.Rfc7306Traffic 19306
 * tshark -r /tmp/rfc7306.pcap -O iwarp_ddp_rdmap      # MPA is found by its key, no -d needed
 * </pre>
 */
public final class Rfc7306Traffic {
    private Rfc7306Traffic() {
    }

    static final long TARGET_BEFORE = 0x1111_1111_1111_1111L;
    static final long ADD = 0x0000_0001_0000_0002L;
    static final long COMPARE = 0x1111_1112_1111_1113L; // TARGET_BEFORE + ADD
    static final long SWAP = 0x2222_2222_2222_2222L;
    static final int IMM_EMPTY = 0x1234_5678;
    static final int IMM_SEND = 0xCAFE_BABE;
    static final int IMM_WRITE = 0x0BAD_F00D;

    private static void poll(CompletionQueue cq, WorkCompletion wc, String what) {
        long end = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            if (System.nanoTime() - end > 0) {
                throw new IllegalStateException("no completion for " + what);
            }
            Thread.onSpinWait();
        }
        System.out.printf("%-24s %s %s len=%d imm=0x%08x%n", what, wc.status(), wc.opcode(), wc.byteLen(), wc.imm());
        if (wc.status() != WcStatus.SUCCESS) {
            throw new IllegalStateException(what + ": " + wc);
        }
    }

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 19306;
        InetAddress host = InetAddress.getByName("127.0.0.1");
        Device dev = Rdma.resolve(host, io.jrdma.verbs.Transport.IWARP).device();
        try (Arena arena = Arena.ofShared();
             DeviceContext server = dev.open();
             DeviceContext client = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER))) {
            ProtectionDomain spd = server.allocPd();
            CompletionQueue scq = server.createCq(64);
            QueuePair sqp = spd.createQp(QpInitAttr.rc(scq));
            MemorySegment sbuf = arena.allocate(1 << 16, 4096);
            MemoryRegion smr = spd.register(sbuf,
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
            ProtectionDomain cpd = client.allocPd();
            CompletionQueue ccq = client.createCq(64);
            QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
            MemorySegment cbuf = arena.allocate(1 << 16, 4096);
            MemoryRegion cmr = cpd.register(cbuf, Access.LOCAL_WRITE);
            var listener = server.connectionManager().listen(new InetSocketAddress(host, port));
            var accepted = CompletableFuture.supplyAsync(() -> listener.poll(Duration.ofSeconds(10))
                    .accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10)));
            var conn = client.connectionManager().connect(cqp, new InetSocketAddress(host, port),
                    ConnParam.defaults(), Duration.ofSeconds(10));
            var serverConn = accepted.get();
            long target = smr.address() + 0x100;
            int rkey = smr.rkey();
            System.out.printf("server STag 0x%08x, target TO 0x%016x; client STag 0x%08x, buffer 0x%016x%n",
                    rkey, target, cmr.lkey(), cmr.address());
            sbuf.set(ValueLayout.JAVA_LONG, 0x100, TARGET_BEFORE);
            SendWorkRequest wr = new SendWorkRequest();
            WorkCompletion wc = new WorkCompletion();

            cqp.postSend(wr.reset().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 0x300, 8).remote(target, rkey));
            poll(ccq, wc, "RDMA_READ 8 B");
            cqp.postSend(wr.reset().wrId(2).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 0, 8).remote(target, rkey).atomic(ADD, 0));
            poll(ccq, wc, "ATOMIC_FETCH_AND_ADD");
            cqp.postSend(wr.reset().wrId(3).opcode(WrOpcode.ATOMIC_CMP_AND_SWP).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 8, 8).remote(target, rkey).atomic(COMPARE, SWAP));
            poll(ccq, wc, "ATOMIC_CMP_AND_SWP");
            System.out.printf("originals 0x%016x 0x%016x, target now 0x%016x%n", cbuf.get(ValueLayout.JAVA_LONG, 0),
                    cbuf.get(ValueLayout.JAVA_LONG, 8), sbuf.get(ValueLayout.JAVA_LONG, 0x100));

            sqp.postRecv(new RecvWorkRequest().wrId(10).sge(0, smr, 0x1000, 256));
            cqp.postSend(wr.reset().wrId(4).opcode(WrOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED).numSge(0)
                    .imm(IMM_EMPTY));
            poll(ccq, wc, "SEND_WITH_IMM 0 B");
            poll(scq, wc, "  receive");
            cbuf.setString(0x200, "RFC 7306 imm!!!"); // 15 characters and the NUL: 16 bytes
            sqp.postRecv(new RecvWorkRequest().wrId(11).sge(0, smr, 0x1000, 256));
            cqp.postSend(wr.reset().wrId(5).opcode(WrOpcode.SEND_WITH_IMM)
                    .flags(SendFlags.SIGNALED | SendFlags.SOLICITED).sge(0, cmr, 0x200, 16).imm(IMM_SEND));
            poll(ccq, wc, "SEND_WITH_IMM 16 B, SE");
            poll(scq, wc, "  receive");
            sqp.postRecv(new RecvWorkRequest().wrId(12).sge(0, smr, 0x1000, 256));
            cqp.postSend(wr.reset().wrId(6).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 0x200, 8).remote(smr.address() + 0x2000, rkey).imm(IMM_WRITE));
            poll(ccq, wc, "RDMA_WRITE_WITH_IMM 8 B");
            poll(scq, wc, "  receive");

            conn.close();
            serverConn.close();
            listener.close();
            cqp.close();
            cmr.close();
            ccq.close();
            cpd.close();
            sqp.close();
            smr.close();
            scq.close();
            spd.close();
        }
    }
}

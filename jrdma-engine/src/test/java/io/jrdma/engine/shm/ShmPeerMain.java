package io.jrdma.engine.shm;

import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.WorkCompletion;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.zip.CRC32;

/**
 * The target of {@link ShmTwoProcessTest}, in its own JVM: an shm0 context with a dedicated engine
 * thread and a 4 MiB buffer from allocateBuffer registered with every access. It prints its side
 * channel's port, accepts one connection (private data: address and rkey of that buffer, then of 1 MiB of
 * its own memory from a plain arena, registered with remote read and write: peers reach it by cross-memory attach),
 * posts receives, and then
 * answers commands on standard input: {@code crc <offset> <length>} prints the CRC-32 of its shared
 * buffer's bytes ({@code owncrc}: of its own memory's), {@code recv} prints the next receive completion ("status byteLen imm"), {@code post <n>} posts
 * n more receives (and prints "posted"), EOF exits.
 */
public final class ShmPeerMain {
    static final int SIZE = 4 << 20;
    static final int OWN = 1 << 20;

    public static void main(String[] args) throws Exception {
        try (Arena arena = Arena.ofShared(); DeviceContext ctx = ShmDevice.INSTANCE.open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(64);
            QueuePair qp = pd.createQp(QpInitAttr.rc(cq).withDepth(16, 16));
            MemorySegment buf = ctx.allocateBuffer(SIZE, 4096, arena);
            MemoryRegion mr = pd.register(buf, ShmPair.ALL);
            // memory of its own (not allocateBuffer's): peers reach it by cross-memory attach
            MemorySegment own = arena.allocate(OWN, 4096);
            MemoryRegion ownMr = pd.register(own, io.jrdma.verbs.Access.LOCAL_WRITE | io.jrdma.verbs.Access.REMOTE_WRITE
                    | io.jrdma.verbs.Access.REMOTE_READ);
            var listener = ctx.connectionManager().listen(new InetSocketAddress("127.0.0.1", 0));
            System.out.println(listener.address().getPort());
            System.out.flush();
            var req = listener.poll(Duration.ofSeconds(30));
            byte[] where = ByteBuffer.allocate(24).putLong(mr.address()).putInt(mr.rkey())
                    .putLong(ownMr.address()).putInt(ownMr.rkey()).array();
            var conn = req.accept(qp, ConnParam.defaults().withPrivateData(where), Duration.ofSeconds(30));
            RecvWorkRequest rwr = new RecvWorkRequest();
            for (int i = 0; i < 4; i++) {
                qp.postRecv(rwr.reset().wrId(i).sge(0, mr, SIZE - 65536, 65536));
            }
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            WorkCompletion wc = new WorkCompletion();
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                if (w[0].equals("post")) {
                    for (int i = 0; i < Integer.parseInt(w[1]); i++) {
                        if (qp.postRecv(rwr.reset().wrId(100 + i).sge(0, mr, SIZE - 65536, 65536)) != 0) {
                            throw new IllegalStateException("postRecv");
                        }
                    }
                    System.out.println("posted");
                } else if (w[0].equals("crc") || w[0].equals("owncrc")) {
                    CRC32 crc = new CRC32();
                    crc.update((w[0].equals("crc") ? buf : own).asSlice(Long.parseLong(w[1]), Long.parseLong(w[2])).asByteBuffer());
                    System.out.println(crc.getValue());
                } else if (w[0].equals("recv")) {
                    long deadline = System.nanoTime() + 10_000_000_000L;
                    while (cq.poll(wc) == 0 && System.nanoTime() < deadline) {
                        Thread.onSpinWait();
                    }
                    System.out.println(wc.status() + " " + wc.byteLen() + " " + wc.imm());
                }
                System.out.flush();
            }
            conn.close();
            listener.close();
            qp.close();
            ownMr.close();
            mr.close();
            cq.close();
            pd.close();
        }
    }
}

package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Grh;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The peer of {@link ShmUdRingTest}'s two-process test, in its own JVM: an shm0 context (dedicated engine thread)
 * with a UD QP in RTS, Q_Key {@code args[0]}. It prints its GID and QPN ("gid qpn"), then answers each 8-byte
 * datagram with its value plus one, to the sender's QP through an address handle made from the datagram's GRH
 * ({@code initAhFromWc}), until it is killed or 60 s pass.
 */
public final class ShmUdEchoMain {
    public static void main(String[] args) throws Exception {
        int qkey = Integer.parseInt(args[0]);
        try (Arena arena = Arena.ofShared(); DeviceContext ctx = ShmDevice.INSTANCE.open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(64);
            QueuePair qp = pd.createQp(QpInitAttr.ud(cq).withDepth(16, 16));
            MemorySegment buf = ctx.allocateBuffer(1 << 16, 4096, arena);
            MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(qkey));
            qp.modify(new QpAttr().state(QpState.RTR));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            RecvWorkRequest rwr = new RecvWorkRequest();
            for (int i = 0; i < 8; i++) {
                qp.postRecv(rwr.reset().wrId(i).sge(0, mr, 4096 + i * 64L, Grh.LENGTH + 8));
            }
            System.out.println(ctx.gid(0) + " " + qp.qpn());
            System.out.flush();
            WorkCompletion wc = new WorkCompletion();
            SendWorkRequest wr = new SendWorkRequest();
            AddressHandle back = null;
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (System.nanoTime() < deadline) {
                if (cq.poll(wc) == 0) {
                    Thread.onSpinWait();
                    continue;
                }
                if (wc.status() != WcStatus.SUCCESS) {
                    throw new IllegalStateException("completion " + wc);
                }
                if (wc.opcode() != io.jrdma.verbs.WcOpcode.RECV) {
                    continue; // the answer's own completion
                }
                long at = 4096 + wc.wrId() * 64;
                if (back == null) {
                    back = pd.createAh(ctx.initAhFromWc(1, wc, buf.asSlice(at, Grh.LENGTH)));
                }
                buf.set(ValueLayout.JAVA_LONG, 0, buf.get(ValueLayout.JAVA_LONG, at + Grh.LENGTH) + 1);
                int src = wc.srcQp();
                qp.postRecv(rwr.reset().wrId(wc.wrId()).sge(0, mr, at, Grh.LENGTH + 8));
                qp.postSend(wr.reset().wrId(1).flags(SendFlags.SIGNALED).sge(0, mr, 0, 8).ud(back, src, qkey));
            }
        }
    }
}

package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SEND/RECV through the receiver's inbound ring: immediate data, invalidate, multi-slot messages, RNR, errors. */
class ShmSendRecvTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void sendsOfEverySizeArriveInOrderWithImmediateData(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 22)) {
            int[] sizes = {0, 1, 8, 8191, 8192, 8193, 65536, 1 << 20};
            for (int i = 0; i < sizes.length; i++) {
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(100 + i).sge(0, p.b.mr, 2L << 20, 2 << 20)));
                for (int k = 0; k < sizes[i]; k++) {
                    p.a.buf.set(ValueLayout.JAVA_BYTE, k, (byte) (k * 13 + i));
                }
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM)
                        .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, sizes[i]).imm(0x1000 + i)));
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status());
                assertEquals(WcOpcode.RECV, r.opcode());
                assertEquals(100 + i, r.wrId());
                assertEquals(sizes[i], r.byteLen());
                assertEquals(0x1000 + i, r.imm());
                assertTrue((r.flags() & WorkCompletion.WITH_IMM) != 0);
                assertEquals(-1, p.a.buf.asSlice(0, sizes[i]).mismatch(p.b.buf.asSlice(2L << 20, sizes[i])), "size "
                        + sizes[i]);
                WorkCompletion s = p.await(p.a.cq);
                assertEquals(WcStatus.SUCCESS, s.status());
                assertEquals(WcOpcode.SEND, s.opcode());
                assertEquals(i, s.wrId());
            }
        }
    }

    @Test
    void writeWithImmediateConsumesAReceive() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9)));
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 4242);
            WorkCompletion s = p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address() + 64, p.b.mr.rkey()).imm(7));
            assertEquals(WcStatus.SUCCESS, s.status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode());
            assertEquals(7, r.imm());
            assertEquals(8, r.byteLen());
            assertEquals(4242, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
        }
    }

    @Test
    void sendWithInvalidateMakesTheKeyUnreachable() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion target = p.b.pd.register(p.b.buf.asSlice(8192, 4096), ShmPair.ALL | Access.REMOTE_INVALIDATE);
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(target.address(), target.rkey())).status());
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 64)));
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(2).opcode(WrOpcode.SEND_WITH_INV)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).invalidate(target.rkey())).status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status());
            assertTrue((r.flags() & WorkCompletion.WITH_INV) != 0);
            assertEquals(target.rkey(), r.imm());
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(3).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(target.address(), target.rkey())).status());
            target.close();
        }
    }

    @Test
    void withoutAReceiveTheSenderRetriesAfterTheRnrTimer() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 20_000)));
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < 1000; i++) {
                p.a.ctx.progress();
                p.b.ctx.progress();
                assertEquals(0, p.a.cq.poll(wc), "a SEND completed with no receive posted");
            }
            assertTrue(p.b.ctx.counters().getOrDefault("send_rnr_err", 0L) > 0, "RNR counted: " + p.b.ctx.counters());
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 32768)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(20_000, r.byteLen());
            assertEquals(5, r.wrId());
        }
    }

    @Test
    void rnrRetriesRunOut() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.qp.modify(new io.jrdma.verbs.QpAttr().rnrRetry(2));
            WorkCompletion wc = p.run(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8));
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status());
            assertEquals(QpState.ERROR, p.a.qp.state());
        }
    }

    @Test
    void aMessageLongerThanTheReceiveIsRefused() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 16)));
            WorkCompletion s = p.run(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 17));
            assertEquals(WcStatus.REM_INV_REQ_ERR, s.status());
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.LOC_LEN_ERR, r.status());
            assertEquals(QpState.ERROR, p.b.qp.state());
        }
    }
}

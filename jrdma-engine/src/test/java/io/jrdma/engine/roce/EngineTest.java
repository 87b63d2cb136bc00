package io.jrdma.engine.roce;

import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Protocol paths of the engine on the in-memory network with a manual clock. */
class EngineTest {
    static final int MTU = 1024;
    static final int BUF = 1 << 20;

    static void fill(MemorySegment s, long off, int len, int seed) {
        for (int i = 0; i < len; i++) {
            s.set(ValueLayout.JAVA_BYTE, off + i, (byte) (seed * 31 + i * 7));
        }
    }

    static void check(MemorySegment s, long off, int len, int seed) {
        for (int i = 0; i < len; i++) {
            byte want = (byte) (seed * 31 + i * 7);
            byte got = s.get(ValueLayout.JAVA_BYTE, off + i);
            if (want != got) {
                throw new AssertionError("byte " + i + " of " + len + ": want " + want + ", got " + got);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, MTU - 1, MTU, MTU + 1, 65536, 300_000})
    void writeMovesDataAndCompletes(int size) {
        try (Pair p = new Pair(Mtu.MTU_1024, BUF)) {
            fill(p.a.buf, 0, size, 3);
            SendWorkRequest wr = new SendWorkRequest().wrId(42).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, size).remote(p.b.mr.address() + 16, p.b.mr.rkey());
            assertEquals(0, p.a.qp.postSend(wr));
            assertTrue(p.pump(() -> !p.a.completions.isEmpty(), 100_000));
            WorkCompletion wc = p.a.completions.getFirst();
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
            assertEquals(42, wc.wrId());
            check(p.b.buf, 16, size, 3);
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_BYTE, 16 + size));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, MTU - 1, MTU, MTU + 1, 65536, 300_000})
    void readFetchesData(int size) {
        try (Pair p = new Pair(Mtu.MTU_1024, BUF)) {
            fill(p.b.buf, 100, size, 5);
            SendWorkRequest wr = new SendWorkRequest().wrId(7).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 8, size).remote(p.b.mr.address() + 100, p.b.mr.rkey());
            assertEquals(0, p.a.qp.postSend(wr));
            assertTrue(p.pump(() -> !p.a.completions.isEmpty(), 100_000));
            WorkCompletion wc = p.a.completions.getFirst();
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(WcOpcode.RDMA_READ, wc.opcode());
            assertEquals(size, wc.byteLen());
            check(p.a.buf, 8, size, 5);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, MTU - 1, MTU, MTU + 1, 65536})
    void sendWithImmLandsInReceive(int size) {
        try (Pair p = new Pair(Mtu.MTU_1024, BUF)) {
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(9).sge(0, p.b.mr, 0, 70_000)));
            fill(p.a.buf, 0, size, 11);
            SendWorkRequest wr = new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND_WITH_IMM)
                    .flags(SendFlags.SIGNALED | SendFlags.SOLICITED).sge(0, p.a.mr, 0, size).imm(0xCAFEBABE);
            assertEquals(0, p.a.qp.postSend(wr));
            assertTrue(p.pump(() -> !p.a.completions.isEmpty() && !p.b.completions.isEmpty(), 100_000));
            WorkCompletion r = p.b.completions.getFirst();
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(WcOpcode.RECV, r.opcode());
            assertEquals(size, r.byteLen());
            assertEquals(0xCAFEBABE, r.imm());
            assertTrue(r.hasImm());
            assertTrue((r.flags() & WorkCompletion.SOLICITED) != 0);
            assertEquals(p.a.qp.qpn(), r.srcQp());
            check(p.b.buf, 0, size, 11);
            assertEquals(WcStatus.SUCCESS, p.a.completions.getFirst().status());
        }
    }

    @Test
    void writeWithImmConsumesReceive() {
        try (Pair p = new Pair(Mtu.MTU_1024, BUF)) {
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(5)));
            fill(p.a.buf, 0, 5000, 2);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .sge(0, p.a.mr, 0, 5000).remote(p.b.mr.address(), p.b.mr.rkey()).imm(77)));
            assertTrue(p.pump(() -> !p.b.completions.isEmpty(), 100_000));
            WorkCompletion r = p.b.completions.getFirst();
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode());
            assertEquals(5000, r.byteLen());
            assertEquals(77, r.imm());
            check(p.b.buf, 0, 5000, 2);
            assertTrue(p.pump(() -> p.a.qpImpl().sqConsumer == 1, 10_000), "unsignaled WRITE retired by its ACK");
            assertTrue(p.a.completions.isEmpty(), "unsignaled: no completion");
        }
    }

    @Test
    void atomicsExecuteOnRemoteMemory() {
        try (Pair p = new Pair(Mtu.MTU_1024, BUF)) {
            p.b.buf.set(ValueLayout.JAVA_LONG, 64, 100L);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(p.b.mr.address() + 64, p.b.mr.rkey())
                    .atomic(5, 0)));
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 8, 8).remote(p.b.mr.address() + 64, p.b.mr.rkey())
                    .atomic(105, 999)));
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 16, 8).remote(p.b.mr.address() + 64, p.b.mr.rkey())
                    .atomic(1, 2)));
            assertTrue(p.pump(() -> p.a.completions.size() == 3, 100_000));
            for (WorkCompletion wc : p.a.completions) {
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            }
            assertEquals(WcOpcode.FETCH_ADD, p.a.completions.get(0).opcode());
            assertEquals(WcOpcode.COMP_SWAP, p.a.completions.get(1).opcode());
            assertEquals(100L, p.a.buf.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(105L, p.a.buf.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(999L, p.a.buf.get(ValueLayout.JAVA_LONG, 16), "failed compare returns the current value");
            assertEquals(999L, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
        }
    }

    @Test
    void aReplyPostedOnSeeingTheDataLeavesBeforeTheDeferredAck() {
        try (Pair p = new Pair(Mtu.MTU_1024, BUF)) {
            p.net.capture = true;
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey());
            assertEquals(0, p.a.qp.postSend(wr));
            p.a.ctx.progress();                       // a sends its WRITE
            p.net.clock.now += 10_000;
            p.b.ctx.progress();                       // b places it; its ACK waits one cycle
            assertEquals(1, p.net.captured.size(), "no ACK in the cycle that received the WRITE");
            assertEquals(0, p.b.qp.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
                    .sge(0, p.b.mr, 0, 8).remote(p.a.mr.address(), p.a.mr.rkey())));
            p.b.ctx.progress();                       // the reply first, then the ACK
            assertEquals(3, p.net.captured.size());
            assertEquals(io.jrdma.wire.IbOpcode.RC_RDMA_WRITE_ONLY, p.net.captured.get(1)[0] & 0xFF);
            assertEquals(io.jrdma.wire.IbOpcode.RC_ACKNOWLEDGE, p.net.captured.get(2)[0] & 0xFF);
            assertTrue(p.pump(() -> !p.a.completions.isEmpty(), 10_000));
            assertEquals(WcStatus.SUCCESS, p.a.completions.getFirst().status());
        }
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.Counter;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Error paths: every one completes with the IBA status, touches no memory outside a region, and flushes. */
class ErrorPathTest {
    private static SendWorkRequest write(Pair p, long remote, int rkey, int len) {
        return new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 0, len).remote(remote, rkey);
    }

    private static WorkCompletion first(Pair p) {
        assertTrue(p.pump(() -> !p.a.completions.isEmpty(), 1_000_000), "no completion");
        return p.a.completions.getFirst();
    }

    /**
     * The responder checks each WRITE packet's range through the rkey again (found in review; rxe's check_rkey per
     * packet): the target region deregistered after the first half of a WRITE was placed, the rest is refused with a
     * remote access NAK (the WRITE completes REM_ACCESS_ERR) and not one more byte is written. Before, every later
     * packet was placed through the region found at the first.
     */
    @Test
    void aWriteWhoseTargetIsDeregisteredPartWayIsRefusedFromThere() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            int len = 1 << 19; // 512 packets: A sends 129 (RoceQp.MAX_UNACKED_PSNS) before B's first ACK
            MemoryRegion target = p.b.pd.register(p.b.buf.asSlice(0, len), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            p.a.buf.asSlice(0, len).fill((byte) 7);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, len).remote(target.address(), target.rkey()));
            for (int i = 0; i < 4; i++) {
                p.a.ctx.progress();
            }
            long sent = p.net.sent;
            assertTrue(sent > 32 && sent < len / 1024, "part of the WRITE is sent: " + sent);
            p.net.clock.now += 2_000;
            p.b.ctx.progress(); // placed
            assertEquals(7, p.b.buf.get(ValueLayout.JAVA_BYTE, 31 * 1024), "the first packets are placed");
            target.close();
            WorkCompletion wc = first(p);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), wc.toString());
            for (long i = sent * 1024; i < len; i++) {
                assertEquals(0, p.b.buf.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " written after the deregistration");
            }
        }
    }

    /**
     * The responder checks each READ response packet's range through the rkey again (found in review; rxe's
     * rxe_recheck_mr): the source region deregistered and its memory freed after the first responses went out, the
     * rest are not sent, the requester gets a remote access NAK (REM_ACCESS_ERR) and nothing escapes the duty cycle.
     * Before, the next response's copy threw IllegalStateException out of every cycle.
     */
    @Test
    void aReadWhoseSourceIsFreedPartWayEndsWithARemoteAccessError() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            java.lang.foreign.Arena own = java.lang.foreign.Arena.ofShared();
            MemorySegment src = own.allocate(1 << 16, 4096);
            src.fill((byte) 9);
            MemoryRegion source = p.b.pd.register(src, Access.LOCAL_WRITE | Access.REMOTE_READ);
            p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 1 << 16).remote(source.address(), source.rkey()));
            p.a.ctx.progress(); // the READ request
            p.net.clock.now += 2_000;
            p.b.ctx.progress(); // the first 32 responses
            source.close();
            own.close();
            WorkCompletion wc = first(p);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), wc.toString());
            assertEquals(9, p.a.buf.get(ValueLayout.JAVA_BYTE, 0), "the first responses were placed");
            for (long i = 32 * 1024; i < 1 << 16; i++) {
                assertEquals(0, p.a.buf.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " placed after the free");
            }
        }
    }

    @Test
    void badRkeyIsRemoteAccessErrorAndFlushesTheRest() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            EngineTest.fill(p.a.buf, 0, 100, 1);
            assertEquals(0, p.a.qp.postSend(write(p, p.b.mr.address(), p.b.mr.rkey() ^ 0x5a5a, 100)));
            assertEquals(0, p.a.qp.postSend(write(p, p.b.mr.address(), p.b.mr.rkey(), 100).wrId(2)));
            assertTrue(p.pump(() -> p.a.completions.size() == 2, 1_000_000));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.a.completions.get(0).status());
            assertEquals(WcStatus.WR_FLUSH_ERR, p.a.completions.get(1).status());
            assertEquals(QpState.ERROR, p.a.qp.state());
            assertEquals(QpState.ERROR, p.b.qp.state(), "the responder QP goes to ERROR too");
            assertEquals(0L, p.b.buf.get(ValueLayout.JAVA_LONG, 0), "nothing written");
            // posting on an ERROR QP completes with WR_FLUSH_ERR
            assertEquals(0, p.a.qp.postSend(write(p, p.b.mr.address(), p.b.mr.rkey(), 8).wrId(3)));
            assertTrue(p.pump(() -> p.a.completions.size() == 3, 10_000));
            assertEquals(WcStatus.WR_FLUSH_ERR, p.a.completions.get(2).status());
        }
    }

    @Test
    void outOfBoundsWriteAndReadAreRefusedWithoutTouchingMemory() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            // a second, small region inside b's buffer: 64 bytes at offset 4096
            MemorySegment small = p.b.buf.asSlice(4096, 64);
            MemoryRegion mr = p.b.pd.register(small, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            EngineTest.fill(p.a.buf, 0, 100, 1);
            assertEquals(0, p.a.qp.postSend(write(p, mr.address() + 8, mr.rkey(), 57)));
            WorkCompletion wc = first(p);
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            for (int i = 0; i < 8192; i++) {
                assertEquals(0, p.b.buf.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " untouched");
            }
            mr.close();
        }
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            MemoryRegion mr = p.b.pd.register(p.b.buf.asSlice(0, 64), Access.REMOTE_READ);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 65).remote(mr.address(), mr.rkey())));
            assertEquals(WcStatus.REM_ACCESS_ERR, first(p).status());
            mr.close();
        }
    }

    @Test
    void missingAccessFlagIsRemoteAccessError() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            MemoryRegion ro = p.b.pd.register(p.b.buf.asSlice(0, 4096), Access.REMOTE_READ);
            assertEquals(0, p.a.qp.postSend(write(p, ro.address(), ro.rkey(), 16)));
            assertEquals(WcStatus.REM_ACCESS_ERR, first(p).status());
            assertEquals(0L, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            ro.close();
        }
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            MemoryRegion noAtomic = p.b.pd.register(p.b.buf.asSlice(0, 4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(noAtomic.address(), noAtomic.rkey())
                    .atomic(1, 0)));
            assertEquals(WcStatus.REM_ACCESS_ERR, first(p).status());
            noAtomic.close();
        }
    }

    @Test
    void badLkeyIsLocalProtectionError() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr.address(), 100, p.a.mr.lkey() + 1)
                    .remote(p.b.mr.address(), p.b.mr.rkey())));
            WorkCompletion wc = first(p);
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status());
            assertEquals(9, wc.wrId());
            assertEquals(QpState.ERROR, p.a.qp.state());
        }
    }

    @Test
    void misalignedAtomicIsRejectedAtPost() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            int rc = p.a.qp.postSend(new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address() + 4, p.b.mr.rkey()));
            assertEquals(RdmaException.Errno.EINVAL.value(), rc);
        }
    }

    @Test
    void postingInTheWrongStateIsEinval() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            p.a.qp.modify(new QpAttr().state(QpState.RESET));
            assertEquals(RdmaException.Errno.EINVAL.value(), p.a.qp.postSend(write(p, p.b.mr.address(), p.b.mr.rkey(), 8)));
            assertEquals(RdmaException.Errno.EINVAL.value(), p.a.qp.postRecv(new RecvWorkRequest()));
            RdmaException e = assertThrows(RdmaException.class, () -> p.a.qp.modify(new QpAttr().state(QpState.RTS)));
            assertTrue(e.getMessage().contains("RESET -> RTS"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> p.a.qp.modify(new QpAttr().state(QpState.INIT)));
            assertTrue(e.getMessage().contains("PKEY_INDEX"), e.getMessage());
        }
    }

    @Test
    void noReceiveWithRnrRetryZeroFails() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536, 7, 0, 14)) {
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 10)));
            WorkCompletion wc = first(p);
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status());
            assertTrue(p.b.ctx.counter(Counter.SEND_RNR_ERR) > 0);
            assertTrue(p.a.ctx.counter(Counter.RCVD_RNR_ERR) > 0);
        }
    }

    @Test
    void noReceiveWithRetriesSucceedsOnceOneIsPosted() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536, 7, 3, 14)) {
            EngineTest.fill(p.a.buf, 0, 3000, 4);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 3000)));
            assertTrue(p.pump(() -> p.a.ctx.counter(Counter.RCVD_RNR_ERR) >= 2, 100_000), "two RNR NAKs");
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(8).sge(0, p.b.mr, 0, 4096)));
            WorkCompletion wc = first(p);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertTrue(p.pump(() -> !p.b.completions.isEmpty(), 100_000));
            assertEquals(3000, p.b.completions.getFirst().byteLen());
            EngineTest.check(p.b.buf, 0, 3000, 4);
        }
    }

    @Test
    void infiniteRnrRetryWaitsAsLongAsItTakes() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536, 7, 7, 14)) {
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 10)));
            assertTrue(p.pump(() -> p.a.ctx.counter(Counter.RCVD_RNR_ERR) >= 20, 1_000_000));
            assertTrue(p.a.completions.isEmpty());
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(8).sge(0, p.b.mr, 0, 4096)));
            assertEquals(WcStatus.SUCCESS, first(p).status());
        }
    }

    @Test
    void peerGoneIsRetryExceeded() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536, 3, 7, 10)) {
            p.net.partitioned = true;
            long start = p.net.clock.now;
            assertEquals(0, p.a.qp.postSend(write(p, p.b.mr.address(), p.b.mr.rkey(), 100)));
            assertEquals(0, p.a.qp.postSend(write(p, p.b.mr.address(), p.b.mr.rkey(), 100).wrId(2)));
            assertTrue(p.pump(() -> p.a.completions.size() == 2, 1_000_000));
            assertEquals(WcStatus.RETRY_EXC_ERR, p.a.completions.get(0).status());
            assertEquals(WcStatus.WR_FLUSH_ERR, p.a.completions.get(1).status());
            long elapsed = p.net.clock.now - start;
            long timeout = 4096L << 10;
            assertTrue(elapsed >= 4 * timeout && elapsed < 6 * timeout, "1 try + 3 retries, each one timeout: " + elapsed);
            assertEquals(1, p.a.ctx.counter(Counter.RETRY_EXCEEDED_ERR));
        }
    }

    @Test
    void receiveTooSmallIsLengthErrorAndInvalidRequest() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(8).sge(0, p.b.mr, 0, 100)));
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 2000)));
            assertTrue(p.pump(() -> !p.a.completions.isEmpty() && !p.b.completions.isEmpty(), 100_000));
            assertEquals(WcStatus.REM_INV_REQ_ERR, p.a.completions.getFirst().status());
            assertEquals(WcStatus.LOC_LEN_ERR, p.b.completions.getFirst().status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_BYTE, 100), "nothing past the receive buffer");
        }
    }

    @Test
    void modifyToErrorFlushesReceiveQueue() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            for (int i = 0; i < 3; i++) {
                assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(i).sge(0, p.b.mr, 0, 100)));
            }
            p.b.qp.modify(new QpAttr().state(QpState.ERROR));
            assertTrue(p.pump(() -> p.b.completions.size() == 3, 10_000));
            for (WorkCompletion wc : p.b.completions) {
                assertEquals(WcStatus.WR_FLUSH_ERR, wc.status());
            }
        }
    }

    @Test
    void fullSendQueueIsEnomem() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            p.net.partitioned = true;
            SendWorkRequest wr = write(p, p.b.mr.address(), p.b.mr.rkey(), 8);
            for (int i = 0; i < 512; i++) {
                assertEquals(0, p.a.qp.postSend(wr));
            }
            assertEquals(RdmaException.Errno.ENOMEM.value(), p.a.qp.postSend(wr));
        }
    }
}

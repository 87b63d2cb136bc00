package io.jrdma.engine.shm;

import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The checks of a post on shm0, where an INVOKER post of one SGE takes the short path to the direct execution
 * (Qp.postSend): each request below fails one check of libibverbs' (rxe's) post and must be refused at post with
 * EINVAL, complete nothing and touch nothing in the target's memory, whichever path it would have taken; the QP
 * then carries a valid request as before.
 */
class ShmPostChecksTest {
    private static final long TARGET = 8192;
    private static final long WORD = 0x0102030405060708L;

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void requestsThatFailACheckAreRefusedAtPostAndChangeNothing(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 20)) {
            long remote = p.b.mr.address() + TARGET;
            for (long off = -16; off < 24; off += 8) {
                p.b.buf.set(ValueLayout.JAVA_LONG, TARGET + off, WORD + off);
            }
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x5a5a5a5a5a5a5a5aL);
            int inline = 256; // QpInitAttr.rc's maxInlineData
            refused(p, "a FETCH_ADD off an 8-byte boundary", new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 64, 8).remote(remote + 4, p.b.mr.rkey()).atomic(1, 0));
            refused(p, "a CMP_SWP off an 8-byte boundary", new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 64, 8).remote(remote + 4, p.b.mr.rkey())
                    .atomic(0x05060708_01020304L, 7));
            refused(p, "a FETCH_ADD of 4 bytes", new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 64, 4).remote(remote, p.b.mr.rkey()).atomic(1, 0));
            refused(p, "an INLINE FETCH_ADD", new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, p.a.mr, 64, 8).remote(remote, p.b.mr.rkey())
                    .atomic(1, 0));
            refused(p, "an INLINE READ", new SendWorkRequest().opcode(WrOpcode.RDMA_READ)
                    .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, p.a.mr, 64, 8).remote(remote, p.b.mr.rkey()));
            refused(p, "an INLINE WRITE of one byte more than max_inline_data", new SendWorkRequest()
                    .opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.INLINE)
                    .sge(0, p.a.mr, 0, inline + 1).remote(remote - 16, p.b.mr.rkey()));
            refused(p, "an INLINE SEND of one byte more than max_inline_data", new SendWorkRequest()
                    .opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, p.a.mr, 0, inline + 1));
            refused(p, "a WRITE whose SGE has a negative length", new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr.address(), -8, p.a.mr.lkey())
                    .remote(remote, p.b.mr.rkey()));
            for (long off = -16; off < 24; off += 8) {
                assertEquals(WORD + off, p.b.buf.get(ValueLayout.JAVA_LONG, TARGET + off),
                        "the target's word at " + off + " after the refused requests");
            }
            // the QP is as it was: an INLINE WRITE of max_inline_data and an aligned FETCH_ADD complete
            WorkCompletion wc = p.run(new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, p.a.mr, 0, 8).remote(remote, p.b.mr.rkey()));
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(0x5a5a5a5a5a5a5a5aL, p.b.buf.get(ValueLayout.JAVA_LONG, TARGET));
            wc = p.run(new SendWorkRequest().wrId(10).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 64, 8).remote(remote + 8, p.b.mr.rkey()).atomic(1, 0));
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(WcOpcode.FETCH_ADD, wc.opcode());
            assertEquals(WORD + 8, p.a.buf.get(ValueLayout.JAVA_LONG, 64), "the FETCH_ADD's original value");
            assertEquals(WORD + 9, p.b.buf.get(ValueLayout.JAVA_LONG, TARGET + 8));
            // an SGE of no bytes is a valid zero-length message (not a direct one): it completes, touching nothing
            for (WrOpcode op : new WrOpcode[] {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_READ}) {
                wc = p.run(new SendWorkRequest().wrId(11).opcode(op).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 0).remote(remote, p.b.mr.rkey()));
                assertEquals(WcStatus.SUCCESS, wc.status(), op + " of 0 bytes: " + wc);
                assertEquals(0, wc.byteLen(), op + " of 0 bytes");
            }
            assertEquals(0x5a5a5a5a5a5a5a5aL, p.b.buf.get(ValueLayout.JAVA_LONG, TARGET));
            assertEquals(0x5a5a5a5a5a5a5a5aL, p.a.buf.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    private static void refused(ShmPair p, String what, SendWorkRequest wr) {
        assertEquals(Errno.EINVAL.value(), p.a.qp.postSend(wr.wrId(77)), what + " is refused at post (EINVAL)");
        WorkCompletion wc = new WorkCompletion();
        p.a.ctx.progress();
        p.b.ctx.progress();
        assertEquals(0, p.a.cq.poll(wc), what + ": a refused request completes nothing (" + wc + ")");
    }
}

package io.jrdma.engine.shm;

import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * An INVOKER poll of an empty CQ takes the first completion its own duty cycle makes straight into the caller's
 * {@link WorkCompletion} (docs/shm-design.md, "fifth pass"): the completions of one cycle still come out in the
 * order they were made, whichever poll takes them, and an armed channel is still told.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ShmCqPollTest {
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    /** A QP of b's with its own CQ and {@code n} receives posted in INIT; the poll's cycle flushes them at ERROR. */
    private static QueuePair flushed(ShmPair p, CompletionQueue cq, int n, RecvWorkRequest rwr) {
        QueuePair qp = p.b.pd.createQp(QpInitAttr.rc(cq).withDepth(8, 8));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ShmPair.ALL));
        for (int i = 1; i <= n; i++) {
            assertEquals(0, qp.postRecv(rwr.reset().wrId(i).sge(0, p.b.mr, 0, 64)));
        }
        qp.modify(new QpAttr().state(QpState.ERROR)); // INVOKER: the flush waits for the next duty cycle, a poll's
        return qp;
    }

    @Test
    void completionsOfOnePollsCycleComeOutInOrder() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            CompletionQueue cq = p.b.ctx.createCq(16);
            QueuePair qp = flushed(p, cq, 5, rwr);
            WorkCompletion wc = new WorkCompletion();
            for (int i = 1; i <= 2; i++) { // the first from the poll's own cycle, the second from the ring behind it
                assertEquals(1, cq.poll(wc), "completion " + i);
                assertEquals(i, wc.wrId());
                assertEquals(WcStatus.WR_FLUSH_ERR, wc.status());
                assertEquals(WcOpcode.RECV, wc.opcode());
            }
            WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(), new WorkCompletion()};
            assertEquals(3, cq.poll(wcs));
            for (int i = 0; i < 3; i++) {
                assertEquals(3 + i, wcs[i].wrId());
            }
            assertEquals(0, cq.poll(wcs));
            qp.close();

            // the array poll of an empty CQ: its cycle's first completion in wcs[0], the rest after it
            qp = flushed(p, cq, 3, rwr);
            assertEquals(3, cq.poll(wcs));
            for (int i = 0; i < 3; i++) {
                assertEquals(1 + i, wcs[i].wrId());
            }
            assertEquals(0, cq.poll(wc));
            qp.close();
            cq.close();
        }
    }

    @Test
    void aSendAndItsReceiveCompleteThroughPollsThatFoundTheirCqsEmpty() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            SendWorkRequest wr = new SendWorkRequest();
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < 100; i++) {
                assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(1000 + i).sge(0, p.b.mr, 4096, 64)));
                p.a.buf.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 0x5EED0000L + i);
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND_WITH_IMM).imm(i)
                        .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)));
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status());
                assertEquals(1000 + i, r.wrId());
                assertEquals(8, r.byteLen());
                assertEquals(i, r.imm());
                assertEquals(0x5EED0000L + i, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_LONG, 4096));
                WorkCompletion s = p.await(p.a.cq);
                assertEquals(WcStatus.SUCCESS, s.status());
                assertEquals(WcOpcode.SEND, s.opcode());
                assertEquals(i, s.wrId());
                assertEquals(0, p.a.cq.poll(wc), "one completion per SEND");
                assertEquals(0, p.b.cq.poll(wc), "one completion per receive");
            }
        }
    }

    @Test
    void anArmedChannelIsToldOfACompletionThePollTakes() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            CompletionChannel ch = p.b.ctx.createCompletionChannel();
            CompletionQueue cq = p.b.ctx.createCq(16, ch);
            cq.requestNotify(false);
            QueuePair qp = flushed(p, cq, 1, rwr); // one completion: no later one to tell the channel instead
            WorkCompletion wc = new WorkCompletion();
            assertEquals(1, cq.poll(wc));
            assertEquals(1, wc.wrId());
            assertSame(cq, ch.await(Duration.ofSeconds(10)), "the armed channel's event");
            assertNull(ch.await(Duration.ZERO), "one event per arming");
            assertEquals(0, cq.poll(wc));
            qp.close();
            cq.close();
            ch.close();
        }
    }
}

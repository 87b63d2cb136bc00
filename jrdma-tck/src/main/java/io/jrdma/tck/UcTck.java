package io.jrdma.tck;

import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Unreliable connections ({@code ibv_uc_pingpong}'s verbs): SEND (with or without immediate data) and RDMA
 * WRITE (with or without immediate data) between two UC QPs connected by hand, at 0, 1, MTU, MTU+1 and 64 KiB
 * (multi-packet messages), with the data checked; READ and atomics refused at post. Aborted with the reason
 * on a provider without UC.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class UcTck extends VerbsTckSupport {
    private static final long SRC = 0;
    private static final long DST = 2 << 20;
    private static final int GUARD = 64;

    private CompletionQueue ccq;
    private CompletionQueue scq;
    private QueuePair cqp;
    private QueuePair sqp;

    /** For subclasses. */
    protected UcTck() {
    }

    /** Aborts unless the provider has UC, then connects a UC QP of each side by hand. */
    @BeforeEach
    final void ucPair() {
        requireQpType(QpType.UC);
        ccq = client.newCq(256);
        scq = server.newCq(256);
        cqp = client.newQp(QpInitAttr.uc(ccq));
        sqp = server.newQp(QpInitAttr.uc(scq));
        connectByHand(cqp, sqp, WRITE_ACCESS);
    }

    private int[] sizes() {
        int mtu = pathMtu().bytes();
        return new int[] {0, 1, mtu, mtu + 1, 64 << 10};
    }

    private static SendWorkRequest data(SendWorkRequest wr, Side side, int size) {
        return size == 0 ? wr.numSge(0) : wr.sge(0, side.mr, SRC, size);
    }

    @Test
    void sendAndSendWithImmAtEverySize() {
        for (WrOpcode op : new WrOpcode[] {WrOpcode.SEND, WrOpcode.SEND_WITH_IMM}) {
            for (int size : sizes()) {
                String what = "UC " + op + " of " + size + " bytes";
                int seed = size + op.ordinal();
                fill(client.buf, SRC, size, seed);
                fillSentinel(server.buf, DST, (long) size + GUARD);
                post(sqp, new RecvWorkRequest().wrId(size).sge(0, server.mr, DST, (64 << 10) + GUARD));
                post(cqp, data(new SendWorkRequest().wrId(size + 1L).opcode(op).flags(SendFlags.SIGNALED).imm(size),
                        client, size));
                assertCompletion(awaitCompletion(ccq, what + " (sender)"), WcStatus.SUCCESS, WcOpcode.SEND, size + 1L,
                        cqp.qpn(), what);
                WorkCompletion rc = awaitCompletion(scq, what + " (receiver)");
                assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, size, sqp.qpn(), what + " receive");
                assertEquals(size, rc.byteLen(), what + ": byte_len of " + rc);
                assertEquals(op.hasImm(), rc.hasImm(), what + ": WITH_IMM of " + rc);
                assertFalse(rc.hasGrh(), what + ": a UC receive has no GRH: " + rc);
                if (op.hasImm()) {
                    assertEquals(size, rc.imm(), what + ": imm of " + rc);
                }
                assertPattern(server.buf, DST, size, seed, what);
                assertSentinel(server.buf, DST + size, GUARD, what);
            }
        }
    }

    @Test
    void writeAndWriteWithImmAtEverySize() {
        for (WrOpcode op : new WrOpcode[] {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM}) {
            for (int size : sizes()) {
                String what = "UC " + op + " of " + size + " bytes";
                int seed = size * 3 + op.ordinal();
                fill(client.buf, SRC, size, seed);
                fillSentinel(server.buf, DST, (long) size + GUARD);
                if (op.hasImm()) {
                    post(sqp, new RecvWorkRequest().wrId(size).numSge(0));
                }
                post(cqp, data(new SendWorkRequest().wrId(size + 1L).opcode(op).flags(SendFlags.SIGNALED).imm(~size)
                        .remote(server.addr(DST), server.mr.rkey()), client, size));
                assertCompletion(awaitCompletion(ccq, what + " (sender)"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE,
                        size + 1L, cqp.qpn(), what);
                if (op.hasImm()) {
                    WorkCompletion rc = awaitCompletion(scq, what + " (receiver)");
                    assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, size, sqp.qpn(), what);
                    assertEquals(~size, rc.imm(), what + ": imm of " + rc);
                    assertPattern(server.buf, DST, size, seed, what);
                } else {
                    // UC has no acknowledgement: the sender's completion does not mean the data is placed
                    awaitTrue(() -> holdsPattern(server.buf, DST, size, seed, 0), what + " placed");
                }
                assertSentinel(server.buf, DST + size, GUARD, what);
            }
        }
    }

    @Test
    void readAndAtomicsAreRefusedAtPost() {
        MemoryRegion mr = client.mr;
        for (WrOpcode op : new WrOpcode[] {WrOpcode.RDMA_READ, WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP}) {
            int rc = cqp.postSend(new SendWorkRequest().wrId(1).opcode(op).flags(SendFlags.SIGNALED)
                    .sge(0, mr, SRC, 8).remote(server.addr(DST), server.mr.rkey()));
            assertEquals(RdmaException.Errno.EINVAL.value(), rc, "postSend of " + op + " on a UC QP returned "
                    + RdmaException.Errno.of(rc) + " (" + rc + "): UC has no " + op);
        }
    }
}

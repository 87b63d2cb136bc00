package io.jrdma.tck;

import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * RC ordering: 1,000 mixed requests (WRITE, SEND, SEND_WITH_IMM, READ of an earlier WRITE,
 * WRITE_WITH_IMM, FETCH_AND_ADD) posted back to back complete in posting order, receives
 * complete in the order their messages were posted, a READ sees the WRITE posted before it and
 * each FETCH_AND_ADD sees every earlier one.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class OrderingTck extends TckSupport {
    private static final int N = 1000;
    // client layout
    private static final long VAL = 0;            // 8-byte value of request i at VAL + 8 i
    private static final long PAT = 64 << 10;     // pattern bytes SENDs append
    private static final long READ_TO = 1 << 20;  // READ i lands at READ_TO + 8 i
    private static final long FADD_TO = 2 << 20;  // FETCH_AND_ADD i's result at FADD_TO + 8 i
    // server layout
    private static final long WRITE_TO = 0;       // WRITE i lands at WRITE_TO + 8 i
    private static final long COUNTER = 1 << 20;  // the FETCH_AND_ADD counter
    private static final long RECV = 2 << 20;     // receive k at RECV + RECV_SLOT k
    private static final int RECV_SLOT = 8192;
    private static final int RECVS = 512;

    /** For subclasses. */
    protected OrderingTck() {
    }

    private static long value(int i) {
        return 0x1000_0000_0000L + i * 0x1_0001L;
    }

    private static WrOpcode op(int i) {
        return switch (i % 6) {
            case 0 -> WrOpcode.RDMA_WRITE;
            case 1 -> WrOpcode.SEND;
            case 2 -> WrOpcode.SEND_WITH_IMM;
            case 3 -> WrOpcode.RDMA_READ;
            case 4 -> WrOpcode.RDMA_WRITE_WITH_IMM;
            default -> WrOpcode.ATOMIC_FETCH_AND_ADD;
        };
    }

    /** Bytes a SEND appends after its 8-byte value: up to 4800, so some SENDs span packets. */
    private static int extra(int i) {
        return (i % 5) * 1200;
    }

    @Test
    void thousandMixedRequestsCompleteInOrder() {
        requireImmediateData();
        requireAtomics();
        Link l = link().cqe(2048).clientQp(a -> a.withDepth(1024, 16)).serverQp(a -> a.withDepth(16, 1024))
                .connect();
        for (int i = 0; i < N; i++) {
            putLong(client.buf, VAL + 8L * i, value(i));
        }
        fill(client.buf, PAT, 8192, 77);
        fillSentinel(client.buf, READ_TO, 8L * N);
        fillSentinel(client.buf, FADD_TO, 8L * N);
        fillSentinel(server.buf, WRITE_TO, 8L * N);
        putLong(server.buf, COUNTER, 0);

        RecvWorkRequest rwr = new RecvWorkRequest();
        for (int k = 0; k < RECVS; k++) {
            post(l.sqp, rwr.reset().wrId(k).sge(0, server.mr, RECV + (long) RECV_SLOT * k, RECV_SLOT));
        }

        List<Integer> consumers = new ArrayList<>(); // request index of receive k
        int fetchAdds = 0;
        SendWorkRequest wr = new SendWorkRequest();
        for (int i = 0; i < N; i++) {
            WrOpcode op = op(i);
            wr.reset().wrId(i).opcode(op).flags(SendFlags.SIGNALED).imm(i);
            switch (op) {
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> wr.sge(0, client.mr, VAL + 8L * i, 8)
                        .remote(server.addr(WRITE_TO + 8L * i), server.mr.rkey());
                case SEND, SEND_WITH_IMM -> {
                    wr.sge(0, client.mr, VAL + 8L * i, 8);
                    if (extra(i) > 0) {
                        wr.sge(1, client.mr, PAT, extra(i));
                    }
                }
                case RDMA_READ -> wr.sge(0, client.mr, READ_TO + 8L * i, 8)
                        .remote(server.addr(WRITE_TO + 8L * (i - 3)), server.mr.rkey());
                case ATOMIC_FETCH_AND_ADD -> {
                    wr.sge(0, client.mr, FADD_TO + 8L * i, 8).remote(server.addr(COUNTER), server.mr.rkey())
                            .atomic(1, 0);
                    fetchAdds++;
                }
                default -> throw new AssertionError(op);
            }
            if (op.consumesRecv()) {
                consumers.add(i);
            }
            post(l.cqp, wr);
        }

        List<WorkCompletion> sent = awaitCompletions(l.ccq, N, N + " mixed requests");
        for (int i = 0; i < N; i++) {
            WorkCompletion wc = sent.get(i);
            assertCompletion(wc, WcStatus.SUCCESS, WcOpcode.of(op(i)), i, l.cqp.qpn(),
                    "completion " + i + " (requests complete in posting order)");
        }
        List<WorkCompletion> received = awaitCompletions(l.scq, consumers.size(), consumers.size() + " receives");
        for (int k = 0; k < consumers.size(); k++) {
            int i = consumers.get(k);
            WrOpcode op = op(i);
            WorkCompletion wc = received.get(k);
            String what = "receive " + k + " (of request " + i + ", " + op + ")";
            assertCompletion(wc, WcStatus.SUCCESS, op == WrOpcode.RDMA_WRITE_WITH_IMM ? WcOpcode.RECV_RDMA_WITH_IMM
                    : WcOpcode.RECV, k, l.sqp.qpn(), what);
            assertEquals(l.cqp.qpn(), wc.srcQp(), what + ": src_qp");
            assertEquals(op.hasImm(), wc.hasImm(), what + ": WITH_IMM");
            if (op.hasImm()) {
                assertEquals(i, wc.imm(), what + ": immediate data");
            }
            long slot = RECV + (long) RECV_SLOT * k;
            if (op == WrOpcode.RDMA_WRITE_WITH_IMM) {
                assertEquals(8, wc.byteLen(), what + ": byte_len");
            } else {
                assertEquals(8 + extra(i), wc.byteLen(), what + ": byte_len");
                assertEquals(value(i), getLong(server.buf, slot), what + ": the message of request " + i);
                assertPattern(server.buf, slot + 8, extra(i), 77, what + ": appended bytes");
            }
        }
        for (int i = 0; i < N; i++) {
            WrOpcode op = op(i);
            if (op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_WRITE_WITH_IMM) {
                long at = WRITE_TO + 8L * i;
                long want = value(i);
                awaitPlaced(() -> getLong(server.buf, at) == want, "WRITE " + i + " to be placed");
                assertEquals(value(i), getLong(server.buf, WRITE_TO + 8L * i), "data of WRITE " + i);
            } else if (op == WrOpcode.RDMA_READ) {
                assertEquals(value(i - 3), getLong(client.buf, READ_TO + 8L * i),
                        "READ " + i + " sees the WRITE " + (i - 3) + " posted before it");
            } else if (op == WrOpcode.ATOMIC_FETCH_AND_ADD) {
                assertEquals(i / 6, getLong(client.buf, FADD_TO + 8L * i),
                        "FETCH_AND_ADD " + i + " sees the " + (i / 6) + " before it");
            } else {
                assertSentinel(server.buf, WRITE_TO + 8L * i, 8, "no WRITE at slot " + i);
            }
        }
        assertEquals(fetchAdds, getLong(server.buf, COUNTER), "the counter after every FETCH_AND_ADD");
    }
}

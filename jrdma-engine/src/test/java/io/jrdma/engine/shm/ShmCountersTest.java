package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.StatsFile;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The shared-memory provider's per-QP counters, read from the counters file as {@code jrdma stat} reads it
 * (another reader of the mapped file, not the context's own API): operations and bytes, ring slots both ways,
 * refused requests by reason, RNR on both sides, flushed requests.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmCountersTest {
    private final SendWorkRequest wr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();

    /** @return the QP's counters as a reader of the context's counters file finds them */
    static Map<String, Long> qpCounters(ShmPair.Side s) throws Exception {
        Path f = ((Context) s.ctx).counters.path();
        assertNotNull(f, "no counters file: " + ((Context) s.ctx).counters.noFileReason());
        StatsFile.Snapshot snap = StatsFile.read(f);
        assertNotNull(snap, f.toString());
        StatsFile.QpSnapshot q = snap.qps().stream().filter(x -> x.qpn() == s.qp.qpn()).findFirst().orElse(null);
        assertNotNull(q, "QP 0x" + Integer.toHexString(s.qp.qpn()) + " in " + snap.qps());
        return q.counters();
    }

    private static void assertCounts(Map<String, Long> c, Object... expected) {
        for (int i = 0; i < expected.length; i += 2) {
            assertEquals(((Number) expected[i + 1]).longValue(), c.get((String) expected[i]), expected[i] + " in " + c);
        }
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void operationsBytesAndSlotsAreCountedPerQp(ThreadingMode mode) throws Exception {
        try (ShmPair p = new ShmPair(mode, 1 << 20)) {
            SendWorkRequest w = wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 100_000).remote(p.b.mr.address(), p.b.mr.rkey());
            assertEquals(WcStatus.SUCCESS, p.run(w).status());
            w = wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)
                    .remote(p.b.mr.address(), p.b.mr.rkey());
            assertEquals(WcStatus.SUCCESS, p.run(w).status());
            w = wr.reset().wrId(3).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)
                    .remote(p.b.mr.address() + 512, p.b.mr.rkey()).atomic(1, 0);
            assertEquals(WcStatus.SUCCESS, p.run(w).status());
            // an unsignaled WRITE counts too: it was done
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(4).opcode(WrOpcode.RDMA_WRITE).sge(0, p.a.mr, 0, 16)
                    .remote(p.b.mr.address(), p.b.mr.rkey())));
            // a SEND of three slots (8 KiB chunks) into a posted receive
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(5).sge(0, p.b.mr, 0, 32768)));
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(6).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 20_000)).status());
            assertEquals(20_000, p.await(p.b.cq).byteLen());
            assertCounts(qpCounters(p.a), "ops", 5, "op_bytes", 100_000 + 8 + 8 + 16 + 20_000, "sent_pkts", 3,
                    "sent_bytes", 20_000, "rcvd_pkts", 0, "rcvd_naks", 0, "rem_bad_key", 0, "flushed", 0);
            assertCounts(qpCounters(p.b), "ops", 0, "rcvd_pkts", 3, "rcvd_bytes", 20_000, "sent_naks", 0);
        }
    }

    @Test
    void refusedRequestsAreCountedByReasonAndFlushesCounted() throws Exception {
        // a bad key; then a request posted behind it is flushed, and the target QP's posted receive too
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(0, p.b.qp.postRecv(rwr.reset().wrId(9).sge(0, p.b.mr, 0, 64)));
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey() ^ 1))
                    .status());
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey())));
            assertEquals(WcStatus.WR_FLUSH_ERR, p.await(p.a.cq).status());
            assertEquals(WcStatus.WR_FLUSH_ERR, p.await(p.b.cq).status()); // the target QP stopped (QP_ACCESS_ERR)
            assertCounts(qpCounters(p.a), "rem_bad_key", 1, "rem_out_of_bounds", 0, "rem_no_access", 0, "rcvd_naks", 1,
                    "ops", 0, "flushed", 1);
            assertCounts(qpCounters(p.b), "flushed", 1);
        }
        // out of bounds
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_READ)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 64).remote(p.b.mr.address() + (1 << 16) - 63,
                            p.b.mr.rkey())).status());
            assertCounts(qpCounters(p.a), "rem_bad_key", 0, "rem_out_of_bounds", 1, "rem_no_access", 0, "rcvd_naks", 1);
        }
        // no access: a region without REMOTE_WRITE
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion ro = p.b.pd.register(p.b.buf, Access.REMOTE_READ);
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(ro.address(), ro.rkey())).status());
            assertCounts(qpCounters(p.a), "rem_bad_key", 0, "rem_out_of_bounds", 0, "rem_no_access", 1, "rcvd_naks", 1);
            ro.close();
        }
    }

    @Test
    void rnrIsCountedOnBothSides() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.qp.modify(new QpAttr().rnrRetry(2));
            WorkCompletion wc = p.run(wr.reset().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8));
            assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wc.status());
            assertEquals(QpState.ERROR, p.a.qp.state());
            // three tries (the first and two retries), each refused with RNR by the receiver
            assertCounts(qpCounters(p.a), "rcvd_rnr_naks", 3, "sent_pkts", 3, "ops", 0, "rcvd_naks", 0);
            assertCounts(qpCounters(p.b), "sent_naks", 3, "rcvd_pkts", 3, "rcvd_bytes", 0);
        }
    }
}

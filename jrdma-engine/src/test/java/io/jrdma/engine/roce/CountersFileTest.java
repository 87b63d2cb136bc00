package io.jrdma.engine.roce;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.StatsFile;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each context publishes its counters, per device and per QP, in a memory-mapped file that another reader
 * ({@link StatsFile#read}, what {@code jrdma stat} uses) sees as the engine counts; refused remote accesses are
 * counted by reason on both sides; the file goes when the context closes, and a reader removes files of
 * processes that are gone.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CountersFileTest {
    private static Context ctx(UdpPair.End e) {
        return (Context) e.ctx;
    }

    private static WorkCompletion write(UdpPair p, long wrId, long remoteAddr, int rkey, int len) {
        assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(wrId).opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, len).remote(remoteAddr, rkey)));
        WorkCompletion[] wc = {new WorkCompletion()};
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (p.a.cq.poll(wc) == 0) {
            p.progress();
            assertTrue(System.nanoTime() < deadline, "no completion for WRITE " + wrId);
        }
        for (int i = 0; i < 100; i++) {
            p.progress(); // the responder's ACK/NAK bookkeeping settles (bounded: INVOKER contexts, no sleeps)
        }
        return wc[0];
    }

    private static StatsFile.QpSnapshot qp(StatsFile.Snapshot s, int qpn) {
        return s.qps().stream().filter(q -> q.qpn() == qpn).findFirst().orElse(null);
    }

    @Test
    void aReaderSeesTheDeviceAndQpCountersTheEngineWrites() throws Exception {
        Path fa;
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            fa = ctx(p.a).counters.path();
            Path fb = ctx(p.b).counters.path();
            assertNotNull(fa, "no counters file: " + ctx(p.a).counters.noFileReason());
            assertTrue(Files.exists(fa) && Files.exists(fb));
            assertTrue(fa.getFileName().toString().startsWith(ProcessHandle.current().pid() + "-"), fa.toString());
            assertEquals(WcStatus.SUCCESS, write(p, 1, p.b.mr.address(), p.b.mr.rkey(), 100_000).status());
            StatsFile.Snapshot a = StatsFile.read(fa);
            StatsFile.Snapshot b = StatsFile.read(fb);
            assertNotNull(a);
            assertEquals(ProcessHandle.current().pid(), a.pid());
            assertEquals(p.a.ctx.device().name(), a.device());
            // INVOKER contexts: no engine runs now, so the file holds exactly what the context reports
            Map<String, Long> reported = p.a.ctx.counters();
            for (Map.Entry<String, Long> e : a.deviceCounters().entrySet()) {
                assertEquals(reported.get(e.getKey()), e.getValue(), e.getKey());
            }
            assertTrue(a.deviceCounters().get("sent_pkts") >= 98, a.toString()); // 100,000 B at MTU 1024
            assertTrue(a.deviceCounters().get("sent_bytes") > 100_000, a.toString());
            assertEquals(a.deviceCounters().get("sent_pkts"), b.deviceCounters().get("rcvd_pkts"), b.toString());
            StatsFile.QpSnapshot qa = qp(a, p.a.qp.qpn());
            StatsFile.QpSnapshot qb = qp(b, p.b.qp.qpn());
            assertNotNull(qa, "QP 0x" + Integer.toHexString(p.a.qp.qpn()) + " in " + a.qps());
            assertEquals(a.deviceCounters().get("sent_pkts"), qa.counters().get("sent_pkts"));
            assertEquals(a.deviceCounters().get("sent_bytes"), qa.counters().get("sent_bytes"));
            assertEquals(qa.counters().get("sent_pkts"), qb.counters().get("rcvd_pkts"));
            assertEquals(qb.counters().get("sent_pkts"), qa.counters().get("rcvd_pkts")); // the ACKs
            assertTrue(qa.counters().get("rcvd_pkts") >= 1);
        }
        assertFalse(Files.exists(fa), "the counters file goes with its context");
        assertNull(StatsFile.read(fa));
    }

    @Test
    void refusedAccessesAreCountedByReasonOnBothSides() throws Exception {
        String[][] cases = {
            {"rcvd_bad_key", "bad key"},
            {"rcvd_out_of_bounds", "out of bounds"},
        };
        for (String[] c : cases) {
            try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024)) {
                WorkCompletion wc = c[0].equals("rcvd_bad_key")
                        ? write(p, 2, p.b.mr.address(), p.b.mr.rkey() ^ 0x0100_0000, 64)
                        : write(p, 2, p.b.mr.address() + (1 << 16) - 32, p.b.mr.rkey(), 64);
                assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), c[1] + ": " + wc);
                StatsFile.Snapshot a = StatsFile.read(ctx(p.a).counters.path());
                StatsFile.Snapshot b = StatsFile.read(ctx(p.b).counters.path());
                assertEquals(1, b.deviceCounters().get(c[0]), c[1] + ": " + b.deviceCounters());
                assertEquals(1, b.deviceCounters().get("sent_nak_rem_access"), c[1] + ": " + b.deviceCounters());
                assertEquals(1, a.deviceCounters().get("rcvd_nak_rem_access"), c[1] + ": " + a.deviceCounters());
                assertEquals(1, qp(b, p.b.qp.qpn()).counters().get("sent_naks"));
                assertEquals(1, qp(a, p.a.qp.qpn()).counters().get("rcvd_naks"));
                for (String other : new String[] {"rcvd_bad_key", "rcvd_out_of_bounds", "rcvd_no_access"}) {
                    if (!other.equals(c[0])) {
                        assertEquals(0, b.deviceCounters().get(other), c[1] + ": " + other);
                    }
                }
            }
        }
    }

    @Test
    void aDestroyedQpLeavesTheFileAndStaleFilesOfDeadProcessesAreRemoved() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024)) {
            Path f = ctx(p.a).counters.path();
            var extra = p.a.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.a.cq));
            int qpn = extra.qpn();
            assertNotNull(qp(StatsFile.read(f), qpn));
            extra.close();
            assertNull(qp(StatsFile.read(f), qpn), "a destroyed QP's slot is freed");

            // a copy of the file claiming a process that has exited: a reader removes it
            Process gone = new ProcessBuilder("true").start();
            assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
            Path stale = f.resolveSibling(gone.pid() + "-stale-1.stat");
            Files.copy(f, stale);
            try (var ch = java.nio.channels.FileChannel.open(stale, java.nio.file.StandardOpenOption.WRITE)) {
                java.nio.ByteBuffer pid = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
                pid.putLong(0, gone.pid());
                ch.write(pid, 16);
            }
            var all = StatsFile.readAll(f.getParent(), -1);
            assertFalse(Files.exists(stale), "a dead process's file is removed");
            assertTrue(all.stream().noneMatch(s -> s.pid() == gone.pid()));
            assertTrue(all.stream().anyMatch(s -> s.file().equals(f)));
            assertEquals(java.util.List.of(), StatsFile.readAll(f.getParent(), gone.pid()));
        }
    }
}

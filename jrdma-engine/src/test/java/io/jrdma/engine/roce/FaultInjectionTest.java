package io.jrdma.engine.roce;

import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.ValueLayout;
import java.util.List;

import static io.jrdma.engine.roce.EngineTest.check;
import static io.jrdma.engine.roce.EngineTest.fill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Seeded loss, duplication, reordering and corruption (5% each): every opcode still completes
 * exactly once, in order, with the right data — go-back-N, duplicate detection, READ
 * re-execution and atomic replay at work.
 */
class FaultInjectionTest {
    static final int COUNT = 120;
    static final int SLOT = 5000; // 5 packets at MTU 1024

    @ParameterizedTest
    @EnumSource(value = WrOpcode.class, mode = EnumSource.Mode.EXCLUDE, names = {"LOCAL_INV", "BIND_MW", "REG_MR"})
    void everyOpcodeSurvivesFivePercentFaults(WrOpcode op) {
        for (long seed : new long[] {1, 2, 3}) {
            run(op, seed);
        }
    }

    private void run(WrOpcode op, long seed) {
        run(op, seed, 0.05);
    }

    /**
     * {@value #COUNT} requests of {@code op} through a network that drops, duplicates, reorders and corrupts each
     * packet with probability {@code rate} (seeded): each completes exactly once, in order, with the right data.
     *
     * @return the packets the network dropped
     */
    static long run(WrOpcode op, long seed, double rate) {
        long dropped = run(op, seed, rate, false).dropped();
        assertTrue(dropped > 0, "the network dropped packets");
        return dropped;
    }

    /**
     * What a run did: the packets dropped, and when {@code exhaustionAllowed}, the request that exhausted its
     * transport retries (RETRY_EXC_ERR: the network lost it and its seven retries, or their ACKs), or -1.
     */
    record Outcome(long dropped, int exhaustedAt) {
    }

    /**
     * As {@link #run(WrOpcode, long, double)}; with {@code exhaustionAllowed} a request whose retries all fail may
     * complete with RETRY_EXC_ERR (the right error: at 10 % loss, duplication, reordering and corruption each, an
     * attempt fails about one time in three, and all eight about once in 5,000 requests). Then every request
     * before it must have completed successfully, in order, with the right data, and every one after it with
     * WR_FLUSH_ERR.
     */
    static Outcome run(WrOpcode op, long seed, double rate, boolean exhaustionAllowed) {
        try (Pair p = new Pair(Mtu.MTU_1024, COUNT * SLOT + 4096)) {
            p.net.faults(seed, rate, rate, rate, rate);
            boolean atomic = op.isAtomic();
            int size = atomic ? 8 : SLOT - 7 * (int) (seed % 3);
            if (op.consumesRecv()) {
                for (int i = 0; i < COUNT; i++) {
                    assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(1000 + i).sge(0, p.b.mr, (long) i * SLOT, SLOT)));
                }
            }
            if (atomic) {
                p.b.buf.set(ValueLayout.JAVA_LONG, 0, 0L);
            }
            for (int i = 0; i < COUNT; i++) {
                long off = (long) i * SLOT;
                if (op == WrOpcode.RDMA_READ) {
                    fill(p.b.buf, off, size, i);
                } else if (!atomic) {
                    fill(p.a.buf, off, size, i);
                }
            }
            // SEND_WITH_INV invalidates this key every time: a retransmitted one finds it invalid already
            io.jrdma.verbs.MemoryRegion inv = op == WrOpcode.SEND_WITH_INV ? p.b.pd.register(p.arena.allocate(4096,
                    4096), io.jrdma.verbs.Access.LOCAL_WRITE | io.jrdma.verbs.Access.REMOTE_INVALIDATE) : null;
            SendWorkRequest wr = new SendWorkRequest();
            int posted = 0;
            int window = 64;
            while (p.a.completions.size() < COUNT) {
                while (posted < COUNT && posted - p.a.completions.size() < window) {
                    long off = (long) posted * SLOT;
                    wr.reset().wrId(posted).opcode(op).flags(SendFlags.SIGNALED).sge(0, p.a.mr, off, size).imm(posted);
                    if (inv != null) {
                        wr.invalidate(inv.rkey());
                    }
                    if (atomic) {
                        // CAS chain: each one expects the previous value; FETCH_ADD adds 1
                        wr.remote(p.b.mr.address(), p.b.mr.rkey())
                                .atomic(op == WrOpcode.ATOMIC_CMP_AND_SWP ? posted : 1, posted + 1);
                    } else {
                        wr.remote(p.b.mr.address() + off, p.b.mr.rkey());
                    }
                    assertEquals(0, p.a.qp.postSend(wr));
                    posted++;
                }
                int target = p.a.completions.size() + 1;
                assertTrue(p.pump(() -> p.a.completions.size() >= target
                        || p.a.qp.state() == io.jrdma.verbs.QpState.ERROR, 2_000_000), "stuck: " + p.a.completions.size()
                        + " of " + COUNT + " " + op + " seed " + seed);
                if (exhaustionAllowed && p.a.qp.state() == io.jrdma.verbs.QpState.ERROR) {
                    int posts = posted;
                    assertTrue(p.pump(() -> p.a.completions.size() >= posts, 2_000_000), "the flush did not come");
                    int k = 0;
                    while (k < posts && p.a.completions.get(k).status() == WcStatus.SUCCESS) {
                        WorkCompletion wc = p.a.completions.get(k);
                        assertEquals(k, wc.wrId(), "completions in order");
                        long off = (long) k * SLOT;
                        if (op == WrOpcode.RDMA_READ) {
                            check(p.a.buf, off, size, k);
                        } else if (!atomic) {
                            check(p.b.buf, off, size, k);
                        }
                        k++;
                    }
                    assertEquals(WcStatus.RETRY_EXC_ERR, p.a.completions.get(k).status(), "the request that failed: "
                            + p.a.completions.get(k));
                    for (int i = k + 1; i < posts; i++) {
                        assertEquals(WcStatus.WR_FLUSH_ERR, p.a.completions.get(i).status(), "after the failure");
                    }
                    assertEquals(posts, p.a.completions.size(), "exactly once");
                    if (inv != null) {
                        inv.close();
                    }
                    return new Outcome(p.net.dropped, k);
                }
                assertEquals(io.jrdma.verbs.QpState.RTS, p.a.qp.state(), "requester failed with " + firstError(p.a.completions));
            }
            for (int i = 0; i < COUNT; i++) {
                WorkCompletion wc = p.a.completions.get(i);
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                assertEquals(i, wc.wrId(), "completions in order");
                assertEquals(WcOpcode.of(op), wc.opcode());
            }
            assertEquals(COUNT, p.a.completions.size(), "exactly once");
            for (int i = 0; i < COUNT; i++) {
                long off = (long) i * SLOT;
                if (op == WrOpcode.RDMA_READ) {
                    check(p.a.buf, off, size, i);
                } else if (!atomic) {
                    check(p.b.buf, off, size, i);
                } else {
                    assertEquals(op == WrOpcode.ATOMIC_CMP_AND_SWP ? i : (long) i, p.a.buf.get(ValueLayout.JAVA_LONG, off),
                            "original value of atomic " + i);
                }
            }
            if (atomic) {
                assertEquals(COUNT, p.b.buf.get(ValueLayout.JAVA_LONG, 0), "each atomic executed exactly once");
            }
            if (op.consumesRecv()) {
                assertTrue(p.pump(() -> p.b.completions.size() >= COUNT, 1_000_000));
                assertEquals(COUNT, p.b.completions.size());
                for (int i = 0; i < COUNT; i++) {
                    WorkCompletion r = p.b.completions.get(i);
                    assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                    assertEquals(1000 + i, r.wrId());
                    assertEquals(size, r.byteLen());
                    if (op.hasImm()) {
                        assertEquals(i, r.imm());
                    }
                    if (inv != null) {
                        assertEquals(inv.rkey(), r.invalidatedRkey(), r.toString());
                        assertTrue((r.flags() & WorkCompletion.WITH_INV) != 0, r.toString());
                    }
                }
            }
            if (inv != null) {
                inv.close();
            }
            return new Outcome(p.net.dropped, -1);
        }
    }

    private static Object firstError(List<WorkCompletion> l) {
        return l.stream().filter(w -> w.status() != WcStatus.SUCCESS).findFirst().map(Object::toString).orElse("nothing");
    }
}

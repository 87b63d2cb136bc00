package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.RdmaException;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Memory the application allocated itself (not {@code allocateBuffer}'s), registered with remote access on shm0:
 * peers reach it by cross-memory attach ({@code process_vm_readv}/{@code process_vm_writev}), with the keys, bounds
 * and access checked as for shared memory, no atomics, and nothing outside the region touched. Two contexts in one
 * process ({@link ShmPair}); {@link ShmTwoProcessTest} does it between processes, the target stopped.
 */
@Timeout(60)
class ShmAttachTest {
    private static final int RW = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
    private static final long GUARD = 4096;
    private static final int SIZE = 64 * 1024;
    private static final byte FILL = (byte) 0xA5;
    private final SendWorkRequest wr = new SendWorkRequest();

    /** b's own memory: SIZE bytes between two guards of GUARD bytes, all FILL, from a plain arena. */
    private static MemorySegment own(Arena arena) {
        MemorySegment all = arena.allocate(SIZE + 2 * GUARD, 4096);
        all.fill(FILL);
        return all;
    }

    private static void guardsUntouched(MemorySegment all) {
        for (long i = 0; i < GUARD; i++) {
            assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, i), "the guard below the region changed at " + i);
            assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, GUARD + SIZE + i), "the guard above the region changed at " + i);
        }
    }

    private static void pattern(MemorySegment s, long off, int len, int seed) {
        for (int i = 0; i < len; i++) {
            s.set(ValueLayout.JAVA_BYTE, off + i, (byte) (i * 31 + seed));
        }
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void writesAndReadsReachTheApplicationsOwnMemory(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 4 << 20); Arena arena = Arena.ofShared()) {
            MemorySegment all = own(arena);
            MemorySegment region = all.asSlice(GUARD, SIZE);
            MemoryRegion mr = p.b.pd.register(region, RW);
            long ra = mr.address();
            int rkey = mr.rkey();
            MemorySegment src = p.a.buf;
            // 8 B (the direct path in INVOKER mode), 100 B, the whole region
            int[] lens = {8, 100, SIZE};
            for (int k = 0; k < lens.length; k++) {
                int len = lens[k];
                pattern(src, 0, len, k);
                WorkCompletion wc = p.run(wr.reset().wrId(k).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, len).remote(ra + SIZE - len, rkey));
                assertEquals(WcStatus.SUCCESS, wc.status(), "WRITE of " + len);
                assertEquals(-1, src.asSlice(0, len).mismatch(region.asSlice(SIZE - len, len)), "WRITE of " + len);
                wc = p.run(wr.reset().wrId(k).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 1 << 20, len).remote(ra + SIZE - len, rkey));
                assertEquals(WcStatus.SUCCESS, wc.status(), "READ of " + len);
                assertEquals(-1, src.asSlice(0, len).mismatch(src.asSlice(1 << 20, len)), "READ of " + len);
            }
            // three SGEs gathered into one place, then scattered back out of it (the queued path, SGE by SGE)
            pattern(src, 0, 3000, 7);
            WorkCompletion wc = p.run(wr.reset().wrId(9).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 1000).sge(1, p.a.mr, 1000, 1).sge(2, p.a.mr, 1001, 1999).remote(ra + 16, rkey));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(-1, src.asSlice(0, 3000).mismatch(region.asSlice(16, 3000)));
            wc = p.run(wr.reset().wrId(10).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 2 << 20, 2000).sge(1, p.a.mr, (2 << 20) + 2000, 1000).remote(ra + 16, rkey));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(-1, src.asSlice(0, 3000).mismatch(src.asSlice(2 << 20, 3000)));
            // INLINE (the data copied into the request at post) and a WRITE with immediate data
            src.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            wc = p.run(wr.reset().wrId(11).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.INLINE)
                    .sge(0, src.address(), 8, 0).remote(ra + 8, rkey));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(0x1122334455667788L, region.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(77)));
            pattern(src, 0, 64, 3);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(12).opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 64).remote(ra + 4096, rkey).imm(99)));
            WorkCompletion rwc = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, rwc.status());
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, rwc.opcode());
            assertEquals(99, rwc.imm());
            assertEquals(-1, src.asSlice(0, 64).mismatch(region.asSlice(4096, 64)));
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            guardsUntouched(all);
            mr.close();
        }
    }

    /** A request past either end, under a wrong key, or needing access the region lacks: REM_ACCESS_ERR, nothing written. */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void badRequestsAreRefusedAndTouchNothingOutsideTheRegion(ThreadingMode mode) {
        record Bad(String what, WrOpcode op, long off, int len, int keyDelta, int access) {
        }
        Bad[] bads = {
                new Bad("past the end", WrOpcode.RDMA_WRITE, SIZE - 4, 8, 0, RW),
                new Bad("before the start", WrOpcode.RDMA_WRITE, -8, 16, 0, RW),
                new Bad("a long one past the end", WrOpcode.RDMA_WRITE, 4096, SIZE, 0, RW),
                new Bad("a READ past the end", WrOpcode.RDMA_READ, SIZE - 4, 8, 0, RW),
                new Bad("a wrong key", WrOpcode.RDMA_WRITE, 0, 8, 1 << 8, RW),
                new Bad("no remote write", WrOpcode.RDMA_WRITE, 0, 8, 0, Access.LOCAL_WRITE | Access.REMOTE_READ),
                new Bad("no remote read", WrOpcode.RDMA_READ, 0, 8, 0, Access.LOCAL_WRITE | Access.REMOTE_WRITE),
                new Bad("an atomic", WrOpcode.ATOMIC_FETCH_AND_ADD, 0, 8, 0, RW),
                new Bad("a compare and swap", WrOpcode.ATOMIC_CMP_AND_SWP, 0, 8, 0, RW),
        };
        for (Bad bad : bads) {
            try (ShmPair p = new ShmPair(mode, 1 << 20); Arena arena = Arena.ofShared()) {
                MemorySegment all = own(arena);
                MemorySegment region = all.asSlice(GUARD, SIZE);
                MemoryRegion mr = p.b.pd.register(region, bad.access());
                pattern(p.a.buf, 0, SIZE, 1);
                p.a.buf.asSlice(512 << 10, SIZE).fill((byte) 0x3C);
                wr.reset().wrId(1).opcode(bad.op()).flags(SendFlags.SIGNALED).remote(mr.address() + bad.off(), mr.rkey() + bad.keyDelta());
                if (bad.op().isAtomic()) {
                    wr.sge(0, p.a.mr, 512 << 10, 8).atomic(1, 2);
                } else {
                    wr.sge(0, p.a.mr, bad.op() == WrOpcode.RDMA_READ ? 512 << 10 : 0, bad.len());
                }
                WorkCompletion wc = p.run(wr);
                assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), bad.what());
                for (long i = 0; i < all.byteSize(); i++) {
                    assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, i), bad.what() + ": the owner's memory changed at " + i);
                }
                for (long i = 0; i < SIZE; i++) {
                    assertEquals((byte) 0x3C, p.a.buf.get(ValueLayout.JAVA_BYTE, (512 << 10) + i), bad.what() + ": the local buffer changed at " + i);
                }
                mr.close();
            }
        }
    }

    /** A deregistered region is no longer reachable: REM_ACCESS_ERR, nothing written. */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aDeregisteredRegionIsNoLongerReachable(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 20); Arena arena = Arena.ofShared()) {
            MemorySegment all = own(arena);
            MemorySegment region = all.asSlice(GUARD, SIZE);
            MemoryRegion mr = p.b.pd.register(region, RW);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 42);
            assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(mr.address(), mr.rkey())).status());
            assertEquals(42, region.get(ValueLayout.JAVA_LONG, 0));
            region.set(ValueLayout.JAVA_LONG, 0, 0);
            long ra = mr.address();
            int rkey = mr.rkey();
            mr.close();
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8).remote(ra, rkey)).status());
            assertEquals(0, region.get(ValueLayout.JAVA_LONG, 0), "a WRITE after the deregistration landed");
        }
    }

    /**
     * What a broken or hostile peer could leave in such an entry: REMOTE_ATOMIC in its access (an atomic is still
     * refused: no kernel copy is one, and it must not be done as a copy), and a range that wraps the address space (a
     * refusal's negative result must not be taken for an address). Both complete with REM_ACCESS_ERR, nothing touched.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aForgedEntryOfTheApplicationsOwnMemoryIsRefused(ThreadingMode mode) {
        for (int forged = 0; forged < 3; forged++) {
            try (ShmPair p = new ShmPair(mode, 1 << 20); Arena arena = Arena.ofShared()) {
                MemorySegment all = own(arena);
                MemoryRegion mr = p.b.pd.register(all.asSlice(GUARD, SIZE), RW);
                MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
                long e = Ctrl.key(mr.rkey() >>> 8);
                assertEquals(Ctrl.ATTACHED, c.get(ValueLayout.JAVA_INT, e + Ctrl.K_FD));
                WrOpcode op = WrOpcode.RDMA_WRITE;
                if (forged < 2) { // REMOTE_ATOMIC added to the entry's access
                    int acc = c.get(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS);
                    c.set(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS, acc | Access.REMOTE_ATOMIC);
                    op = forged == 0 ? WrOpcode.ATOMIC_FETCH_AND_ADD : WrOpcode.ATOMIC_CMP_AND_SWP;
                } else { // a range whose end wraps: the WRITE 32 bytes in lies past the signed limit
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, Long.MAX_VALUE - 16);
                }
                java.lang.invoke.VarHandle.fullFence();
                wr.reset().wrId(1).opcode(op).flags(SendFlags.SIGNALED).remote(mr.address() + (forged == 2 ? 32 : 0), mr.rkey())
                        .sge(0, p.a.mr, 0, 8);
                if (op.isAtomic()) {
                    wr.atomic(1, 2);
                }
                WorkCompletion wc = p.run(wr);
                assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), "forged entry " + forged + ": " + wc);
                for (long i = 0; i < all.byteSize(); i++) {
                    assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, i), "forged entry " + forged + ": changed at " + i);
                }
                mr.close();
            }
        }
    }

    /**
     * The application's memory is its own to free once deregistration returns, so a deregistration waits while a
     * process that lives holds the region for a copy (a peer stopped inside one), past the second after which a
     * shared buffer's gives up, and returns once the hold ends. The hold is forged here: b's QP's held word set to
     * the region's entry, as a's copy in progress sets it (the holder: b's QP's partner, in this live process).
     */
    @Test
    void aDeregistrationWaitsWhileALiveProcessHoldsTheRegion() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared()) {
            MemoryRegion mr = p.b.pd.register(own(arena).asSlice(GUARD, SIZE), RW);
            MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
            long held = ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD;
            ShmTransport.INT.setVolatile(c, held, mr.rkey() >>> 8);
            Thread t = new Thread(mr::close, "deregistration");
            t.start();
            t.join((ShmTransport.DRAIN_NANOS + 800_000_000L) / 1_000_000L);
            assertTrue(t.isAlive(), "the deregistration returned while a live process held the region");
            ShmTransport.INT.setVolatile(c, held, 0);
            t.join(10_000);
            assertTrue(!t.isAlive(), "the deregistration did not return once the hold ended");
        }
    }

    /**
     * A copy into the application's memory runs only under a hold that names its holder (its QP's held word, or its own
     * word), never under the entry's in-use count, which names none (the deregistration could not tell whether the
     * holder lives): with the locked holds (no own hold) and b's QP's held word taken (forged: a SEND's hold of
     * another), a's WRITE waits, as for a target that does not answer, and lands once the word is free.
     */
    @Test
    void aCopyIntoTheApplicationsMemoryNeverRunsUnderTheInUseCount() {
        boolean was = ShmTransport.ownHoldForNewContexts;
        ShmTransport.ownHoldForNewContexts = false;
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared()) {
            MemorySegment region = own(arena).asSlice(GUARD, SIZE);
            MemoryRegion mr = p.b.pd.register(region, RW);
            MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
            long held = ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD;
            ShmTransport.INT.setVolatile(c, held, Ctrl.SEND_HOLD);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 4242);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8).remote(mr.address(), mr.rkey())));
            WorkCompletion wc = new WorkCompletion();
            long until = System.nanoTime() + 200_000_000L;
            while (System.nanoTime() < until) {
                p.b.ctx.progress();
                assertEquals(0, p.a.cq.poll(wc), "the WRITE completed under the in-use count");
            }
            assertEquals(FILL, region.get(ValueLayout.JAVA_BYTE, 0), "the WRITE landed under the in-use count");
            ShmTransport.INT.setVolatile(c, held, 0);
            assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
            assertEquals(4242, region.get(ValueLayout.JAVA_LONG, 0));
            mr.close();
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
    }

    /** Registration says what is wrong: atomics cannot be done by the kernel's copy. */
    @Test
    void remoteAtomicAccessOnTheApplicationsOwnMemoryIsRefusedAtRegistration() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096); Arena arena = Arena.ofConfined()) {
            MemorySegment plain = arena.allocate(4096, 4096);
            RdmaException e = assertThrows(RdmaException.class,
                    () -> p.b.pd.register(plain, RW | Access.REMOTE_ATOMIC));
            assertEquals(RdmaException.Errno.EINVAL, e.errno());
            assertTrue(e.getMessage().contains("allocateBuffer") && e.getMessage().contains("REMOTE_ATOMIC"), e.getMessage());
            p.b.pd.register(plain, RW).close(); // without it: fine
        }
    }
}

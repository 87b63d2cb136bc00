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
     * What a broken or hostile peer (any process connected to b's context can write its key entries) could leave in
     * such an entry, none of which an initiator believes: the entry's access with REMOTE_ATOMIC added (its word no longer
     * the owner's attach table's: refused), its range moved onto the guard page below the region (the table's range is
     * used: the WRITE lands in the region), and a shared buffer's entry marked as one for cross-memory attach with its
     * address aimed at b's own memory (no such entry in the table: refused). Nothing outside the region is written.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aForgedEntryOfTheApplicationsOwnMemoryIsNotBelieved(ThreadingMode mode) {
        for (int forged = 0; forged < 4; forged++) {
            try (ShmPair p = new ShmPair(mode, 1 << 20); Arena arena = Arena.ofShared()) {
                MemorySegment all = own(arena);
                MemoryRegion mr = p.b.pd.register(all.asSlice(GUARD, SIZE), RW);
                MemorySegment c = p.b.transport().ctrl;
                long e = Ctrl.key(mr.rkey() >>> 8);
                assertEquals(Ctrl.ATTACHED, c.get(ValueLayout.JAVA_INT, e + Ctrl.K_FD));
                WrOpcode op = WrOpcode.RDMA_WRITE;
                long ra = mr.address();
                int rkey = mr.rkey();
                WcStatus want = WcStatus.REM_ACCESS_ERR;
                if (forged < 2) { // REMOTE_ATOMIC added to the entry's access
                    int acc = c.get(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS);
                    c.set(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS, acc | Access.REMOTE_ATOMIC);
                    op = forged == 0 ? WrOpcode.ATOMIC_FETCH_AND_ADD : WrOpcode.ATOMIC_CMP_AND_SWP;
                } else if (forged == 2) { // the range moved onto the guard page below the region
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, all.address());
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_VA, all.address());
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN, SIZE + GUARD);
                    ra = all.address() + 8;
                    want = WcStatus.REM_ACCESS_ERR; // below the region the owner published
                } else { // b's shared buffer's entry marked ATTACHED, its address b's own memory
                    long eb = Ctrl.key(p.b.mr.rkey() >>> 8);
                    c.set(ValueLayout.JAVA_INT, eb + Ctrl.K_FD, Ctrl.ATTACHED);
                    c.set(ValueLayout.JAVA_LONG, eb + Ctrl.K_INODE, 0);
                    c.set(ValueLayout.JAVA_LONG, eb + Ctrl.K_OFF, all.address());
                    c.set(ValueLayout.JAVA_LONG, eb + Ctrl.K_VA, p.b.mr.address());
                    c.set(ValueLayout.JAVA_LONG, eb + Ctrl.K_LEN, SIZE);
                    ra = p.b.mr.address();
                    rkey = p.b.mr.rkey();
                }
                java.lang.invoke.VarHandle.fullFence();
                wr.reset().wrId(1).opcode(op).flags(SendFlags.SIGNALED).remote(ra, rkey).sge(0, p.a.mr, 0, 8);
                if (op.isAtomic()) {
                    wr.atomic(1, 2);
                }
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x7777);
                WorkCompletion wc = p.run(wr);
                assertEquals(want, wc.status(), "forged entry " + forged + ": " + wc);
                for (long i = 0; i < all.byteSize(); i++) {
                    assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, i), "forged entry " + forged + ": changed at " + i);
                }
                mr.close();
            }
        }
    }

    /**
     * A region deregistered, and its key entry's word put back by a peer (the owner's attach table still holds the old
     * range, with its word cleared): neither an initiator that meets the key first now nor one that cached it before
     * the deregistration writes into memory the application may have freed; both get REM_ACCESS_ERR.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aWithdrawnKeyWhoseEntryAPeerPutBackIsRefused(ThreadingMode mode) {
        for (boolean cachedBefore : new boolean[] {false, true}) {
            try (ShmPair p = new ShmPair(mode, 1 << 20); Arena arena = Arena.ofShared()) {
                MemorySegment all = own(arena);
                MemoryRegion mr = p.b.pd.register(all.asSlice(GUARD, SIZE), RW);
                MemorySegment c = p.b.transport().ctrl;
                long e = Ctrl.key(mr.rkey() >>> 8);
                long word = c.get(ValueLayout.JAVA_LONG, e + Ctrl.K_KEY);
                long ra = mr.address();
                int rkey = mr.rkey();
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x7777);
                if (cachedBefore) {
                    assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                            .remote(ra, rkey).sge(0, p.a.mr, 0, 8)).status());
                    assertEquals(0x7777, all.get(ValueLayout.JAVA_LONG, GUARD));
                    all.fill(FILL);
                }
                mr.close();
                ShmTransport.LONG.setVolatile(c, e + Ctrl.K_KEY, word); // a peer puts the entry's word back
                refusedAndUntouched(p, all, ra, rkey, cachedBefore ? "cached" : "met first");
            }
        }
    }

    /**
     * A peer that zeroes a region's key entry word before the owner deregisters it, then puts it back: the withdrawal
     * still clears the owner's attach table (its record of such regions is its own), and a WRITE through the key gets
     * REM_ACCESS_ERR (found in review: the withdrawal returned at the zero, leaving the table's entry published).
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aKeyWordAPeerZeroedBeforeTheDeregistrationStillWithdrawsIt(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 16); Arena arena = Arena.ofShared()) {
            MemorySegment all = own(arena);
            MemoryRegion mr = p.b.pd.register(all.asSlice(GUARD, SIZE), RW);
            MemorySegment c = p.b.transport().ctrl;
            long e = Ctrl.key(mr.rkey() >>> 8);
            long word = c.get(ValueLayout.JAVA_LONG, e + Ctrl.K_KEY);
            ShmTransport.INT.setVolatile(c, e + Ctrl.K_KEY, 0);
            long ra = mr.address();
            int rkey = mr.rkey();
            mr.close();
            ShmTransport.LONG.setVolatile(c, e + Ctrl.K_KEY, word);
            refusedAndUntouched(p, all, ra, rkey, "zeroed first");
        }
    }

    /** a's 8-byte WRITE to {@code ra} through {@code rkey}: REM_ACCESS_ERR, and b's memory {@code all} all FILL still. */
    private void refusedAndUntouched(ShmPair p, MemorySegment all, long ra, int rkey, String what) {
        p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x5555);
        WorkCompletion wc = p.run(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(ra, rkey).sge(0, p.a.mr, 0, 8));
        assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), what + ": " + wc);
        for (long i = 0; i < all.byteSize(); i++) {
            assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, i), what + ": deregistered memory written at " + i);
        }
    }

    /** The same with the forged range: a WRITE inside the region the owner published lands there, and only there. */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aForgedRangeIsNotUsed(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 20); Arena arena = Arena.ofShared()) {
            MemorySegment all = own(arena);
            MemoryRegion mr = p.b.pd.register(all.asSlice(GUARD, SIZE), RW);
            MemorySegment c = p.b.transport().ctrl;
            long e = Ctrl.key(mr.rkey() >>> 8);
            // the entry says the region starts a page lower: its first byte would be the guard's
            c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, all.address());
            java.lang.invoke.VarHandle.fullFence();
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x7777);
            WorkCompletion wc = p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .remote(mr.address(), mr.rkey()).sge(0, p.a.mr, 0, 8));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(0x7777, all.get(ValueLayout.JAVA_LONG, GUARD), "the WRITE did not land at the region's start");
            all.set(ValueLayout.JAVA_LONG, GUARD, FILL * 0x0101010101010101L);
            guardsUntouched(all);
            mr.close();
        }
    }

    /**
     * The application's memory is its own to free once deregistration returns, so a deregistration waits while a
     * process that lives holds the region for a copy (a peer stopped inside one), past the second after which a
     * shared buffer's gives up, and returns once the hold ends. A reset of the QP whose partner holds it does not wait
     * for it (a partner could hold for ever): after its second the partner lingers on a list the deregistration still
     * reads, and leaves it once its hold ends. The hold is forged
     * here: a's own hold word set to the region's entry, as a's copy in progress sets it (a: b's QP's partner, in
     * this live process).
     */
    @Test
    void aDeregistrationWaitsWhileALiveProcessHoldsTheRegionAndAResetDoesNot() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared()) {
            assertTrue(((ShmQp) p.a.qp).ownHold, "the contexts hold by their own words");
            ShmTransport bt = p.b.transport();
            MemoryRegion mr = p.b.pd.register(own(arena).asSlice(GUARD, SIZE), RW);
            long held = ((ShmQp) p.a.qp).ownHoldAddr;
            ShmTransport.INT.setVolatile(ShmTransport.ALL, held, mr.rkey() >>> 8);
            long t0 = System.nanoTime();
            p.b.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RESET));
            assertTrue(System.nanoTime() - t0 < ShmTransport.DRAIN_NANOS + 3_000_000_000L, "the reset waited for the hold");
            assertEquals(1, bt.lingering(), "the holding partner lingers");
            Thread dereg = new Thread(mr::close, "deregistration");
            dereg.start();
            dereg.join((ShmTransport.DRAIN_NANOS + 800_000_000L) / 1_000_000L);
            assertTrue(dereg.isAlive(), "the deregistration returned while a live process held the region");
            ShmTransport.INT.setVolatile(ShmTransport.ALL, held, 0);
            dereg.join(10_000);
            assertTrue(!dereg.isAlive(), "the deregistration did not return once the hold ended");
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (bt.lingering() != 0) { // the liveness check takes it off, in b's duty cycles
                assertTrue(System.nanoTime() < deadline, "the former partner still lingers after its hold ended");
                p.b.ctx.progress();
            }
        }
    }

    /**
     * While a deregistration waits for a live holder, keeping the entries lock, the engine's liveness check (every
     * 20 ms of duty cycles) leaves the lingering list for later rather than wait for that lock: the engine goes on
     * (found in review: the check took the lock, and the thread driving the engine stopped with the deregistration).
     */
    @Test
    void theLivenessCheckDoesNotWaitForADeregistrationThatWaits() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared()) {
            ShmTransport bt = p.b.transport();
            MemoryRegion mr = p.b.pd.register(own(arena).asSlice(GUARD, SIZE), RW);
            long held = ((ShmQp) p.a.qp).ownHoldAddr;
            ShmTransport.INT.setVolatile(ShmTransport.ALL, held, mr.rkey() >>> 8);
            Thread dereg = new Thread(mr::close, "deregistration");
            Thread driver = null;
            try {
                p.b.qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.RESET));
                assertEquals(1, bt.lingering(), "the holding partner lingers");
                dereg.start();
                long deadline = System.nanoTime() + 5_000_000_000L;
                while (dereg.getState() != Thread.State.TIMED_WAITING) { // in its wait, the lock kept
                    assertTrue(dereg.isAlive() && System.nanoTime() < deadline, "the deregistration did not wait");
                    Thread.onSpinWait();
                }
                long[] cycles = {0};
                driver = new Thread(() -> {
                    long until = System.nanoTime() + 200_000_000L; // ten liveness checks
                    while (System.nanoTime() < until) {
                        p.b.ctx.progress();
                        cycles[0]++;
                    }
                }, "driver");
                driver.start();
                driver.join(3_000);
                assertTrue(!driver.isAlive(), "the engine stopped with the deregistration (after " + cycles[0] + " cycles)");
                assertTrue(dereg.isAlive(), "the deregistration returned while a live process held the region");
            } finally {
                ShmTransport.INT.setVolatile(ShmTransport.ALL, held, 0);
                dereg.join(10_000);
                if (driver != null) {
                    driver.join(10_000);
                }
            }
            assertTrue(!dereg.isAlive(), "the deregistration did not return once the hold ended");
        }
    }

    /**
     * A range the owner no longer publishes under a key is never reached again through an initiator's cache, even
     * when the key's word repeats: the owner moved the key to another region (LOCAL_INV, then REG_MR) with a peer
     * setting the generation in the key entry back, or 32,768 times over, which wraps its 15 bits. The cache holds the
     * owner's publication's serial, which neither a peer nor a wrap repeats (found in review).
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void aRangeTheOwnerNoLongerPublishesIsNeverReachedAgain(boolean forged) {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared()) {
            MemorySegment r1 = arena.allocate(8192, 4096).fill((byte) 0);
            MemorySegment r2 = arena.allocate(8192, 4096).fill((byte) 0);
            MemoryRegion fast = p.b.pd.allocMr(8192);
            try {
                int key = fast.rkey();
                local(p, new SendWorkRequest().regMr(fast, r1, key, RW));
                MemorySegment c = p.b.transport().ctrl;
                long e = Ctrl.key(key >>> 8);
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x1111);
                assertEquals(WcStatus.SUCCESS, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 8).remote(r1.address(), key)).status());
                assertEquals(0x1111, r1.get(ValueLayout.JAVA_LONG, 0));
                if (forged) {
                    local(p, new SendWorkRequest().localInv(key));
                    int acc = c.get(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS);
                    c.set(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS, (acc & 0xFFFF) | (((acc >>> 16) - 1) & 0x7FFF) << 16);
                    local(p, new SendWorkRequest().regMr(fast, r2, key, RW));
                } else {
                    for (int i = 0; i < 0x8000; i++) {
                        local(p, new SendWorkRequest().localInv(key));
                        local(p, new SendWorkRequest().regMr(fast, i == 0x7FFF ? r2 : r1, key, RW));
                    }
                    local(p, new SendWorkRequest().localInv(key));
                    local(p, new SendWorkRequest().regMr(fast, r2, key, RW));
                }
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x2222);
                WorkCompletion wc = p.run(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, p.a.mr, 0, 8).remote(r1.address() + 64, key));
                assertEquals(0, r1.get(ValueLayout.JAVA_LONG, 64), "a WRITE landed in memory the owner no longer publishes");
                assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            } finally {
                fast.close();
            }
        }
    }

    /**
     * The attach table an initiator believes is the owner context's own: a peer that points b's header at another
     * context's table in the same process (c's), and b's key entry at c's word, gets REM_ACCESS_ERR for a WRITE aimed at
     * c's region (b's QP entry given c's PD too), which stays unchanged (a's hold would be on b's list of partners, which
     * c's withdrawal does not read).
     */
    @Test
    void anotherContextsAttachTableIsNotBelieved() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared();
                io.jrdma.verbs.DeviceContext cctx = ShmDevice.INSTANCE.open();
                io.jrdma.verbs.ProtectionDomain cpd = cctx.allocPd()) {
            MemorySegment rb = own(arena);
            MemorySegment rc = own(arena);
            MemoryRegion mb = p.b.pd.register(rb.asSlice(GUARD, SIZE), RW);
            MemoryRegion mc = cpd.register(rc.asSlice(GUARD, SIZE), RW);
            MemorySegment bc = p.b.transport().ctrl;
            MemorySegment cc = ((ShmTransport) ((io.jrdma.engine.core.Context) cctx).engine.transport).ctrl;
            long ec = Ctrl.key(mc.rkey() >>> 8);
            long eb = Ctrl.key(mc.rkey() >>> 8); // b's entry at c's key's index
            bc.set(ValueLayout.JAVA_INT, Ctrl.H_ATTACH_FD, cc.get(ValueLayout.JAVA_INT, Ctrl.H_ATTACH_FD));
            bc.asSlice(eb, Ctrl.KEY_BYTES).copyFrom(cc.asSlice(ec, Ctrl.KEY_BYTES)); // c's entry, word and all
            bc.set(ValueLayout.JAVA_LONG, ((ShmQp) p.b.qp).dir + Ctrl.Q_PD, cc.get(ValueLayout.JAVA_LONG, ec + Ctrl.K_PD));
            java.lang.invoke.VarHandle.fullFence();
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x7777);
            WorkCompletion wc = p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .remote(mc.address(), mc.rkey()).sge(0, p.a.mr, 0, 8));
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), wc.toString());
            for (long i = 0; i < rc.byteSize(); i++) {
                assertEquals(FILL, rc.get(ValueLayout.JAVA_BYTE, i), "c's memory written at " + i);
            }
            mc.close();
            mb.close();
        }
    }

    /** Posts {@code w} (a local operation) on b's QP and waits for its success. */
    private static void local(ShmPair p, SendWorkRequest w) {
        assertEquals(0, p.b.qp.postSend(w.wrId(100).flags(SendFlags.SIGNALED)));
        WorkCompletion wc = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
    }

    /**
     * A copy into the application's memory runs only under the initiator's own hold, whose holder a withdrawal can
     * name: a context that holds with locked instructions refuses to register such memory for remote access (and says
     * why), and an initiator without own holds toward an owner with them gets REM_ACCESS_ERR, nothing written.
     */
    @Test
    void crossMemoryAttachNeedsOwnHolds() {
        boolean was = ShmTransport.ownHoldForNewContexts;
        try {
            ShmTransport.ownHoldForNewContexts = false;
            try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16); Arena arena = Arena.ofShared()) {
                MemorySegment plain = own(arena);
                RdmaException e = assertThrows(RdmaException.class, () -> p.b.pd.register(plain.asSlice(GUARD, SIZE), RW));
                assertTrue(e.getMessage().contains("locked instructions") && e.getMessage().contains("allocateBuffer"),
                        e.getMessage());
            }
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
        try {
            ShmTransport.ownHoldForNewContexts = false; // a: no own holds; b: own holds, so it takes the registration
            try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16, 256, () -> ShmTransport.ownHoldForNewContexts = was);
                    Arena arena = Arena.ofShared()) {
                assertTrue(!((ShmQp) p.a.qp).ownHold, "a holds with locked instructions");
                MemorySegment all = own(arena);
                MemoryRegion mr = p.b.pd.register(all.asSlice(GUARD, SIZE), RW);
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x7777);
                assertEquals(WcStatus.REM_ACCESS_ERR, p.run(wr.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE)
                        .flags(SendFlags.SIGNALED).remote(mr.address(), mr.rkey()).sge(0, p.a.mr, 0, 8)).status());
                for (long i = 0; i < all.byteSize(); i++) {
                    assertEquals(FILL, all.get(ValueLayout.JAVA_BYTE, i), "written under a locked hold at " + i);
                }
                mr.close();
            }
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

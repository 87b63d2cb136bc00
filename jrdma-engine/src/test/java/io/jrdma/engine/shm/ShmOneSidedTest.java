package io.jrdma.engine.shm;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** One-sided operations on shm0 between two contexts of this process, with every check a responder makes. */
class ShmOneSidedTest {
    private static final SendWorkRequest WR = new SendWorkRequest();

    private static SendWorkRequest op(WrOpcode op, ShmPair p, long localOff, int len, long remoteOff) {
        return WR.reset().wrId(localOff).opcode(op).flags(SendFlags.SIGNALED).sge(0, p.a.mr, localOff, len)
                .remote(p.b.mr.address() + remoteOff, p.b.mr.rkey());
    }

    /**
     * A one-sided request whose local buffer the application freed while it was registered completes with LOC_PROT_ERR,
     * as on the queued path, and changes nothing at the target (before, a direct post threw IllegalStateException out of
     * {@code postSend}, and an atomic's add had been done before its result's store failed). Both threading modes:
     * INVOKER takes the direct path first, DEDICATED the queued one.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aRequestWithFreedLocalMemoryCompletesWithLocProtErrAndChangesNothing(ThreadingMode mode) {
        for (WrOpcode opcode : new WrOpcode[] {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_READ, WrOpcode.ATOMIC_FETCH_AND_ADD,
                WrOpcode.ATOMIC_CMP_AND_SWP}) {
            for (int len : opcode.isAtomic() ? new int[] {8} : new int[] {8, 4096}) {
                String what = opcode + " of " + len + " B (" + mode + ")";
                try (ShmPair p = new ShmPair(mode, 1 << 16)) {
                    p.b.buf.set(ValueLayout.JAVA_LONG, 256, 41L);
                    Arena freed = Arena.ofShared();
                    MemoryRegion gone = p.a.pd.register(p.a.ctx.allocateBuffer(4096, 4096, freed), ShmPair.ALL);
                    try {
                        freed.close();
                        int rc = p.a.qp.postSend(WR.reset().wrId(9).opcode(opcode).flags(SendFlags.SIGNALED)
                                .sge(0, gone, 0, len).remote(p.b.mr.address() + 256, p.b.mr.rkey()).atomic(41, 77));
                        assertEquals(0, rc, what + ": the post takes it");
                        WorkCompletion wc = p.await(p.a.cq);
                        assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), what + ": " + wc);
                        assertEquals(41L, p.b.buf.get(ValueLayout.JAVA_LONG, 256), what + ": the target's word unchanged");
                    } finally {
                        gone.close();
                    }
                }
            }
        }
    }

    @Test
    void shm0IsListedWithItsTransport() {
        assertTrue(Rdma.devices().stream().anyMatch(d -> d.name().equals("shm0") && d.transport() == Transport.SHM),
                "Rdma.devices() lists shm0: " + Rdma.devices());
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void writeReadAndAtomicsReachTheTargetsMemory(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, 1 << 20)) {
            for (int i = 0; i < 100_000; i++) {
                p.a.buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
            }
            WorkCompletion wc = p.run(op(WrOpcode.RDMA_WRITE, p, 0, 100_000, 4096));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
            // the completion means the data is in the target's memory: no wait, no target engine run
            for (int i = 0; i < 100_000; i++) {
                assertEquals((byte) (i * 7), p.b.buf.get(ValueLayout.JAVA_BYTE, 4096 + i), "byte " + i);
            }
            p.b.buf.set(ValueLayout.JAVA_LONG, 500_000, 0x1122334455667788L);
            wc = p.run(op(WrOpcode.RDMA_READ, p, 200_000, 8, 500_000));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(8, wc.byteLen());
            assertEquals(0x1122334455667788L, p.a.buf.get(ValueLayout.JAVA_LONG, 200_000));

            p.b.buf.set(ValueLayout.JAVA_LONG, 8192, 40);
            wc = p.run(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 300_000, 8, 8192).atomic(2, 0));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(40, p.a.buf.get(ValueLayout.JAVA_LONG, 300_000), "the original value");
            assertEquals(42, p.b.buf.get(ValueLayout.JAVA_LONG, 8192));
            wc = p.run(op(WrOpcode.ATOMIC_CMP_AND_SWP, p, 300_008, 8, 8192).atomic(42, 7));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(42, p.a.buf.get(ValueLayout.JAVA_LONG, 300_008));
            assertEquals(7, p.b.buf.get(ValueLayout.JAVA_LONG, 8192));
            wc = p.run(op(WrOpcode.ATOMIC_CMP_AND_SWP, p, 300_016, 8, 8192).atomic(42, 9));
            assertEquals(7, p.a.buf.get(ValueLayout.JAVA_LONG, 300_016), "a failed compare returns the value");
            assertEquals(7, p.b.buf.get(ValueLayout.JAVA_LONG, 8192), "and leaves it");
        }
    }

    /**
     * A bulk WRITE or READ places exactly its bytes, at sizes below, inside and above the band that libc's memmove
     * copies (Native.MOVE_MIN..MOVE_MAX) and on both of its edges, from and to unaligned addresses; the bytes
     * around the range stay as they were.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void bulkCopiesAroundTheMemmoveBandPlaceExactlyTheirBytes(ThreadingMode mode) {
        int[] sizes = {16_384, (int) Native.MOVE_MIN - 1, (int) Native.MOVE_MIN, 65_536, (int) Native.MOVE_MAX,
            (int) Native.MOVE_MAX + 1, 262_144};
        try (ShmPair p = new ShmPair(mode, 1 << 20)) {
            int round = 0;
            for (int len : sizes) {
                for (WrOpcode opc : new WrOpcode[] {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_READ}) {
                    round++;
                    boolean write = opc == WrOpcode.RDMA_WRITE;
                    MemorySegment src = write ? p.a.buf : p.b.buf;
                    MemorySegment dst = write ? p.b.buf : p.a.buf;
                    long localOff = 4096 + 3;
                    long remoteOff = 300_000 + 5;
                    long srcOff = write ? localOff : remoteOff;
                    long dstOff = write ? remoteOff : localOff;
                    dst.asSlice(dstOff - 64, len + 128).fill((byte) 0x5a);
                    for (int i = 0; i < len; i++) {
                        src.set(ValueLayout.JAVA_BYTE, srcOff + i, (byte) (i * 31 + round));
                    }
                    WorkCompletion wc = p.run(op(opc, p, localOff, len, remoteOff));
                    assertEquals(WcStatus.SUCCESS, wc.status(), opc + " of " + len + " B");
                    assertEquals(len, wc.byteLen(), opc + " of " + len + " B");
                    for (int i = 0; i < len; i++) {
                        if (dst.get(ValueLayout.JAVA_BYTE, dstOff + i) != (byte) (i * 31 + round)) {
                            throw new AssertionError(opc + " of " + len + " B: byte " + i + " is "
                                    + dst.get(ValueLayout.JAVA_BYTE, dstOff + i));
                        }
                    }
                    for (int i = 1; i <= 64; i++) {
                        assertEquals((byte) 0x5a, dst.get(ValueLayout.JAVA_BYTE, dstOff - i), opc + " of " + len + ": before");
                        assertEquals((byte) 0x5a, dst.get(ValueLayout.JAVA_BYTE, dstOff + len - 1 + i), opc + " of " + len + ": after");
                    }
                }
            }
        }
    }

    /**
     * A region whose arena the application closed fails a WRITE that would copy from it, at any size (the 8-byte
     * path, libc's copy, {@code MemorySegment.copy}), with LOC_PROT_ERR as the queued path fails it, reading nothing
     * of the freed memory and writing nothing at the target, and crashes nothing (libc's copy is handed the segment,
     * so a closed arena fails the call before it copies). Before 2026-11-28 the direct path threw the arena's
     * IllegalStateException out of {@code postSend} instead.
     */
    @Test
    void aLocalRegionWhoseArenaWasClosedFailsThePost() {
        for (int len : new int[] {8, 4096, (int) Native.MOVE_MIN, 65_536}) {
            try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 20)) {
                p.b.buf.asSlice(0, len).fill((byte) 0x5a);
                Arena own = Arena.ofShared();
                MemorySegment plain = own.allocate(len, 4096);
                plain.fill((byte) 0x11);
                MemoryRegion local = p.a.pd.register(plain, Access.LOCAL_WRITE);
                own.close();
                assertEquals(0, p.a.qp.postSend(WR.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                        .sge(0, local, 0, len).remote(p.b.mr.address(), p.b.mr.rkey())), len + " B: the post takes it");
                WorkCompletion wc = p.await(p.a.cq);
                assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), len + " B: " + wc);
                for (int i = 0; i < len; i += 512) {
                    assertEquals((byte) 0x5a, p.b.buf.get(ValueLayout.JAVA_BYTE, i), len + " B: nothing written at " + i);
                }
                local.close();
            }
        }
    }

    @Test
    void theMemmoveBandIsASettingWithAClearError() {
        assertEquals(32_768, Native.MOVE_MIN, "the default band's lower edge (docs/shm-design.md)");
        assertEquals(131_072, Native.MOVE_MAX);
        assertEquals(java.util.List.of(1L, 2L), java.util.Arrays.stream(Native.moveBand("1-2")).boxed().toList());
        assertTrue(Native.moveBand("off")[0] > Native.moveBand("off")[1], "off: an empty band");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Native.moveBand("64k"));
        assertTrue(e.getMessage().contains("MIN-MAX") && e.getMessage().contains("off"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Native.moveBand("9-1"));
    }

    /** The initiator's FETCH_ADD and the target's own CPU atomics on the same word lose no update. */
    @Test
    void atomicsAreAtomicAgainstTheTargetsOwnCpu() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            VarHandle word = ValueLayout.JAVA_LONG.varHandle();
            int n = 20_000;
            Thread local = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < n; i++) {
                    word.getAndAdd(p.b.buf, 64L, 1L);
                }
            });
            for (int i = 0; i < n; i++) {
                assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 0, 8, 64).atomic(1, 0)).status());
            }
            local.join(10_000);
            assertEquals(2L * n, (long) word.getVolatile(p.b.buf, 64L));
        }
    }

    /** The connection manager (a loopback TCP side channel) sets shm QPs up; the private data travels. */
    @Test
    void theConnectionManagerConnectsShmQps() throws Exception {
        try (Arena arena = Arena.ofShared();
             var server = ShmDevice.INSTANCE.open();
             var client = ShmDevice.INSTANCE.open(io.jrdma.verbs.DeviceOptions.defaults()
                     .withThreadingMode(ThreadingMode.INVOKER))) {
            var spd = server.allocPd();
            var scq = server.createCq(16);
            var sqp = spd.createQp(io.jrdma.verbs.QpInitAttr.rc(scq));
            MemorySegment sbuf = server.allocateBuffer(4096, 4096, arena);
            MemoryRegion smr = spd.register(sbuf, ShmPair.ALL);
            var cpd = client.allocPd();
            var ccq = client.createCq(16);
            var cqp = cpd.createQp(io.jrdma.verbs.QpInitAttr.rc(ccq));
            MemorySegment cbuf = client.allocateBuffer(4096, 4096, arena);
            MemoryRegion cmr = cpd.register(cbuf, Access.LOCAL_WRITE);
            var listener = server.connectionManager().listen(new java.net.InetSocketAddress("127.0.0.1", 0));
            var accepted = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                var req = listener.poll(java.time.Duration.ofSeconds(10));
                byte[] where = java.nio.ByteBuffer.allocate(12).putLong(smr.address()).putInt(smr.rkey()).array();
                return req.accept(sqp, io.jrdma.verbs.ConnParam.defaults().withPrivateData(where),
                        java.time.Duration.ofSeconds(10));
            });
            var conn = client.connectionManager().connect(cqp, new java.net.InetSocketAddress("127.0.0.1",
                    listener.address().getPort()), io.jrdma.verbs.ConnParam.defaults(), java.time.Duration.ofSeconds(10));
            var serverConn = accepted.get(10, java.util.concurrent.TimeUnit.SECONDS);
            var where = java.nio.ByteBuffer.wrap(conn.peerParam().privateData());
            assertEquals(QpState.RTS, cqp.state());
            assertEquals(sqp.qpn(), conn.peerQpn());
            cbuf.setString(0, "hello, shared memory");
            assertEquals(0, cqp.postSend(WR.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, cmr, 0, 64).remote(where.getLong(), where.getInt())));
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (ccq.poll(wc) == 0) {
                assertTrue(System.nanoTime() < deadline, "no completion within 10 s");
            }
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals("hello, shared memory", sbuf.getString(0));
            conn.close();
            serverConn.close();
            listener.close();
            cqp.close();
            cmr.close();
            ccq.close();
            cpd.close();
            sqp.close();
            smr.close();
            scq.close();
            spd.close();
        }
    }

    @Test
    void aBadKeyFailsWithRemAccessErrAndTouchesNothing() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.a.buf.fill((byte) 1);
            WorkCompletion wc = p.run(op(WrOpcode.RDMA_WRITE, p, 0, 64, 0).remote(p.b.mr.address(), p.b.mr.rkey() ^ 1));
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            assertEquals(QpState.ERROR, p.a.qp.state());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            driveUntil(p, () -> p.b.qp.state() == QpState.ERROR); // the responder's QP stops as rxe's does
        }
    }

    @Test
    void boundsAccessAndPdAreChecked() {
        // past the end of the region
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 64, (1 << 16) - 63)).status());
            driveUntil(p, () -> p.b.qp.state() == QpState.ERROR); // the responder's QP stops as rxe's does
        }
        // before its start
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.RDMA_READ, p, 0, 64, -8)).status());
        }
        // a region without REMOTE_WRITE
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion ro = p.b.pd.register(p.b.buf, Access.REMOTE_READ);
            WorkCompletion wc = p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(ro.address(), ro.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            ro.close();
        }
        // a region of another PD of the target
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            ProtectionDomain other = p.b.ctx.allocPd();
            MemoryRegion mr = other.register(p.b.buf, ShmPair.ALL);
            WorkCompletion wc = p.run(op(WrOpcode.RDMA_READ, p, 0, 8, 0).remote(mr.address(), mr.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            mr.close();
            other.close();
        }
        // an atomic on a region without REMOTE_ATOMIC
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion rw = p.b.pd.register(p.b.buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            WorkCompletion wc = p.run(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 0, 8, 0).remote(rw.address(), rw.rkey())
                    .atomic(1, 0));
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            rw.close();
        }
    }

    /**
     * An initiator holds the entry it copies through by its destination QP's held word (Ctrl.Q_HELD: a CAS from 0, a
     * release store of 0 after): a deregistration waits while the word names its key. Here the word is set by hand,
     * as a peer stopped inside its copy would leave it; the close returns once it is cleared, not at the drain's
     * timeout (fails without the owner's scan of the held words: the close returns at once).
     */
    @Test
    void aDeregistrationWaitsForAPeerThatHoldsItsEntry() throws Exception {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
            long held = ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD;
            MemoryRegion second = p.b.pd.register(p.b.buf.asSlice(4096, 4096), ShmPair.ALL);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(second.address(), second.rkey()))
                    .status());
            assertEquals(0, (int) ShmTransport.INT.getVolatile(c, held), "the WRITE gave the held word back");
            assertCloseWaitsForTheHold(p, second, c, held, "a peer");
        }
    }

    /**
     * Sets the hold word at {@code off} of {@code seg} to {@code region}'s key index by hand, as a peer stopped inside
     * its copy would leave it, and checks that the region's close waits while it is set and returns once it is
     * cleared, not at the drain's timeout (1 s, counted as an engine error).
     */
    private static void assertCloseWaitsForTheHold(ShmPair p, MemoryRegion region, MemorySegment seg, long off, String who)
            throws InterruptedException {
        io.jrdma.engine.core.Counters counters = ((io.jrdma.engine.core.Context) p.b.ctx).engine.counters;
        long errors = counters.get(io.jrdma.engine.core.Counter.ENGINE_ERRORS);
        ShmTransport.INT.setVolatile(seg, off, region.rkey() >>> 8);
        Thread closer = new Thread(region::close, "closer");
        closer.start();
        closer.join(200);
        assertTrue(closer.isAlive(), "the region was deregistered while " + who + " held its entry");
        ShmTransport.INT.setVolatile(seg, off, 0);
        closer.join(10_000);
        assertTrue(!closer.isAlive(), "the deregistration did not end after the hold");
        assertEquals(errors, counters.get(io.jrdma.engine.core.Counter.ENGINE_ERRORS),
                "the deregistration ended at its timeout (1 s), not when the hold ended");
    }

    /**
     * An initiator that holds by the locked words (without its own hold: one end without membarrier) and finds the
     * destination QP's held word taken (left by an initiator that died inside its copy, say) holds the key entry's
     * in-use count instead: its WRITE lands, the count is back at 0 after it, the other's hold is left alone.
     */
    @Test
    void anInitiatorThatFindsTheHeldWordTakenHoldsTheInUseCount() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
            ((ShmQp) p.a.qp).ownHold = false; // the locked holds, as between contexts without membarrier
            long held = ((ShmQp) p.b.qp).dir + Ctrl.Q_HELD;
            long inUse = Ctrl.key(p.b.mr.rkey() >>> 8) + Ctrl.K_IN_USE;
            ShmTransport.INT.setVolatile(c, held, 4321); // another initiator's hold of another entry
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x1234);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)).status());
            assertEquals(0x1234, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 8, 8, 64).atomic(1, 0)).status());
            assertEquals(0x1235, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            assertEquals(0, (int) ShmTransport.INT.getVolatile(c, inUse), "the in-use count after the operations");
            assertEquals(4321, (int) ShmTransport.INT.getVolatile(c, held), "the other initiator's hold");
            ShmTransport.INT.setVolatile(c, held, 0);
        }
    }

    /** @return the address of the own hold word of the side's QP (an initiator's, in its own control segment) */
    private static long ownHold(ShmPair.Side s) {
        return s.transport().ctrl.address() + Ctrl.hold(((ShmQp) s.qp).slot);
    }

    /**
     * With membarrier (both ends), each QP's entry names its partner, and the partner's one-sided operations hold by
     * their own word: a sentinel put there by hand is overwritten by the WRITE's hold and given back as 0, while the
     * destination's shared held word and in-use count are not touched (fails when the operation takes the locked
     * holds: the sentinel stays). In both threading modes.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aPartnerHoldsByItsOwnWordAndGivesItBack(ThreadingMode mode) {
        org.junit.jupiter.api.Assumptions.assumeTrue(Native.asymmetric(), () -> "membarrier: " + Native.asymmetricReason());
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            MemorySegment c = p.b.transport().ctrl;
            long dir = ((ShmQp) p.b.qp).dir;
            assertEquals(p.a.qp.qpn(), (int) ShmTransport.INT.getVolatile(c, dir + Ctrl.Q_DEST_QPN), "the partner's QPN");
            long own = ownHold(p.a);
            ShmTransport.INT.setVolatile(ShmTransport.ALL, own, 777);
            ShmTransport.INT.setVolatile(c, dir + Ctrl.Q_HELD, 4321);
            long inUse = Ctrl.key(p.b.mr.rkey() >>> 8) + Ctrl.K_IN_USE;
            ShmTransport.INT.setVolatile(c, inUse, 55);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x5678);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 128)).status());
            assertEquals(0x5678, p.b.buf.get(ValueLayout.JAVA_LONG, 128));
            assertEquals(0, (int) ShmTransport.INT.getVolatile(ShmTransport.ALL, own), "the own hold, given back");
            assertEquals(4321, (int) ShmTransport.INT.getVolatile(c, dir + Ctrl.Q_HELD), "the shared held word");
            assertEquals(55, (int) ShmTransport.INT.getVolatile(c, inUse), "the in-use count");
            ShmTransport.INT.setVolatile(c, dir + Ctrl.Q_HELD, 0);
            ShmTransport.INT.setVolatile(c, inUse, 0);
        }
    }

    /**
     * A deregistration waits while a partner's own hold word names its key (set by hand, as a partner stopped inside
     * its copy would leave it), and ends once it is cleared, not at the drain's timeout (fails without the owner's
     * scan of its partners' words after its membarrier: the close returns at once).
     */
    @Test
    void aDeregistrationWaitsForAPartnersOwnHold() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Native.asymmetric(), () -> "membarrier: " + Native.asymmetricReason());
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion second = p.b.pd.register(p.b.buf.asSlice(4096, 4096), ShmPair.ALL);
            assertCloseWaitsForTheHold(p, second, ShmTransport.ALL, ownHold(p.a), "its partner");
        }
    }

    /**
     * A QP that lets its partner go (here: to RESET) first clears the partner's name from its entry and then waits
     * while the partner holds by its own word (an operation that read the name before it was cleared), so that no
     * later withdrawal misses that hold; it goes on once the word is 0 (fails without that wait: the modify returns
     * at once).
     */
    @Test
    void aResetWaitsForItsPartnersOwnHold() throws Exception {
        assertLettingGoWaitsForTheOwnHold(p -> p.b.qp.modify(new QpAttr().state(QpState.RESET)), "reset");
    }

    /**
     * A destroyed QP lets its partner go as a reset does, and raises its entry's generation before it waits for the
     * partner's own hold (a destroy runs no modify that would raise it first): a partner that kept its checks either
     * has its hold seen by that wait or sees the new generation and checks everything again (fails without the raise
     * in the partner's release: the generation is the old one while the destroy waits).
     */
    @Test
    void aDestroyRaisesTheGenerationBeforeItWaitsForItsPartner() throws Exception {
        assertLettingGoWaitsForTheOwnHold(p -> p.b.qp.close(), "destroy");
    }

    /**
     * Sets b's partner's own hold word by hand (as an operation stopped inside its copy would leave it), lets b's QP
     * go from its partner ({@code letGo}) in a thread, and checks that it waits while the word is set, with the
     * partner's name cleared and the entry's generation raised by then, and ends once the word is cleared.
     */
    private static void assertLettingGoWaitsForTheOwnHold(java.util.function.Consumer<ShmPair> letGo, String what)
            throws InterruptedException {
        org.junit.jupiter.api.Assumptions.assumeTrue(Native.asymmetric(), () -> "membarrier: " + Native.asymmetricReason());
        try (ShmPair p = new ShmPair(ThreadingMode.DEDICATED, 1 << 16)) {
            long own = ownHold(p.a);
            MemorySegment c = p.b.transport().ctrl;
            long dir = ((ShmQp) p.b.qp).dir;
            long before = (long) ShmTransport.LONG.getVolatile(c, dir + Ctrl.Q_GEN);
            ShmTransport.INT.setVolatile(ShmTransport.ALL, own, p.b.mr.rkey() >>> 8);
            Thread t = new Thread(() -> letGo.accept(p), what);
            t.start();
            t.join(200);
            assertTrue(t.isAlive(), "the " + what + " let the partner go while the partner held its memory");
            assertEquals(0, (int) ShmTransport.INT.getVolatile(c, dir + Ctrl.Q_DEST_QPN), "the partner's name, cleared first");
            assertTrue((long) ShmTransport.LONG.getVolatile(c, dir + Ctrl.Q_GEN) > before,
                    "the entry's generation, raised before the wait (a partner's kept checks end with it)");
            ShmTransport.INT.setVolatile(ShmTransport.ALL, own, 0);
            t.join(10_000);
            assertTrue(!t.isAlive(), "the " + what + " did not end after the hold");
        }
    }

    /**
     * Contexts opened without the own hold (the setting membarrier decides; a test can turn it off) still name their
     * QPs' partners (a QP takes requests from its partner alone), and their operations take the locked holds: the
     * initiator's own word is not touched (its sentinel stays), and WRITE, READ and FETCH_ADD land as before.
     */
    @Test
    void withoutTheOwnHoldTheLockedHoldsAreUsed() {
        boolean was = ShmTransport.ownHoldForNewContexts;
        ShmTransport.ownHoldForNewContexts = false;
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            ShmTransport.ownHoldForNewContexts = was;
            assertEquals(p.a.qp.qpn(), (int) ShmTransport.INT.getVolatile(p.b.transport().ctrl, ((ShmQp) p.b.qp).dir + Ctrl.Q_DEST_QPN));
            assertEquals(0, p.b.transport().partners, "no partner on the list a withdrawal reads");
            long own = ownHold(p.a);
            ShmTransport.INT.setVolatile(ShmTransport.ALL, own, 777);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 41);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 256)).status());
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 8, 8, 256).atomic(1, 0)).status());
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_READ, p, 16, 8, 256)).status());
            assertEquals(42, p.a.buf.get(ValueLayout.JAVA_LONG, 16));
            assertEquals(777, (int) ShmTransport.INT.getVolatile(ShmTransport.ALL, own), "the own hold word, untouched");
            ShmTransport.INT.setVolatile(ShmTransport.ALL, own, 0);
        } finally {
            ShmTransport.ownHoldForNewContexts = was;
        }
    }

    /**
     * A partner whose checks of the target QP and key passed once repeats none of them while the QP entry's
     * generation and the key's word stay the same, and sees every change: the target QP's access taken away by an
     * RTS to RTS modify (fails without the generation raised at a modify: the WRITE lands), and, through a key whose
     * checks were kept, a range past the region's end, an access the key does not give, and a key deregistered and
     * another registered in its entry (each fails without its test in the kept checks' path). In both threading modes.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void checksKeptFromOneOperationStillSeeEveryChange(ThreadingMode mode) {
        org.junit.jupiter.api.Assumptions.assumeTrue(Native.asymmetric(), () -> "membarrier: " + Native.asymmetricReason());
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 11);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)).status());
            assertTrue(((ShmQp) p.a.qp).checked, "the partner kept its checks");
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 12);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)).status());
            assertEquals(12, p.b.buf.get(ValueLayout.JAVA_LONG, 64));
            p.b.qp.modify(new QpAttr().accessFlags(Access.LOCAL_WRITE | Access.REMOTE_READ)); // RTS to RTS
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 13);
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)).status());
            assertEquals(12, p.b.buf.get(ValueLayout.JAVA_LONG, 64), "a WRITE the target QP no longer allows");
        }
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 64)).status());
            assertTrue(((ShmQp) p.a.qp).checked);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 21);
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, (1 << 16) - 4)).status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_INT, (1 << 16) - 4), "a WRITE past the region's end");
        }
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            MemoryRegion rw = p.b.pd.register(p.b.buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(rw.address() + 64, rw.rkey()))
                    .status());
            assertTrue(((ShmQp) p.a.qp).checked);
            p.b.buf.set(ValueLayout.JAVA_LONG, 128, 5);
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.ATOMIC_FETCH_AND_ADD, p, 8, 8, 0)
                    .remote(rw.address() + 128, rw.rkey()).atomic(1, 0)).status());
            assertEquals(5, p.b.buf.get(ValueLayout.JAVA_LONG, 128), "an atomic through a key without REMOTE_ATOMIC");
            rw.close();
        }
        try (ShmPair p = new ShmPair(mode, 1 << 16)) {
            MemoryRegion second = p.b.pd.register(p.b.buf.asSlice(4096, 4096), ShmPair.ALL);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(second.address(), second.rkey()))
                    .status());
            assertTrue(((ShmQp) p.a.qp).checked);
            int rkey = second.rkey();
            long addr = second.address();
            second.close();
            MemoryRegion third = p.b.pd.register(p.b.buf.asSlice(8192, 4096), Access.LOCAL_WRITE);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 31);
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(addr, rkey)).status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, 4096), "a WRITE through a deregistered key");
            third.close();
        }
    }

    @Test
    void theOwnHoldIsASettingWithAClearError() {
        assertTrue(Native.ownHoldSetting("on"));
        assertTrue(!Native.ownHoldSetting("off"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Native.ownHoldSetting("yes"));
        assertTrue(e.getMessage().contains("-Djrdma.shm.ownHold=yes") && e.getMessage().contains("on or off"), e.getMessage());
    }

    /**
     * A key entry (in the target's control segment, which any peer process of the same user can write) whose range
     * does not lie inside its buffer: refused with REM_ACCESS_ERR, nothing touched. The initiator reaches the
     * target's memory by address (ShmTransport.ALL), so this check, made when it reads the entry's fields, is what
     * keeps an access inside the mapping; without it the WRITEs below land outside it. Also refused: a K_VA near
     * the signed limit, with which a far address passed a signed bounds test (its offset wrapped), and a buffer
     * size larger than the buffer's file (a mapping past the file's end faults when touched).
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aKeyEntryWhoseRangeLiesOutsideItsBufferIsRefused(ThreadingMode mode) {
        for (int forged = 0; forged < 4; forged++) {
            try (ShmPair p = new ShmPair(mode, 1 << 16)) {
                MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
                long e = Ctrl.key(p.b.mr.rkey() >>> 8);
                long bufSize = c.get(ValueLayout.JAVA_LONG, e + Ctrl.K_BUFSIZE);
                assertEquals(1 << 16, bufSize);
                long remoteOff;
                if (forged == 0) { // a region longer than its buffer: a WRITE past the buffer's end, inside the region
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN, bufSize + (1 << 20));
                    remoteOff = bufSize + (1 << 19);
                } else if (forged == 1) { // a region that starts far past its buffer
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, 1L << 40);
                    remoteOff = 0;
                } else if (forged == 2) { // K_VA at the signed minimum, a WRITE to address 0x1000
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_VA, Long.MIN_VALUE);
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, 0);
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN, 4096);
                    remoteOff = 0x1000 - p.b.mr.address();
                } else { // a buffer (and region) the size of 1 GiB, its file 64 KiB: a WRITE 1 MiB in
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_BUFSIZE, 1L << 30);
                    c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN, 1L << 30);
                    remoteOff = 1 << 20;
                }
                VarHandle.fullFence();
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 77);
                WorkCompletion wc = p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, remoteOff));
                assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), "forged entry " + forged + ": " + wc);
                driveUntil(p, () -> p.a.qp.state() == QpState.ERROR); // DEDICATED: moved after the completion's push
            }
        }
    }

    /**
     * An atomic whose 8-byte aligned remote address falls off an 8-byte boundary of the target's buffer (a key entry
     * whose offset and address differ modulo 8, as only a peer's write leaves one): a CPU atomic cannot be done there, and the request fails with
     * REM_INV_REQ_ERR (rxe's misaligned atomic) instead of an exception out of the engine; nothing is touched.
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void anAtomicOffAnEightByteBoundaryOfTheBufferFails(ThreadingMode mode) {
        for (WrOpcode atomic : new WrOpcode[] {WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP}) {
            try (ShmPair p = new ShmPair(mode, 1 << 16)) {
                MemorySegment c = ((ShmTransport) ((io.jrdma.engine.core.Context) p.b.ctx).engine.transport).ctrl;
                long e = Ctrl.key(p.b.mr.rkey() >>> 8);
                c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, 4);
                c.set(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN, (1 << 16) - 8);
                VarHandle.fullFence();
                p.b.buf.fill((byte) 0x11);
                SendWorkRequest w = op(atomic, p, 0, 8, 0);
                w.atomic(5, 6);
                WorkCompletion wc = p.run(w);
                assertEquals(WcStatus.REM_INV_REQ_ERR, wc.status(), atomic + ": " + wc);
                driveUntil(p, () -> p.a.qp.state() == QpState.ERROR); // DEDICATED: moved after the completion's push
                assertEquals(-1, p.b.buf.mismatch(MemorySegment.ofArray(new byte[1 << 16]).fill((byte) 0x11)),
                        atomic + ": the target's buffer was written");
            }
        }
    }

    /**
     * A target QP that takes no requests: the request waits out the requester's retries, timeout × (retry_cnt + 1)
     * (ShmPair: 4.096 µs × 2^14, 8 times: 537 ms), as a NIC's does, then fails with RETRY_EXC_ERR; a target QP
     * that comes up meanwhile (reset and connected again) takes it.
     */
    @Test
    void aRequestNothingAnswersWaitsOutTheRetries() {
        long retries = (4096L << 14) * 8;
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.b.qp.modify(new QpAttr().state(QpState.ERROR));
            long t0 = System.nanoTime();
            WorkCompletion wc = p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0));
            long waited = System.nanoTime() - t0;
            assertEquals(WcStatus.RETRY_EXC_ERR, wc.status(), "a WRITE to a QP in ERROR: " + wc);
            assertTrue(waited >= retries, "RETRY_EXC_ERR after " + waited + " ns, before the retries ran out ("
                    + retries + " ns)");
        }
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.b.qp.modify(new QpAttr().state(QpState.ERROR));
            p.b.qp.modify(new QpAttr().state(QpState.RESET));
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 0x5EED);
            assertEquals(0, p.a.qp.postSend(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0)), "postSend");
            WorkCompletion wc = new WorkCompletion();
            long until = System.nanoTime() + 20_000_000L; // well inside the retries
            while (System.nanoTime() - until < 0) {
                p.a.ctx.progress();
                assertEquals(0, p.a.cq.poll(wc), "a WRITE to a QP in RESET completed: " + wc);
            }
            ShmPair.connect(p.b, p.a, 7);
            wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status(), "a WRITE whose target QP came up during its retries: " + wc);
            assertEquals(0x5EED, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * A request's local regions are looked up again when its memory is touched, not only when it was first looked at
     * (found in review). A READ queued behind a SEND in flight, its sink deregistered before the SEND's answer: the
     * READ completes with LOC_PROT_ERR and writes nothing. A SEND of more than the ring holds, its source
     * deregistered while part of it waits for room: the rest is not read, the SEND completes with LOC_PROT_ERR.
     * Either way the QP enters ERROR.
     */
    @Test
    void aRegionGoneWhileItsRequestWaitsIsALocalProtectionError() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            p.b.buf.asSlice(0, 4096).fill((byte) 0x5A);
            assertEquals(0, p.b.qp.postRecv(new io.jrdma.verbs.RecvWorkRequest().wrId(1).sge(0, p.b.mr, 8192, 64)));
            MemoryRegion sink = p.a.pd.register(p.a.buf.asSlice(4096, 4096), Access.LOCAL_WRITE);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)));
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ)
                    .flags(SendFlags.SIGNALED).sge(0, sink, 0, 4096).remote(p.b.mr.address(), p.b.mr.rkey())));
            for (int i = 0; i < 4; i++) {
                p.a.ctx.progress(); // a's engine looks at the READ, which waits: the SEND before it has no answer
            }
            sink.close();
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(2, wc.wrId(), wc.toString());
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            wc = p.await(p.a.cq);
            assertEquals(3, wc.wrId(), wc.toString());
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
            assertEquals(QpState.ERROR, p.a.qp.state());
            for (long i = 0; i < 4096; i++) {
                assertEquals(0, p.a.buf.get(ValueLayout.JAVA_BYTE, 4096 + i), "byte " + i + " of the sink written");
            }
        }
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 20)) {
            int n = 1 << 19; // 64 chunks: the ring takes 16 before b's engine runs
            p.a.buf.asSlice(0, n).fill((byte) 0x3C);
            MemoryRegion src = p.a.pd.register(p.a.buf.asSlice(0, n), 0);
            assertEquals(0, p.b.qp.postRecv(new io.jrdma.verbs.RecvWorkRequest().wrId(1).sge(0, p.b.mr, 0, n)));
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, src, 0, n)));
            for (int i = 0; i < 4; i++) {
                p.a.ctx.progress();
            }
            assertTrue(((ShmQp) p.a.qp).sending && ((ShmQp) p.a.qp).sendOffset > 0, "the SEND is part way written");
            src.close();
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(4, wc.wrId(), wc.toString());
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
            assertEquals(QpState.ERROR, p.a.qp.state());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_BYTE, n - 1), "the SEND's last chunk was never written");
        }
    }

    /**
     * A peer's buffers that their owner freed are let go while the connection lasts (found in review): before, the
     * initiator kept every buffer it had mapped until its last QP let the peer go, so a peer that frees and allocates
     * buffers over a long connection had their memory held here. Forty buffers of b, each registered, written by a,
     * then deregistered and freed: a's mappings of b's buffers stay a few, and every WRITE lands in its own buffer.
     */
    @Test
    void buffersTheirOwnerFreedAreUnmappedWhileTheConnectionLasts() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096)) {
            for (int i = 0; i < 40; i++) {
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment seg = p.b.ctx.allocateBuffer(4096, 4096, arena);
                    MemoryRegion mr = p.b.pd.register(seg, ShmPair.ALL);
                    p.a.buf.set(ValueLayout.JAVA_LONG, 0, 1000 + i);
                    assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0)
                            .remote(mr.address() + 64, mr.rkey())).status());
                    assertEquals(1000 + i, seg.get(ValueLayout.JAVA_LONG, 64), "the WRITE landed in buffer " + i);
                    mr.close();
                }
            }
            int mapped = ((ShmQp) p.a.qp).peer.mappings();
            assertTrue(mapped <= 2 * Peer.SWEEP_MIN, "a maps " + mapped + " of b's buffers, 39 of them freed");
            // b's own buffer, mapped first and never freed, is still reached
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 77);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 128)).status());
            assertEquals(77, p.b.buf.get(ValueLayout.JAVA_LONG, 128));
        }
    }

    /**
     * A QP's cached key entry whose buffer the peer's look let go is dropped with it: a's first QP caches the entry
     * of a buffer b then frees while it is still registered (b's misuse), a's second QP maps enough other buffers
     * that the look runs and unmaps the freed one; the first QP's next WRITE through the same key finds the buffer
     * gone (REM_ACCESS_ERR) instead of writing through a mapping that is no more.
     */
    @Test
    void aCachedKeyIntoABufferLetGoIsDroppedWithIt() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096)) {
            io.jrdma.verbs.QueuePair a2 = p.a.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.a.cq).withDepth(64, 64));
            io.jrdma.verbs.QueuePair b2 = p.b.pd.createQp(io.jrdma.verbs.QpInitAttr.rc(p.b.cq).withDepth(64, 64));
            connectTo(a2, p.b.ctx.gid(0), b2.qpn());
            connectTo(b2, p.a.ctx.gid(0), a2.qpn());
            Arena freed = Arena.ofShared();
            MemorySegment seg = p.b.ctx.allocateBuffer(4096, 4096, freed);
            MemoryRegion mr = p.b.pd.register(seg, ShmPair.ALL);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(mr.address(), mr.rkey()))
                    .status());
            freed.close(); // its memfd closed, its entry still published
            for (int i = 0; i < 2 * Peer.SWEEP_MIN; i++) {
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment other = p.b.ctx.allocateBuffer(4096, 4096, arena);
                    MemoryRegion o = p.b.pd.register(other, ShmPair.ALL);
                    assertEquals(0, a2.postSend(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(o.address(), o.rkey())));
                    assertEquals(WcStatus.SUCCESS, p.await(p.a.cq).status());
                    o.close();
                }
            }
            assertTrue(((ShmQp) p.a.qp).peer.mappings() < 2 * Peer.SWEEP_MIN, "the look ran");
            WorkCompletion wc = p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(mr.address(), mr.rkey()));
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), wc.toString());
            mr.close();
            a2.close();
            b2.close();
        }
    }

    @Test
    void aDeregisteredRegionIsUnreachable() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 1 << 16)) {
            MemoryRegion second = p.b.pd.register(p.b.buf.asSlice(4096, 4096), ShmPair.ALL);
            assertEquals(WcStatus.SUCCESS, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0)
                    .remote(second.address(), second.rkey())).status());
            int rkey = second.rkey();
            long addr = second.address();
            second.close();
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 99);
            assertEquals(WcStatus.REM_ACCESS_ERR, p.run(op(WrOpcode.RDMA_WRITE, p, 0, 8, 0).remote(addr, rkey)).status());
            assertEquals(0, p.b.buf.get(ValueLayout.JAVA_LONG, 4096));
        }
    }

    @Test
    void remoteAccessNeedsSharedMemoryLocalAccessDoesNot() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, 4096); Arena own = Arena.ofConfined()) {
            MemorySegment plain = own.allocate(4096, 4096);
            RdmaException e = assertThrows(RdmaException.class, () -> p.a.pd.register(plain, ShmPair.ALL));
            assertTrue(e.getMessage().contains("allocateBuffer"), e.getMessage());
            MemoryRegion local = p.a.pd.register(plain, Access.LOCAL_WRITE);
            plain.set(ValueLayout.JAVA_LONG, 0, 1234);
            WorkCompletion wc = p.run(WR.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, local, 0, 8).remote(p.b.mr.address(), p.b.mr.rkey()));
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(1234, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            local.close();
        }
    }

    /** allocateBuffer's memory is a memfd: no file in /dev/shm, and its descriptor closes with the arena. */
    @Test
    void buffersLeaveNoFileAndCloseWithTheirArena() throws Exception {
        long before = openDescriptors();
        java.util.Set<String> shmBefore = shmFiles(); // other processes on a shared host may have theirs
        try (var ctx = ShmDevice.INSTANCE.open(); Arena arena = Arena.ofShared()) {
            long withContext = openDescriptors();
            assertEquals(shmBefore, shmFiles(), "no file in /dev/shm for the context");
            MemorySegment s = ctx.allocateBuffer(100_000, 64, arena);
            assertEquals(100_000, s.byteSize());
            assertEquals(0, s.address() % 4096);
            assertEquals(withContext + 1, openDescriptors());
            s.set(ValueLayout.JAVA_LONG, 99_992, 5);
            assertThrows(RdmaException.class, () -> ctx.allocateBuffer(0, 8, arena));
            assertThrows(RdmaException.class, () -> ctx.allocateBuffer(64, 3, arena));
            // page-aligned, the host's page (getconf's answer): more alignment than that is refused
            Process g = new ProcessBuilder("getconf", "PAGESIZE").redirectErrorStream(true).start();
            assertTrue(g.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "getconf PAGESIZE");
            assertEquals(Long.parseLong(new String(g.getInputStream().readAllBytes()).trim()), Native.PAGE_SIZE,
                    "the page size shared buffers are aligned to is the host's");
            assertEquals(0, ctx.allocateBuffer(64, Native.PAGE_SIZE, arena).address() % Native.PAGE_SIZE);
            assertThrows(RdmaException.class, () -> ctx.allocateBuffer(64, 2 * Native.PAGE_SIZE, arena));
            Arena closed = Arena.ofConfined();
            closed.close();
            long withBuffer = openDescriptors();
            assertThrows(IllegalStateException.class, () -> ctx.allocateBuffer(4096, 64, closed));
            assertEquals(withBuffer, openDescriptors(), "a closed arena's buffer leaves no descriptor behind");
        }
        assertEquals(before, openDescriptors(), "the context's and the buffer's descriptors are closed");
        java.util.Set<String> shmAfter = shmFiles();
        shmAfter.removeAll(shmBefore);
        assertTrue(shmAfter.isEmpty(), "no file in /dev/shm: " + shmAfter);
    }

    /** @return the names in /dev/shm (empty where there is none) */
    private static java.util.Set<String> shmFiles() throws Exception {
        java.util.Set<String> names = new java.util.TreeSet<>();
        if (Files.isDirectory(Path.of("/dev/shm"))) {
            try (var files = Files.list(Path.of("/dev/shm"))) {
                // the directory of the contexts' counters files (issue 16) is not a buffer's file
                Path counters = io.jrdma.engine.core.StatsFile.directory();
                files.filter(f -> !f.equals(counters)).forEach(f -> names.add(f.getFileName().toString()));
            }
        }
        return names;
    }

    private static long openDescriptors() throws Exception {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.filter(f -> {
                try {
                    return Files.readSymbolicLink(f).toString().contains("jrdma-shm");
                } catch (Exception e) {
                    return false;
                }
            }).count();
        }
    }

    static void driveUntil(ShmPair p, java.util.function.BooleanSupplier cond) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!cond.getAsBoolean()) {
            p.a.ctx.progress();
            p.b.ctx.progress();
            assertTrue(System.nanoTime() < deadline, "condition not reached within 10 s");
            Thread.onSpinWait();
        }
    }

    /**
     * Closing a context ends its connection manager's listeners: the port is free again (before, the listener outlived
     * the context, its socket open and its port bound).
     */
    @Test
    void closingTheContextEndsItsConnectionManagersListeners() throws Exception {
        var ctx = ShmDevice.INSTANCE.open(io.jrdma.verbs.DeviceOptions.defaults());
        int port;
        try {
            port = ctx.connectionManager().listen(new java.net.InetSocketAddress("127.0.0.1", 0)).address().getPort();
        } finally {
            ctx.close();
        }
        try (var s = new java.net.ServerSocket()) {
            s.bind(new java.net.InetSocketAddress("127.0.0.1", port)); // fails with a BindException while it listens
        }
    }

    /**
     * A context opened in the place of a closed one (in the same process its control segment gets the closed one's
     * descriptor number, so its GID) is mapped anew when a QP connects to it, while a QP still connected to the
     * closed one keeps the old mapping: a WRITE through the new connection lands (before, the new QP used the closed
     * context's mapping, found no QP there and failed with RETRY_EXC_ERR).
     */
    @Test
    void aContextAtAClosedOnesGidIsMappedAnew() {
        try (Arena arena = Arena.ofShared()) {
            var a = ShmDevice.INSTANCE.open(io.jrdma.verbs.DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            var apd = a.allocPd();
            var acq = a.createCq(16);
            MemorySegment abuf = a.allocateBuffer(4096, 4096, arena);
            MemoryRegion amr = apd.register(abuf, ShmPair.ALL);
            var old = apd.createQp(io.jrdma.verbs.QpInitAttr.rc(acq));
            var fresh = apd.createQp(io.jrdma.verbs.QpInitAttr.rc(acq));
            try {
                var x = ShmDevice.INSTANCE.open(io.jrdma.verbs.DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
                io.jrdma.verbs.Gid xGid = x.gid(0);
                var xpd = x.allocPd();
                var xcq = x.createCq(16);
                var xqp = xpd.createQp(io.jrdma.verbs.QpInitAttr.rc(xcq));
                connectTo(old, xGid, xqp.qpn());
                connectTo(xqp, a.gid(0), old.qpn());
                xqp.close();
                xcq.close();
                xpd.close();
                x.close();
                var y = ShmDevice.INSTANCE.open(io.jrdma.verbs.DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
                try {
                    org.junit.jupiter.api.Assumptions.assumeTrue(y.gid(0).equals(xGid),
                            "the new context got another descriptor number than the closed one's");
                    var ypd = y.allocPd();
                    var ycq = y.createCq(16);
                    MemorySegment ybuf = y.allocateBuffer(4096, 4096, arena);
                    MemoryRegion ymr = ypd.register(ybuf, ShmPair.ALL);
                    var yqp = ypd.createQp(io.jrdma.verbs.QpInitAttr.rc(ycq));
                    connectTo(yqp, a.gid(0), fresh.qpn());
                    connectTo(fresh, y.gid(0), yqp.qpn());
                    abuf.set(ValueLayout.JAVA_LONG, 0, 0x5EED);
                    assertEquals(0, fresh.postSend(WR.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                            .sge(0, amr, 0, 8).remote(ybuf.address() + 64, ymr.rkey())));
                    WorkCompletion wc = new WorkCompletion();
                    long deadline = System.nanoTime() + 10_000_000_000L;
                    while (acq.poll(wc) == 0) {
                        y.progress();
                        assertTrue(System.nanoTime() < deadline, "no completion within 10 s");
                    }
                    assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                    assertEquals(0x5EED, ybuf.get(ValueLayout.JAVA_LONG, 64));
                    yqp.close();
                    ymr.close();
                    ycq.close();
                    ypd.close();
                } finally {
                    y.close();
                }
            } finally {
                old.close();
                fresh.close();
                amr.close();
                acq.close();
                apd.close();
                a.close();
            }
        }
    }

    /** INIT, RTR (to QP {@code destQpn} at {@code gid}) and RTS, with short retries. */
    private static void connectTo(io.jrdma.verbs.QueuePair qp, io.jrdma.verbs.Gid gid, int destQpn) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(ShmPair.ALL));
        qp.modify(new QpAttr().state(QpState.RTR).av(new io.jrdma.verbs.AddressVector(gid, 0, 64, 0, 4791))
                .pathMtu(io.jrdma.verbs.Mtu.MTU_4096).destQpn(destQpn).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0).timeout(8).retryCnt(2).rnrRetry(7).maxRdAtomic(16));
    }

    /**
     * A WRITE and a READ of several SGEs (the queued path) longer than one part of the copy (1 MiB): the copy goes in
     * parts whose bounds fall inside SGEs, and every byte lands where it belongs (a message may be 2^31 bytes, which
     * a single copy's int length made negative: nothing was copied, and the request completed SUCCESS).
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aLongRequestOfSeveralSgesIsCopiedInParts(ThreadingMode mode) {
        int[] lens = {(1 << 20) - 3, (1 << 21) + 7, 12_345}; // 3 MiB and some, part bounds inside the first two SGEs
        long total = 0;
        for (int l : lens) {
            total += l;
        }
        try (ShmPair p = new ShmPair(mode, 16 << 20)) {
            java.util.Random rnd = new java.util.Random(13);
            byte[] data = new byte[(int) total];
            rnd.nextBytes(data);
            MemorySegment.copy(data, 0, p.a.buf, ValueLayout.JAVA_BYTE, 0, data.length);
            SendWorkRequest w = WR.reset().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .remote(p.b.buf.address() + 4096, p.b.mr.rkey());
            long off = 0;
            for (int i = 0; i < lens.length; i++) {
                w.sge(i, p.a.mr, off, lens[i]);
                off += lens[i];
            }
            assertEquals(WcStatus.SUCCESS, p.run(w).status());
            assertEquals(-1, p.b.buf.asSlice(4096, total).mismatch(MemorySegment.ofArray(data)), "the WRITE's bytes");
            // READ them back into another place of a's buffer, in the same SGE lengths
            SendWorkRequest r = WR.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .remote(p.b.buf.address() + 4096, p.b.mr.rkey());
            off = 8 << 20;
            for (int i = 0; i < lens.length; i++) {
                r.sge(i, p.a.mr, off, lens[i]);
                off += lens[i];
            }
            assertEquals(WcStatus.SUCCESS, p.run(r).status());
            assertEquals(-1, p.a.buf.asSlice(8 << 20, total).mismatch(MemorySegment.ofArray(data)), "the READ's bytes");
        }
    }
}

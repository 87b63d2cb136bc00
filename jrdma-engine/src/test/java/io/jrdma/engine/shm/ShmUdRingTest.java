package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Grh;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * UD on shm0 beyond the conformance suite (UdTck): a receiving QP's ring shared by senders of several contexts, a full
 * ring (datagrams dropped and counted at the sender), datagrams to QPs that take none, a receiver reset with datagrams
 * in its ring, and the receiving QP's held word left by a sender that died inside it or stopped there
 * (docs/shm-design.md, "UD").
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmUdRingTest {
    private static final int QKEY = 0x1234567;
    private static final long RX = 1 << 15;
    private final Arena arena = Arena.ofShared();
    private final List<Ud> sides = new ArrayList<>();
    private final List<Process> children = new ArrayList<>();

    /** A shm0 context (INVOKER) with a UD QP in RTS, a buffer, and an address handle cache. */
    private final class Ud {
        final DeviceContext ctx = ShmDevice.INSTANCE.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
        final ProtectionDomain pd = ctx.allocPd();
        final CompletionQueue cq = ctx.createCq(256);
        final QueuePair qp = pd.createQp(QpInitAttr.ud(cq).withDepth(64, 64));
        final MemorySegment buf = ctx.allocateBuffer(1 << 16, 4096, arena);
        final MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
        final List<AddressHandle> ahs = new ArrayList<>();

        Ud() {
            sides.add(this);
            ready(qp);
        }

        AddressHandle ahTo(Ud other) {
            AddressHandle ah = pd.createAh(AhAttr.of(other.ctx.gid(0), 0));
            ahs.add(ah);
            return ah;
        }

        long counter(Counter c) {
            return ((Context) ctx).engine.counters.get(c);
        }

        ShmTransport transport() {
            return (ShmTransport) ((Context) ctx).engine.transport;
        }

        void postRecvs(int n) {
            for (int i = 0; i < n; i++) {
                assertEquals(0, qp.postRecv(new RecvWorkRequest().wrId(i).sge(0, mr, RX + i * 64L, Grh.LENGTH + 8)));
            }
        }

        /**
         * One 8-byte datagram holding {@code value} to QP {@code qpn}, and its completion (SUCCESS: UD's, sent or
         * dropped), driving this context only: the receiver reads nothing meanwhile.
         */
        void send(AddressHandle ah, int qpn, long value) {
            buf.set(ValueLayout.JAVA_LONG, 0, value);
            assertEquals(0, qp.postSend(new SendWorkRequest().wrId(value).flags(SendFlags.SIGNALED).sge(0, mr, 0, 8)
                    .ud(ah, qpn, QKEY)), "postSend");
            WorkCompletion wc = new WorkCompletion();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (cq.poll(wc) == 0) { // (an INVOKER poll drives this context)
                assertTrue(System.nanoTime() < deadline, "no completion within 10 s: the send of " + value);
                Thread.onSpinWait();
            }
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(WcOpcode.SEND, wc.opcode(), wc.toString());
        }
    }

    private static void ready(QueuePair qp) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(QKEY));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
    }

    /** Polls {@code cq}, driving every context, until a completion arrives (10 s at most). */
    private WorkCompletion await(CompletionQueue cq, String what) {
        WorkCompletion wc = new WorkCompletion();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            drive();
            assertTrue(System.nanoTime() < deadline, "no completion within 10 s: " + what);
            Thread.onSpinWait();
        }
        return wc;
    }

    private void until(BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!done.getAsBoolean()) {
            drive();
            assertTrue(System.nanoTime() < deadline, "not within 10 s: " + what);
            Thread.onSpinWait();
        }
    }

    private void drive() {
        for (Ud s : sides) {
            s.ctx.progress();
        }
    }

    /** A received datagram: its completion's checks, and the value it carried. */
    private static long received(Ud r, WorkCompletion wc, Ud from) {
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        assertEquals(WcOpcode.RECV, wc.opcode(), wc.toString());
        assertEquals(Grh.LENGTH + 8, wc.byteLen(), wc.toString());
        assertTrue(wc.hasGrh(), wc.toString());
        assertEquals(from.qp.qpn(), wc.srcQp(), "src_qp of " + wc);
        long at = RX + wc.wrId() * 64;
        assertEquals(from.ctx.gid(0), Grh.parse(r.buf.asSlice(at, Grh.LENGTH)).sgid(), "the GRH's source GID");
        return r.buf.get(ValueLayout.JAVA_LONG, at + Grh.LENGTH);
    }

    @AfterEach
    void close() {
        for (Process p : children) {
            p.destroyForcibly();
        }
        for (int i = sides.size() - 1; i >= 0; i--) {
            Ud s = sides.get(i);
            s.qp.close();
            for (AddressHandle ah : s.ahs) {
                ah.close();
            }
            s.mr.close();
            s.cq.close();
            s.pd.close();
            s.ctx.close();
        }
        arena.close();
    }

    @Test
    void datagramsOfSendersInTwoContextsShareTheRingAndArriveEachInItsOrder() {
        Ud r = new Ud();
        Ud s1 = new Ud();
        Ud s2 = new Ud();
        AddressHandle to1 = s1.ahTo(r);
        AddressHandle to2 = s2.ahTo(r);
        int rounds = 40; // more than the ring's slots and than the receives posted at once
        long next1 = 1000;
        long next2 = 2000;
        WorkCompletion wc = new WorkCompletion();
        for (int i = 0; i < rounds; i++) {
            r.postRecvs(2);
            s1.send(to1, r.qp.qpn(), 1000 + i);
            s2.send(to2, r.qp.qpn(), 2000 + i);
            for (int k = 0; k < 2; k++) {
                wc = await(r.cq, "datagram " + (2 * i + k));
                long v = r.buf.get(ValueLayout.JAVA_LONG, RX + wc.wrId() * 64 + Grh.LENGTH);
                if (v < 2000) {
                    assertEquals(next1++, received(r, wc, s1), "the first sender's datagrams in order");
                } else {
                    assertEquals(next2++, received(r, wc, s2), "the second sender's datagrams in order");
                }
            }
        }
        assertEquals(1000 + rounds, next1);
        assertEquals(2000 + rounds, next2);
        assertEquals(0, s1.counter(Counter.UD_DROPPED_SENDS));
        assertEquals(0, s2.counter(Counter.UD_DROPPED_SENDS));
    }

    @Test
    void aSenderHeldBackByAFullRingGoesOnAsTheReceiverReads() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(48);
        int n = 48; // three rings' worth, posted at once: most of them wait for room
        for (int i = 0; i < n; i++) {
            s.buf.set(ValueLayout.JAVA_LONG, 64L * i, i);
            assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(i).flags(SendFlags.SIGNALED)
                    .sge(0, s.mr, 64L * i, 8).ud(to, r.qp.qpn(), QKEY)));
        }
        WorkCompletion wc;
        for (int i = 0; i < n; i++) {
            wc = await(r.cq, "datagram " + i);
            assertEquals(i, received(r, wc, s), "every datagram, in order");
        }
        for (int i = 0; i < n; i++) {
            wc = await(s.cq, "send " + i);
            assertEquals(WcStatus.SUCCESS, wc.status());
            assertEquals(i, wc.wrId(), "the sends complete in order");
        }
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS), "none dropped while the receiver reads");
    }

    @Test
    void aFullRingHoldsTheSenderBackForTheWaitThenDropsAndCounts() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(24);
        // r is not driven: nothing reads its ring, which holds 16 slots
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            s.send(to, r.qp.qpn(), i);
        }
        for (int i = Ctrl.RING_SLOTS; i < 20; i++) {
            long t0 = System.nanoTime();
            s.send(to, r.qp.qpn(), i);
            assertTrue(System.nanoTime() - t0 >= ShmTransport.UD_WAIT_NANOS, "datagram " + i + " waited for room");
        }
        assertEquals(20 - Ctrl.RING_SLOTS, s.counter(Counter.UD_DROPPED_SENDS), "the datagrams past the ring's room");
        WorkCompletion wc = new WorkCompletion();
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            wc = await(r.cq, "datagram " + i);
            assertEquals(i, received(r, wc, s), "the ring's datagrams, in order");
        }
        s.send(to, r.qp.qpn(), 99); // room again (the receiver published its reads)
        assertEquals(99, received(r, await(r.cq, "the datagram after the ring emptied"), s));
        assertEquals(20 - Ctrl.RING_SLOTS, s.counter(Counter.UD_DROPPED_SENDS));
    }

    @Test
    void aDatagramToAQpThatTakesNoneIsDroppedAtTheSender() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        QueuePair rc = r.pd.createQp(QpInitAttr.rc(r.cq));
        QueuePair idle = r.pd.createQp(QpInitAttr.ud(r.cq)); // in RESET
        try {
            // an RC QP that takes requests (RTR, connected to a QP of its own context): only the UD mark tells it apart
            rc.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(Access.LOCAL_WRITE));
            rc.modify(new QpAttr().state(QpState.RTR).av(new AddressVector(r.ctx.gid(0), 0, 64, 0, 4791))
                    .pathMtu(Mtu.MTU_4096).destQpn(r.qp.qpn()).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(1));
            assertEquals(QpState.RTR, rc.state());
            r.postRecvs(1);
            s.send(to, rc.qpn(), 1);
            assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "to an RC QP in RTR");
            s.send(to, idle.qpn(), 2);
            assertEquals(2, s.counter(Counter.UD_DROPPED_SENDS), "to a UD QP in RESET");
            idle.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(QKEY));
            s.send(to, idle.qpn(), 3);
            assertEquals(3, s.counter(Counter.UD_DROPPED_SENDS), "to a UD QP in INIT");
            int none = r.qp.qpn() ^ 0x5A5A;
            assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(4).flags(SendFlags.SIGNALED).sge(0, s.mr, 0, 8)
                    .ud(to, none, QKEY)));
            assertEquals(WcStatus.SUCCESS, await(s.cq, "a send to no QP").status());
            assertEquals(4, s.counter(Counter.UD_DROPPED_SENDS), "to a QPN the context does not have");
            // the QP that does take them still does
            s.send(to, r.qp.qpn(), 5);
            assertEquals(5, received(r, await(r.cq, "the datagram to the UD QP"), s));
        } finally {
            idle.close();
            rc.close();
        }
    }

    @Test
    void aReceiverResetTakesNoDatagramWrittenBeforeIt() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        for (int i = 0; i < 3; i++) {
            s.send(to, r.qp.qpn(), 100 + i); // in r's ring, not read (no receive posted, r not driven)
        }
        r.qp.modify(new QpAttr().state(QpState.RESET));
        ready(r.qp);
        r.postRecvs(8);
        s.send(to, r.qp.qpn(), 7);
        s.send(to, r.qp.qpn(), 8);
        assertEquals(7, received(r, await(r.cq, "the first datagram after the reset"), s));
        assertEquals(8, received(r, await(r.cq, "the second"), s));
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));
        assertEquals(0, r.counter(Counter.UD_DROPPED_NO_RECV), "the three before the reset were cleared, not dropped");
    }

    @Test
    void aTailLeftBehindTheReadPositionByASenderThatDiedGoesOnFromTheFirstUnread() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(4);
        s.send(to, r.qp.qpn(), 1);
        s.send(to, r.qp.qpn(), 2);
        assertEquals(1, received(r, await(r.cq, "the first"), s));
        assertEquals(2, received(r, await(r.cq, "the second"), s));
        // a sender that died after its slot's sequence and before R_TAIL, whose slot the receiver read
        MemorySegment c = r.transport().ctrl;
        long resp = ((ShmQp) r.qp).resp;
        long read = (long) ShmTransport.LONG.getVolatile(c, resp + Ctrl.R_READ);
        ShmTransport.LONG.setVolatile(c, resp + Ctrl.R_TAIL, read - 1);
        s.send(to, r.qp.qpn(), 3);
        assertEquals(3, received(r, await(r.cq, "the datagram after the stale tail"), s));
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));
        assertEquals(read + 1, (long) ShmTransport.LONG.getVolatile(c, resp + Ctrl.R_TAIL));
    }

    @Test
    void datagramsBetweenTwoProcessesAndAPeerThatDiesIsLetGo() throws Exception {
        String javaBin = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // no counters file: the test kills this process, which would leave it behind
        Process echo = new ProcessBuilder(javaBin, "-Xmx128m", "-Djrdma.stat=false", "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), ShmUdEchoMain.class.getName(), Integer.toString(QKEY))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        children.add(echo);
        java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(echo.getInputStream()));
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!out.ready()) {
            assertTrue(echo.isAlive(), "the echo process exited");
            assertTrue(System.nanoTime() < deadline, "no line from the echo process within 30 s");
            Thread.onSpinWait();
        }
        String[] line = out.readLine().split(" ");
        io.jrdma.verbs.Gid peerGid = io.jrdma.verbs.Gid.parse(line[0]);
        int peerQpn = Integer.parseInt(line[1]);
        assertEquals(echo.pid(), ShmTransport.parseGid(peerGid)[0], "the peer's GID names its process");
        Ud u = new Ud();
        AddressHandle ah = u.pd.createAh(AhAttr.of(peerGid, 0));
        u.ahs.add(ah);
        WorkCompletion wc = new WorkCompletion();
        for (int i = 0; i < 50; i++) {
            u.postRecvs(1);
            u.send(ah, peerQpn, 1000 + i);
            while (true) {
                wc = await(u.cq, "the answer to " + i);
                if (wc.opcode() == WcOpcode.RECV) {
                    break;
                }
            }
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(peerQpn, wc.srcQp());
            long at = RX + wc.wrId() * 64;
            assertEquals(peerGid, Grh.parse(u.buf.asSlice(at, Grh.LENGTH)).sgid(), "the answer's GRH names the peer");
            assertEquals(1001 + i, u.buf.get(ValueLayout.JAVA_LONG, at + Grh.LENGTH));
        }
        assertEquals(0, u.counter(Counter.UD_DROPPED_SENDS));
        int mapped = u.transport().mappedPeers();
        assertTrue(mapped >= 1, "the peer is mapped");
        echo.destroyForcibly();
        assertTrue(echo.waitFor(10, TimeUnit.SECONDS));
        until(() -> u.transport().mappedPeers() == mapped - 1, "the dead peer let go (its mapping)");
        u.send(ah, peerQpn, 7);
        assertEquals(1, u.counter(Counter.UD_DROPPED_SENDS), "a datagram to the dead peer is dropped");
        assertEquals(mapped - 1, u.transport().mappedPeers(), "and maps nothing again");
    }

    @Test
    void aDatagramLongerThanTheReceiveIsDroppedAndTheReceiveKeptForTheNext() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        assertEquals(0, r.qp.postRecv(new RecvWorkRequest().wrId(0).sge(0, r.mr, RX, Grh.LENGTH + 4)));
        s.send(to, r.qp.qpn(), 1); // 8 bytes: the receive holds the GRH and 4
        until(() -> r.counter(Counter.RCVD_TOO_LONG) == 1, "the long datagram dropped");
        s.buf.set(ValueLayout.JAVA_INT, 0, 0x5EED);
        assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(2).flags(SendFlags.SIGNALED).sge(0, s.mr, 0, 4)
                .ud(to, r.qp.qpn(), QKEY)));
        WorkCompletion wc = await(r.cq, "the short datagram");
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        assertEquals(0, wc.wrId(), "the receive the long one did not take");
        assertEquals(Grh.LENGTH + 4, wc.byteLen());
        assertEquals(0x5EED, r.buf.get(ValueLayout.JAVA_INT, RX + Grh.LENGTH));
    }

    @Test
    void aDatagramThatFindsNoReceiveIsDroppedAndCounted() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        s.send(to, r.qp.qpn(), 1);
        until(() -> r.counter(Counter.UD_DROPPED_NO_RECV) == 1, "the datagram with no receive dropped");
        r.postRecvs(1);
        s.send(to, r.qp.qpn(), 2);
        assertEquals(2, received(r, await(r.cq, "the datagram after a receive was posted"), s));
    }

    @Test
    void aQkeyWithItsHighBitSetIsTheSendingQpsOwn() {
        Ud r = new Ud();
        Ud s = new Ud(); // both QPs have QKEY
        AddressHandle to = s.ahTo(r);
        r.postRecvs(1);
        s.buf.set(ValueLayout.JAVA_LONG, 0, 77);
        assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED).sge(0, s.mr, 0, 8)
                .ud(to, r.qp.qpn(), 0x80000000))); // IBA 10.2.4.2: the QP's own Q_Key
        assertEquals(77, received(r, await(r.cq, "the datagram sent with the QP's own Q_Key"), s));
        assertEquals(0, r.counter(Counter.RCVD_BAD_QKEY));
    }

    @Test
    void aReceiveIntoMemoryItMayNotWriteFailsWithLocProtErrAndTheQpMovesToError() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        try (MemoryRegion ro = r.pd.register(r.buf.asSlice(RX, 4096), 0)) { // no LOCAL_WRITE
            r.buf.asSlice(RX, Grh.LENGTH + 8).fill((byte) 0x33);
            assertEquals(0, r.qp.postRecv(new RecvWorkRequest().wrId(1).sge(0, ro, RX, Grh.LENGTH + 8)));
            s.send(to, r.qp.qpn(), 5);
            WorkCompletion wc = await(r.cq, "the receive into read-only memory");
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
            until(() -> r.qp.state() == QpState.ERROR, "the QP in ERROR");
            for (int i = 0; i < Grh.LENGTH + 8; i++) {
                assertEquals((byte) 0x33, r.buf.get(ValueLayout.JAVA_BYTE, RX + i), "nothing written at " + i);
            }
        }
    }

    @Test
    void aDatagramWhoseRegionIsDeregisteredWhileItWaitsFailsAndLeavesTheWordFree() {
        Ud r = new Ud();
        Ud s = new Ud();
        Ud s2 = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(Ctrl.RING_SLOTS + 1);
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            s.send(to, r.qp.qpn(), i); // r is not driven: its ring is full after these
        }
        MemoryRegion mr2 = s.pd.register(s.buf.asSlice(8192, 4096), Access.LOCAL_WRITE);
        assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(50).flags(SendFlags.SIGNALED).sge(0, mr2, 0, 8)
                .ud(to, r.qp.qpn(), QKEY)));
        WorkCompletion wc = new WorkCompletion();
        assertEquals(0, s.cq.poll(wc), "the datagram waits for room");
        mr2.close();
        wc = await(s.cq, "the datagram whose region went");
        assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
        assertEquals(50, wc.wrId());
        assertEquals(0, (int) ShmTransport.INT.getVolatile(r.transport().ctrl, heldWord(r)), "the receiver's word is free");
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            assertEquals(i, received(r, await(r.cq, "datagram " + i), s));
        }
        s2.send(s2.ahTo(r), r.qp.qpn(), 99);
        assertEquals(99, received(r, await(r.cq, "another sender's datagram"), s2));
        assertEquals(0, s2.counter(Counter.UD_DROPPED_SENDS));
    }

    @Test
    void aSenderStoppedInsideItsHoldPastAResetsDrainLeavesTheNewRingAlone() {
        Ud r = new Ud();
        Ud s = new Ud();
        Ud s2 = new Ud();
        AddressHandle to = s.ahTo(r);
        AddressHandle to2 = s2.ahTo(r);
        MemorySegment c = r.transport().ctrl;
        long resp = ((ShmQp) r.qp).resp;
        long oldTail = (long) ShmTransport.LONG.getVolatile(c, resp + Ctrl.R_TAIL);
        int[] k = new int[1];
        s.transport().udStallPoint = ShmTransport.UD_STALL_BEFORE_COPY;
        s.transport().udStallForTests = () -> {
            // meanwhile: the receiver is reset and connected anew, and another sender fills it up to the slot this
            // one is about to write
            k[0] = fillUpTo(r, s2, to2, resetOutwaitingAHold(r), oldTail);
        };
        s.send(to, r.qp.qpn(), 7);
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "the stopped sender's datagram dropped");
        awaitInOrder(r, s2, 500, k[0]);
        assertTailAndFreeWord(r, (long) ShmTransport.LONG.getVolatile(c, resp + Ctrl.R_READ)); // k read since the base
        r.postRecvs(1); // (the k datagrams may have taken all sixteen receives)
        s2.send(to2, r.qp.qpn(), 600);
        assertEquals(600, received(r, await(r.cq, "a datagram after"), s2));
    }

    /**
     * Inside a sender's hold (a stall): resets receiver {@code r}, whose drain outwaits the hold (1 s) and takes the
     * word back, and connects it anew at another base, with a receive for each slot. @return that base (its R_TAIL)
     */
    private static long resetOutwaitingAHold(Ud r) {
        long t0 = System.nanoTime();
        r.qp.modify(new QpAttr().state(QpState.RESET));
        assertTrue(System.nanoTime() - t0 >= ShmTransport.DRAIN_NANOS, "the reset waited for the hold");
        ready(r.qp);
        r.postRecvs(Ctrl.RING_SLOTS);
        return (long) ShmTransport.LONG.getVolatile(r.transport().ctrl, ((ShmQp) r.qp).resp + Ctrl.R_TAIL);
    }

    /** Receiver {@code r}'s R_TAIL is {@code tail} and its held word is free. */
    private static void assertTailAndFreeWord(Ud r, long tail) {
        MemorySegment c = r.transport().ctrl;
        assertEquals(tail, (long) ShmTransport.LONG.getVolatile(c, ((ShmQp) r.qp).resp + Ctrl.R_TAIL), "the new tail");
        assertEquals(0, (int) ShmTransport.INT.getVolatile(c, heldWord(r)), "the word free");
    }

    /** Datagrams {@code first}, {@code first + 1}, ... ({@code k} of them) from {@code from} arrive at {@code r} intact, in order. */
    private void awaitInOrder(Ud r, Ud from, long first, int k) {
        for (int j = 0; j < k; j++) {
            assertEquals(first + j, received(r, await(r.cq, "the new connection's datagram " + j), from), "intact, in order");
        }
    }

    /**
     * Sends datagrams 500, 501, ... from {@code s2} to {@code r}, connected anew at {@code base}, up to the one in the
     * slot of position {@code oldTail} (a stopped sender's). @return how many
     */
    private static int fillUpTo(Ud r, Ud s2, AddressHandle to2, long base, long oldTail) {
        int k = (int) Math.floorMod(oldTail - base, (long) Ctrl.RING_SLOTS) + 1;
        for (int j = 0; j < k; j++) {
            s2.send(to2, r.qp.qpn(), 500 + j);
        }
        return k;
    }

    @Test
    void aSenderThatLostItsHoldDuringItsCopyPublishesNothingAndCountsTheDatagramDropped() {
        Ud r = new Ud();
        Ud s = new Ud();
        Ud s2 = new Ud();
        MemorySegment c = r.transport().ctrl;
        ShmQp q = (ShmQp) r.qp;
        long oldTail = (long) ShmTransport.LONG.getVolatile(c, q.resp + Ctrl.R_TAIL);
        long slotSeq = q.ring + (oldTail & (Ctrl.RING_SLOTS - 1)) * Ctrl.SLOT + Ctrl.S_SEQ;
        long[] base = new long[1];
        long[] seqThen = new long[1];
        s.transport().udStallPoint = ShmTransport.UD_STALL_AFTER_COPY;
        s.transport().udStallForTests = () -> {
            // its copy is in the slot; meanwhile the receiver is reset and connected anew, and nothing writes there
            base[0] = resetOutwaitingAHold(r);
            seqThen[0] = (long) ShmTransport.LONG.getVolatile(c, slotSeq);
        };
        s.send(s.ahTo(r), r.qp.qpn(), 7);
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "the datagram counted dropped, not sent");
        assertEquals(seqThen[0], (long) ShmTransport.LONG.getVolatile(c, slotSeq), "no sequence published into the new ring");
        assertTailAndFreeWord(r, base[0]);
        awaitInOrder(r, s2, 500, fillUpTo(r, s2, s2.ahTo(r), base[0], oldTail));
    }

    @Test
    void aSenderThatLostItsHoldJustBeforeItsSequenceLeavesTheDatagramWrittenThereSince() {
        Ud r = new Ud();
        Ud s = new Ud();
        Ud s2 = new Ud();
        AddressHandle to2 = s2.ahTo(r);
        MemorySegment c = r.transport().ctrl;
        long resp = ((ShmQp) r.qp).resp;
        long oldTail = (long) ShmTransport.LONG.getVolatile(c, resp + Ctrl.R_TAIL);
        long[] base = new long[1];
        int[] k = new int[1];
        s.transport().udStallPoint = ShmTransport.UD_STALL_BEFORE_SEQ;
        s.transport().udStallForTests = () -> {
            // its look at the word passed; meanwhile the receiver is reset and connected anew, and another sender
            // writes the slot this one is about to publish
            base[0] = resetOutwaitingAHold(r);
            k[0] = fillUpTo(r, s2, to2, base[0], oldTail);
        };
        s.send(s.ahTo(r), r.qp.qpn(), 7);
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "the stopped sender's datagram dropped");
        awaitInOrder(r, s2, 500, k[0]);
        assertTailAndFreeWord(r, base[0] + k[0]);
    }

    @Test
    void aSenderThatLostItsHoldAfterItsSequenceDoesNotMoveTheNewTail() {
        Ud r = new Ud();
        Ud s = new Ud();
        Ud s2 = new Ud();
        long[] base = new long[1];
        s.transport().udStallPoint = ShmTransport.UD_STALL_BEFORE_TAIL;
        // its datagram is published; meanwhile the receiver is reset (the ring cleared: the datagram is lost with
        // it, as one on the wire) and connected anew
        s.transport().udStallForTests = () -> base[0] = resetOutwaitingAHold(r);
        s.send(s.ahTo(r), r.qp.qpn(), 7);
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS), "sent before the reset");
        assertTailAndFreeWord(r, base[0]);
        AddressHandle to2 = s2.ahTo(r);
        for (int j = 0; j < 3; j++) {
            s2.send(to2, r.qp.qpn(), 800 + j);
        }
        awaitInOrder(r, s2, 800, 3); // at the new base
        assertTailAndFreeWord(r, base[0] + 3);
    }

    /** A datagram of {@code value} from QP {@code srcQpn} published at position {@code pos} of {@code r}'s ring, not counted in R_TAIL. */
    private static void publishUncounted(Ud r, long pos, long value, int srcQpn) {
        MemorySegment c = r.transport().ctrl;
        ShmQp q = (ShmQp) r.qp;
        long at = q.ring + (pos & (Ctrl.RING_SLOTS - 1)) * Ctrl.SLOT;
        c.set(ValueLayout.JAVA_LONG, at + Ctrl.SLOT_HEADER, value);
        c.set(ValueLayout.JAVA_INT, at + Ctrl.U_QKEY, QKEY);
        c.set(ValueLayout.JAVA_INT, at + Ctrl.U_SRC_PID, (int) ProcessHandle.current().pid());
        c.set(ValueLayout.JAVA_INT, at + Ctrl.U_SRC_FD, 0);
        c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_FLAGS_LEN,
                (Ctrl.F_FIRST | Ctrl.F_LAST | io.jrdma.verbs.WrOpcode.SEND.ordinal() << 8) | 8L << 32);
        c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_IMM_MSG, (long) srcQpn << 32);
        ShmTransport.LONG.setVolatile(c, at + Ctrl.S_SEQ, (ShmTransport.seq(pos) & 0xFFFFFFFFL) | (long) q.qpn << 32);
    }

    @Test
    void slotsDeadSendersPublishedButDidNotCountAreKeptAndTheNextGoesAfterThem() throws Exception {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(3);
        // two senders, one after the other, each stored its slot's sequence and died before R_TAIL; the second held
        // the word when it died
        MemorySegment c = r.transport().ctrl;
        long tail = (long) ShmTransport.LONG.getVolatile(c, ((ShmQp) r.qp).resp + Ctrl.R_TAIL);
        publishUncounted(r, tail, 41, 0x777);
        publishUncounted(r, tail + 1, 43, 0x778);
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        ShmTransport.INT.setVolatile(c, heldWord(r), -2 - (int) gone.pid());
        s.send(to, r.qp.qpn(), 42); // takes the word over, and writes after the published slots
        for (long[] want : new long[][] {{0x777, 41}, {0x778, 43}}) {
            WorkCompletion wc = await(r.cq, "a dead sender's datagram");
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(want[0], wc.srcQp(), "the dead senders' datagrams first, in order");
            assertEquals(want[1], r.buf.get(ValueLayout.JAVA_LONG, RX + wc.wrId() * 64 + Grh.LENGTH));
        }
        assertEquals(42, received(r, await(r.cq, "the next one"), s));
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));
    }

    @Test
    void aReceiverInALaterDirectoryEntryIsFoundThroughTheEntriesItsContextHasUsed() {
        Ud s = new Ud();
        Ud r = new Ud(); // its QP in entry 0
        List<QueuePair> more = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            more.add(r.pd.createQp(QpInitAttr.ud(r.cq).withDepth(4, 4))); // entries 1 to 4
        }
        MemorySegment c = r.transport().ctrl;
        assertEquals(5, (int) ShmTransport.INT.getVolatile(c, Ctrl.H_QP_ENTRIES), "the entries used, published");
        for (int k = 0; k < 3; k++) {
            more.get(k).close();
        }
        QueuePair last = more.get(3);
        ready(last);
        assertEquals(0, last.postRecv(new RecvWorkRequest().wrId(9).sge(0, r.mr, RX, Grh.LENGTH + 8)));
        s.send(s.ahTo(r), last.qpn(), 77);
        WorkCompletion wc = await(r.cq, "the datagram to the QP in entry 4");
        assertEquals(last.qpn(), wc.qpNum(), wc.toString());
        assertEquals(77, r.buf.get(ValueLayout.JAVA_LONG, RX + Grh.LENGTH));
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));
        last.close(); // entries 1 to 4 free now: the next QP takes entry 1
        QueuePair again = r.pd.createQp(QpInitAttr.ud(r.cq).withDepth(4, 4));
        assertEquals(5, (int) ShmTransport.INT.getVolatile(c, Ctrl.H_QP_ENTRIES), "a word that only grows");
        again.close();
    }

    @Test
    void aPeersWordOfEntriesUsedIsNeverBelievedPastTheDirectoryAndTheNextQpPutsItRight() {
        Ud r = new Ud();
        MemorySegment c = r.transport().ctrl;
        r.postRecvs(2);
        r.pd.createQp(QpInitAttr.ud(r.cq).withDepth(4, 4)).close(); // entry 1 used once: the word says 2
        // a peer can write the word: a huge one is searched as the whole directory, a negative one as none
        ShmTransport.INT.setVolatile(c, Ctrl.H_QP_ENTRIES, Integer.MAX_VALUE);
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        s.send(to, r.qp.qpn() ^ 0x5A5A, 4); // a QP the context does not have: the whole directory searched, no further
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "a datagram to no QP: dropped, counted");
        s.send(to, r.qp.qpn(), 5);
        assertEquals(5, received(r, await(r.cq, "the datagram found through a word past the directory"), s));
        ShmTransport.INT.setVolatile(c, Ctrl.H_QP_ENTRIES, -3);
        Ud s2 = new Ud(); // a table of its own: it searches the directory
        s2.send(s2.ahTo(r), r.qp.qpn(), 6);
        assertEquals(1, s2.counter(Counter.UD_DROPPED_SENDS), "no QP found below a negative word: dropped, counted");
        QueuePair next = r.pd.createQp(QpInitAttr.ud(r.cq).withDepth(4, 4)); // in entry 1 again: its making puts the word right
        assertEquals(2, (int) ShmTransport.INT.getVolatile(c, Ctrl.H_QP_ENTRIES));
        s2.send(s2.ahTo(r), r.qp.qpn(), 7);
        assertEquals(7, received(r, await(r.cq, "the datagram after the word was put right"), s2));
        next.close();
    }

    @Test
    void aSenderToMoreReceiversThanItsTableMapsAtMostTheTablesWorth() {
        Ud s = new Ud();
        List<Ud> rs = new ArrayList<>();
        List<AddressHandle> to = new ArrayList<>();
        for (int k = 0; k < ShmQp.UD_TARGETS + 3; k++) {
            Ud r = new Ud();
            r.postRecvs(2);
            rs.add(r);
            to.add(s.ahTo(r));
        }
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < rs.size(); k++) {
                s.send(to.get(k), rs.get(k).qp.qpn(), 100 * round + k);
                assertTrue(s.transport().mappedPeers() <= ShmQp.UD_TARGETS, "peers mapped: " + s.transport().mappedPeers());
            }
        }
        for (int round = 0; round < 2; round++) {
            for (int k = 0; k < rs.size(); k++) {
                assertEquals(100 * round + k, received(rs.get(k), await(rs.get(k).cq, "datagram " + k), s));
            }
        }
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));
        assertTrue(s.transport().mappedPeers() > 0);
        s.qp.modify(new QpAttr().state(QpState.RESET)); // a reset lets every peer it mapped go
        assertEquals(0, s.transport().mappedPeers(), "peers mapped after the reset");
    }

    @Test
    void aHoldLeftByAZombieSenderIsTakenOver() throws Exception {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(1);
        // a child that exits and is never reaped: its parent execs into a sleep that waits for no child
        Process parent = new ProcessBuilder("sh", "-c", "sleep 0 & echo $!; exec sleep 60").start();
        children.add(parent);
        int zombie = Integer.parseInt(new java.io.BufferedReader(
                new java.io.InputStreamReader(parent.getInputStream())).readLine().trim());
        until(() -> {
            try {
                return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + zombie + "/stat")).contains(") Z ");
            } catch (java.io.IOException e) {
                return false;
            }
        }, "the child a zombie");
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), -2 - zombie); // kill(pid, 0) finds it alive
        long t0 = System.nanoTime();
        s.send(to, r.qp.qpn(), 8);
        assertTrue(System.nanoTime() - t0 < ShmTransport.UD_WAIT_NANOS, "not waited out as a live holder");
        assertEquals(8, received(r, await(r.cq, "the datagram after a zombie's hold"), s));
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));
    }

    @Test
    void aDatagramDroppedAtTheCheckEndsTheWaitAndTheNextWaitsItsOwn() throws Exception {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            s.send(to, r.qp.qpn(), i); // r is not driven: its ring is full after these
        }
        long t0 = System.nanoTime();
        assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(17).flags(SendFlags.SIGNALED).sge(0, s.mr, 0, 8)
                .ud(to, r.qp.qpn(), QKEY)));
        WorkCompletion wc = new WorkCompletion();
        while (System.nanoTime() - t0 < ShmTransport.UD_WAIT_NANOS / 2) {
            assertEquals(0, s.cq.poll(wc), "the datagram waits for room"); // (drives s)
        }
        r.qp.modify(new QpAttr().state(QpState.RESET)); // its receiver goes: the waiting datagram is dropped at the check
        wc = await(s.cq, "the datagram dropped at the check");
        assertEquals(17, wc.wrId());
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS));
        while (System.nanoTime() - t0 < ShmTransport.UD_WAIT_NANOS * 3 / 2) {
            s.ctx.progress(); // past the first datagram's wait, had it gone on
        }
        ready(r.qp);
        r.postRecvs(1);
        Process holder = new ProcessBuilder("sleep", "60").start();
        children.add(holder);
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), -2 - (int) holder.pid()); // a live sender's hold
        assertEquals(0, s.qp.postSend(new SendWorkRequest().wrId(18).flags(SendFlags.SIGNALED).sge(0, s.mr, 0, 8)
                .ud(to, r.qp.qpn(), QKEY)));
        for (int k = 0; k < 100; k++) {
            assertEquals(0, s.cq.poll(wc), "the next datagram waits for the word: its own wait, not the one before's");
        }
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), 0); // the holder lets go
        wc = await(s.cq, "the next datagram");
        assertEquals(18, wc.wrId());
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "the next datagram was not dropped");
    }

    @Test
    void aPeerWhoseGidNamesANewContextIsLetGoForIt() {
        Ud s = new Ud();
        Ud old = new Ud();
        AddressHandle to = s.ahTo(old);
        old.postRecvs(1);
        s.send(to, old.qp.qpn(), 1);
        assertEquals(1, received(old, await(old.cq, "the datagram to the first context"), s));
        io.jrdma.verbs.Gid gid = old.ctx.gid(0);
        sides.remove(old);
        old.qp.close();
        old.mr.close();
        old.cq.close();
        old.pd.close();
        old.ctx.close(); // its descriptor number is free now: the next context takes it, and so its GID
        Ud next = new Ud();
        org.junit.jupiter.api.Assumptions.assumeTrue(next.ctx.gid(0).equals(gid),
                "the new context got another descriptor number, so another GID: nothing to check");
        next.postRecvs(1);
        s.send(to, next.qp.qpn(), 2); // the same address handle, the same GID: another context now
        assertEquals(2, received(next, await(next.cq, "the datagram to the new context"), s));
        assertEquals(1, s.transport().mappedPeers(), "the old context's mapping let go for the new one's");
    }

    /**
     * Writes a slot into {@code r}'s ring as a sender would (at R_TAIL, the sequence last, then R_TAIL + 1, then the
     * pending word), with the given opcode and flags, length and Q_Key: what a broken peer can leave there.
     */
    private static void craft(Ud r, int flagsOp, int len, int qkey) {
        MemorySegment c = r.transport().ctrl;
        ShmQp q = (ShmQp) r.qp;
        long tail = (long) ShmTransport.LONG.getVolatile(c, q.resp + Ctrl.R_TAIL);
        long at = q.ring + (tail & (Ctrl.RING_SLOTS - 1)) * Ctrl.SLOT;
        c.set(ValueLayout.JAVA_INT, at + Ctrl.U_QKEY, qkey);
        c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_FLAGS_LEN, (flagsOp & 0xFFFFFFFFL) | (long) len << 32);
        c.set(ValueLayout.JAVA_LONG, at + Ctrl.S_IMM_MSG, 0L);
        ShmTransport.LONG.setVolatile(c, at + Ctrl.S_SEQ, (ShmTransport.seq(tail) & 0xFFFFFFFFL) | (long) q.qpn << 32);
        ShmTransport.LONG.setVolatile(c, q.resp + Ctrl.R_TAIL, tail + 1);
        ShmTransport.INT.setVolatile(c, Ctrl.H_PENDING, 1);
    }

    @Test
    void aSlotNoSenderWritesIsDroppedAndCountedAndTheQpGoesOn() {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(2);
        int send = io.jrdma.verbs.WrOpcode.SEND.ordinal() << 8;
        int whole = Ctrl.F_FIRST | Ctrl.F_LAST;
        craft(r, send | whole, 4097, QKEY); // longer than the MTU
        until(() -> r.counter(Counter.RCVD_MALFORMED) == 1, "a datagram over the MTU");
        craft(r, send | Ctrl.F_FIRST, 8, QKEY); // not whole
        until(() -> r.counter(Counter.RCVD_MALFORMED) == 2, "a first chunk alone");
        craft(r, io.jrdma.verbs.WrOpcode.RDMA_WRITE.ordinal() << 8 | whole, 8, QKEY); // not a SEND
        until(() -> r.counter(Counter.RCVD_MALFORMED) == 3, "a WRITE's opcode");
        craft(r, send | whole | Ctrl.F_IMM, 8, QKEY); // immediate data on a plain SEND
        until(() -> r.counter(Counter.RCVD_MALFORMED) == 4, "a SEND flagged with immediate data");
        craft(r, send | whole | Ctrl.F_INV, 8, QKEY); // an invalidation
        until(() -> r.counter(Counter.RCVD_MALFORMED) == 5, "a SEND flagged with an invalidation");
        craft(r, send | whole, 8, QKEY ^ 1); // another Q_Key
        until(() -> r.counter(Counter.RCVD_BAD_QKEY) == 1, "another Q_Key");
        s.send(to, r.qp.qpn(), 9);
        WorkCompletion wc = await(r.cq, "the datagram after them");
        assertEquals(0, wc.wrId(), "no receive was taken by the slots before");
        assertEquals(9, received(r, wc, s));
    }

    /** @return the held word of {@code u}'s UD QP, in its control segment */
    private static long heldWord(Ud u) {
        return ((ShmQp) u.qp).dir + Ctrl.Q_HELD;
    }

    @Test
    void aHoldLeftByASenderThatDiedIsTakenOverAndOneThatLivesIsWaitedOutForTheDrain() throws Exception {
        Ud r = new Ud();
        Ud s = new Ud();
        AddressHandle to = s.ahTo(r);
        r.postRecvs(4);
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        int held = -2 - (int) gone.pid(); // a UD sender's hold value ({@code ShmTransport.udHoldOf})
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), held);
        s.send(to, r.qp.qpn(), 1); // waits about a millisecond, finds the holder gone, takes the word
        assertEquals(1, received(r, await(r.cq, "the datagram after a dead sender's hold"), s));
        assertEquals(0, s.counter(Counter.UD_DROPPED_SENDS));

        Process stopped = new ProcessBuilder("sleep", "60").start();
        children.add(stopped);
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), -2 - (int) stopped.pid());
        long t0 = System.nanoTime();
        s.send(to, r.qp.qpn(), 2);
        long waited = System.nanoTime() - t0;
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS), "dropped after the wait");
        assertTrue(waited >= ShmTransport.UD_WAIT_NANOS, "the live holder was waited for " + waited + " ns");
        stopped.destroyForcibly();
        assertTrue(stopped.waitFor(10, TimeUnit.SECONDS));
        s.send(to, r.qp.qpn(), 3); // its holder gone now: taken over
        assertEquals(3, received(r, await(r.cq, "the datagram after the holder went"), s));
        assertEquals(1, s.counter(Counter.UD_DROPPED_SENDS));
    }

    @Test
    void aReceiverResetWaitsForAHolderOnlyWhileItLivesOrForTheDrain() throws Exception {
        Ud r = new Ud();
        Process stopped = new ProcessBuilder("sleep", "60").start();
        children.add(stopped);
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), -2 - (int) stopped.pid());
        long errors = r.counter(Counter.ENGINE_ERRORS);
        long t0 = System.nanoTime();
        r.qp.modify(new QpAttr().state(QpState.RESET));
        assertTrue(System.nanoTime() - t0 >= ShmTransport.DRAIN_NANOS, "a live holder is waited for the drain");
        assertEquals(errors + 1, r.counter(Counter.ENGINE_ERRORS));
        assertEquals(0, (int) ShmTransport.INT.getVolatile(r.transport().ctrl, heldWord(r)), "the word let go");
        ready(r.qp);
        Ud s = new Ud();
        r.postRecvs(1);
        s.send(s.ahTo(r), r.qp.qpn(), 5);
        assertEquals(5, received(r, await(r.cq, "a datagram after the reset"), s));

        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        ShmTransport.INT.setVolatile(r.transport().ctrl, heldWord(r), -2 - (int) gone.pid());
        t0 = System.nanoTime();
        r.qp.modify(new QpAttr().state(QpState.RESET));
        assertTrue(System.nanoTime() - t0 < ShmTransport.DRAIN_NANOS / 2, "a dead holder is not waited for");
        assertEquals(0, (int) ShmTransport.INT.getVolatile(r.transport().ctrl, heldWord(r)));
    }
}

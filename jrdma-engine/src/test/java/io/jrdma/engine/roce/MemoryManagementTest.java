package io.jrdma.engine.roce;

import io.jrdma.engine.iwarp.SoftIwarpDevice;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceCap;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.MemoryWindow;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.MwBind;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What each provider declares for memory windows and fast registration, the misuse of their verbs (an errno or an
 * exception that says what was wrong), and the order of local operations in the send queue.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MemoryManagementTest {
    @Test
    void softRoceDeclaresBothWindowTypesAndFastRegistrationSoftIwarpOnlyFastRegistration() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024)) {
            DeviceAttr a = p.a.ctx.queryDevice();
            assertTrue(a.supportsMw(MwType.TYPE_1) && a.supportsMw(MwType.TYPE_2), a.toString());
            assertTrue(a.has(DeviceCap.MEM_MGT_EXTENSIONS | DeviceCap.MEM_WINDOW_TYPE_2B), a.toString());
            assertTrue(a.maxMw() > 0 && a.maxMr() > 0);
        }
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (DeviceContext ctx = SoftIwarpDevice.forTest("lo", () -> List.of(lo))
                .open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
             ProtectionDomain pd = ctx.allocPd()) {
            DeviceAttr a = ctx.queryDevice();
            assertTrue(a.has(DeviceCap.MEM_MGT_EXTENSIONS), a.toString());
            assertFalse(a.has(DeviceCap.MEM_WINDOW), a.toString());
            assertEquals(0, a.maxMw());
            RdmaException e = assertThrows(RdmaException.class, () -> pd.allocMw(MwType.TYPE_2));
            assertEquals(Errno.EOPNOTSUPP, e.errno());
            assertTrue(e.getMessage().contains("allocMw") && e.getMessage().contains("siw"), e.getMessage());
            pd.allocMr(4096).close(); // fast registration it has
        }
    }

    @Test
    void misuseIsRefusedWithTheReason() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024)) {
            RdmaException e = assertThrows(RdmaException.class, () -> p.b.pd.allocMr(0));
            assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
            assertEquals(Errno.EINVAL, assertThrows(RdmaException.class, () -> p.b.pd.allocMw(null)).errno());

            MemoryWindow type1 = p.b.pd.allocMw(MwType.TYPE_1);
            MemoryWindow type2 = p.b.pd.allocMw(MwType.TYPE_2);
            MemoryRegion fast = p.b.pd.allocMr(4096);
            assertEquals(0, fast.length(), "a fast-registration region maps nothing before its REG_MR");
            ProtectionDomain otherPd = p.b.ctx.allocPd();
            MemoryRegion elsewhere = otherPd.register(p.b.buf.asSlice(0, 4096), Access.LOCAL_WRITE | Access.MW_BIND);
            MwBind bind = new MwBind().bind(elsewhere, elsewhere.address(), 64, Access.REMOTE_READ);
            assertEquals(Errno.EPERM.value(), p.b.qp.bindMw(type1, bind), "a region of another PD (as ibv_bind_mw)");
            assertEquals(Errno.EINVAL.value(), p.b.qp.bindMw(type2, bind.bind(p.b.mr, p.b.mr.address(), 64, 0)),
                    "bindMw of a type 2 window");
            assertEquals(Errno.EINVAL.value(), p.b.qp.bindMw(type1, new MwBind().bind(null, 0, 64, 0)),
                    "a range without a region");
            SendWorkRequest wr = new SendWorkRequest();
            assertEquals(Errno.EINVAL.value(), p.b.qp.postSend(wr.reset().bindMw(type1, type1.rkey() + 1, p.b.mr,
                    p.b.mr.address(), 64, 0)), "BIND_MW of a type 1 window (bindMw binds those)");
            assertEquals(Errno.EINVAL.value(), p.b.qp.postSend(wr.reset().regMr(p.b.mr, p.b.buf.asSlice(0, 64),
                    p.b.mr.rkey() + 1, 0)), "REG_MR of a region that is not a fast-registration one");
            assertEquals(Errno.EINVAL.value(), p.b.qp.postSend(wr.reset().regMr(fast, null, fast.rkey() + 1, 0)),
                    "REG_MR without a segment");

            type1.close();
            assertEquals(Errno.EINVAL, assertThrows(RdmaException.class, type1::close).errno(), "closing twice");
            RdmaException busy = assertThrows(RdmaException.class, otherPd::close);
            assertEquals(Errno.EBUSY, busy.errno());
            elsewhere.close();
            otherPd.close();
            type2.close();
            fast.close();
        }
    }

    /** A bind posted behind a WRITE completes after it, and a fenced LOCAL_INV after a READ completes after the READ. */
    @Test
    void localOperationsCompleteInSendQueueOrder() throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            MemoryRegion bindable = p.a.pd.register(p.a.buf.asSlice(1 << 19, 1 << 16),
                    Access.LOCAL_WRITE | Access.REMOTE_READ | Access.MW_BIND);
            MemoryWindow mw = p.a.pd.allocMw(MwType.TYPE_2);
            MemoryRegion fast = p.a.pd.allocMr(1 << 16);
            SendWorkRequest wr = new SendWorkRequest();
            int kf = MemoryWindow.incRkey(fast.rkey());
            java.lang.foreign.MemorySegment mapped = p.a.buf.asSlice(1 << 18, 1 << 16);
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).flags(SendFlags.SIGNALED)
                    .regMr(fast, mapped, kf, Access.LOCAL_WRITE)));
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 60_000).remote(p.b.mr.address(), p.b.mr.rkey())));
            int k = MemoryWindow.incRkey(mw.rkey());
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(3).flags(SendFlags.SIGNALED)
                    .bindMw(mw, k, bindable, bindable.address(), 4096, Access.REMOTE_READ)));
            // the READ lands in the fast-registration region through the key and address the REG_MR before it gives
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(4).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, mapped.address(), 30_000, kf).remote(p.b.mr.address(), p.b.mr.rkey())));
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(5).flags(SendFlags.SIGNALED | SendFlags.FENCE)
                    .localInv(kf)));
            long[] order = new long[5];
            WcOpcode[] ops = {WcOpcode.REG_MR, WcOpcode.RDMA_WRITE, WcOpcode.BIND_MW, WcOpcode.RDMA_READ,
                WcOpcode.LOCAL_INV};
            WorkCompletion[] wcs = {new WorkCompletion()};
            long deadline = System.nanoTime() + 10_000_000_000L;
            for (int got = 0; got < 5; ) {
                p.progress();
                if (p.a.cq.poll(wcs) == 1) {
                    assertEquals(WcStatus.SUCCESS, wcs[0].status(), wcs[0].toString());
                    assertEquals(ops[got], wcs[0].opcode(), wcs[0].toString());
                    order[got++] = wcs[0].wrId();
                }
                assertTrue(System.nanoTime() < deadline, "completions so far: " + java.util.Arrays.toString(order));
            }
            assertEquals("[1, 2, 3, 4, 5]", java.util.Arrays.toString(order));
            assertEquals(k, mw.rkey());
            mw.close();
            fast.close();
            bindable.close();
        }
    }

    /**
     * IBA's fence on a local operation: a fenced LOCAL_INV waits until the READ before it completed (the key works
     * meanwhile); an unfenced one runs when its turn comes, while the READ is still outstanding.
     */
    @Test
    void aFencedLocalInvalidateWaitsForTheReadBeforeItAnUnfencedOneDoesNot() throws Exception {
        for (boolean fenced : new boolean[] {true, false}) {
            try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
                io.jrdma.engine.core.Context a = (io.jrdma.engine.core.Context) p.a.ctx;
                MemoryRegion fast = p.a.pd.allocMr(1 << 16);
                java.lang.foreign.MemorySegment mapped = p.a.buf.asSlice(1 << 18, 1 << 16);
                int kf = MemoryWindow.incRkey(fast.rkey());
                SendWorkRequest wr = new SendWorkRequest();
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).flags(SendFlags.SIGNALED)
                        .regMr(fast, mapped, kf, Access.LOCAL_WRITE | Access.REMOTE_WRITE)));
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ)
                        .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 4096).remote(p.b.mr.address(), p.b.mr.rkey())));
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(3)
                        .flags(SendFlags.SIGNALED | (fenced ? SendFlags.FENCE : 0)).localInv(kf)));
                for (int n = 0; n < 10; n++) {
                    p.a.ctx.progress(); // only A's engine: the READ goes out, B does not answer yet
                }
                assertTrue(a.keys.lookup(kf) != null);
                assertEquals(!fenced, a.keys.lookup(kf).invalidated, fenced
                        ? "a fenced LOCAL_INV waits for the outstanding READ" : "an unfenced LOCAL_INV does not wait");
                WorkCompletion[] wcs = {new WorkCompletion()};
                long deadline = System.nanoTime() + 10_000_000_000L;
                long[] order = new long[3];
                for (int got = 0; got < 3; ) {
                    p.progress();
                    if (p.a.cq.poll(wcs) == 1) {
                        assertEquals(WcStatus.SUCCESS, wcs[0].status(), wcs[0].toString());
                        order[got++] = wcs[0].wrId();
                    }
                    assertTrue(System.nanoTime() < deadline, "completions: " + java.util.Arrays.toString(order));
                }
                assertEquals("[1, 2, 3]", java.util.Arrays.toString(order));
                assertTrue(a.keys.lookup(kf).invalidated, "after the LOCAL_INV");
                fast.close();
            }
        }
    }

    /** A type 1 bind of length 0 unbinds the window. */
    @Test
    void aZeroLengthBindUnbindsAType1Window() throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            MemoryRegion bindable = p.b.pd.register(p.b.buf.asSlice(1 << 19, 1 << 16),
                    Access.LOCAL_WRITE | Access.REMOTE_READ | Access.MW_BIND);
            MemoryWindow mw = p.b.pd.allocMw(MwType.TYPE_1);
            assertEquals(0, p.b.qp.bindMw(mw, new MwBind().wrId(1).flags(SendFlags.SIGNALED)
                    .bind(bindable, bindable.address(), 4096, Access.REMOTE_READ)));
            assertEquals(WcStatus.SUCCESS, next(p, p.b.qp.sendCq()).status());
            SendWorkRequest wr = new SendWorkRequest();
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 64).remote(bindable.address(), mw.rkey())));
            assertEquals(WcStatus.SUCCESS, next(p, p.a.cq).status(), "READ through the bound window");
            int bound = mw.rkey();
            assertEquals(0, p.b.qp.bindMw(mw, new MwBind().wrId(3).flags(SendFlags.SIGNALED).bind(null, 0, 0, 0)));
            WorkCompletion unbind = next(p, p.b.qp.sendCq());
            assertEquals(WcStatus.SUCCESS, unbind.status(), unbind.toString());
            assertEquals(WcOpcode.BIND_MW, unbind.opcode());
            assertEquals(MemoryWindow.incRkey(bound), mw.rkey(), "the unbind takes a key too");
            assertEquals(0, p.a.qp.postSend(wr.reset().wrId(4).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 64).remote(bindable.address(), mw.rkey())));
            assertEquals(WcStatus.REM_ACCESS_ERR, next(p, p.a.cq).status(), "READ through an unbound window");
            mw.close();
            bindable.close();
        }
    }

    /** A local access with the key of before a re-registration is LOC_PROT_ERR. */
    @Test
    void aStaleLocalKeyIsAProtectionError() throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            SendWorkRequest wr = new SendWorkRequest();
            // B's own QP: a fast-registration region re-registered; a SEND from its old key is LOC_PROT_ERR
            MemoryRegion fast = p.b.pd.allocMr(4096);
            java.lang.foreign.MemorySegment mapped = p.b.buf.asSlice(1 << 18, 4096);
            int k1 = MemoryWindow.incRkey(fast.rkey());
            assertEquals(0, p.b.qp.postSend(wr.reset().wrId(5).flags(SendFlags.SIGNALED)
                    .regMr(fast, mapped, k1, Access.LOCAL_WRITE)));
            assertEquals(WcStatus.SUCCESS, next(p, p.b.cq).status());
            assertEquals(0, p.b.qp.postSend(wr.reset().wrId(6).flags(SendFlags.SIGNALED).localInv(k1)));
            assertEquals(WcStatus.SUCCESS, next(p, p.b.cq).status());
            int k2 = MemoryWindow.incRkey(k1);
            assertEquals(0, p.b.qp.postSend(wr.reset().wrId(7).flags(SendFlags.SIGNALED)
                    .regMr(fast, mapped, k2, Access.LOCAL_WRITE)));
            assertEquals(WcStatus.SUCCESS, next(p, p.b.cq).status());
            assertEquals(0, p.b.qp.postSend(wr.reset().wrId(8).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, mapped.address(), 16, k1)));
            WorkCompletion stale = next(p, p.b.cq);
            assertEquals(WcStatus.LOC_PROT_ERR, stale.status(), "a SEND from the key before the re-registration: " + stale);
            assertEquals(8, stale.wrId());
            fast.close();
        }
    }

    /**
     * A request's regions are looked up again at each copy, not only when it starts (found in review): a region
     * deregistered while a WRITE from it is part way sent fails the WRITE with LOC_PROT_ERR, and nothing more of
     * its memory is sent; the QP enters ERROR.
     */
    @Test
    void aRegionDeregisteredWhileAWriteFromItIsPartWaySentIsALocalProtectionError() throws Exception {
        try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
            int len = 1 << 19; // 512 packets: A's engine alone sends 129 (RoceQp.MAX_UNACKED_PSNS), then waits for ACKs
            p.a.buf.asSlice(0, len).fill((byte) 0x3C);
            MemoryRegion src = p.a.pd.register(p.a.buf.asSlice(0, len), Access.LOCAL_WRITE);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).sge(0, src, 0, len).remote(p.b.mr.address(), p.b.mr.rkey())));
            io.jrdma.engine.core.Context a = (io.jrdma.engine.core.Context) p.a.ctx;
            for (int n = 0; n < 20; n++) {
                p.a.ctx.progress();
            }
            long sent = a.counter(io.jrdma.engine.core.Counter.SENT_PKTS);
            assertTrue(sent > 0 && sent < len / 1024, "part of the WRITE is sent: " + sent + " packets");
            src.close();
            WorkCompletion wc = next(p, p.a.cq);
            assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
            assertEquals(1, wc.wrId());
            assertEquals(io.jrdma.verbs.QpState.ERROR, p.a.qp.state());
            assertEquals(0, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_BYTE, len - 1),
                    "the WRITE's last packet was never sent");
        }
    }

    /**
     * A READ's sink looked up again when its response arrives (found in review): deregistered, or invalidated and
     * registered again onto other memory (LOCAL_INV and REG_MR, unfenced, while the READ is outstanding), the READ
     * fails with LOC_PROT_ERR and writes nothing: neither into the memory the region covered nor into the memory it
     * covers now (before, the response landed there, at the offset of the old).
     */
    @Test
    void aReadWhoseSinkIsGoneWhenItsResponseArrivesIsALocalProtectionError() throws Exception {
        for (boolean remapped : new boolean[] {false, true}) {
            try (UdpPair p = new UdpPair(1 << 20, Mtu.MTU_1024)) {
                p.b.buf.asSlice(0, 4096).fill((byte) 0x5A);
                java.lang.foreign.MemorySegment first = p.a.buf.asSlice(1 << 18, 4096);
                java.lang.foreign.MemorySegment second = p.a.buf.asSlice(1 << 19, 4096);
                SendWorkRequest wr = new SendWorkRequest();
                MemoryRegion sink;
                int lkey;
                if (remapped) {
                    sink = p.a.pd.allocMr(4096);
                    lkey = MemoryWindow.incRkey(sink.rkey());
                    assertEquals(0, p.a.qp.postSend(wr.reset().wrId(1).regMr(sink, first, lkey, Access.LOCAL_WRITE)));
                } else {
                    sink = p.a.pd.register(first, Access.LOCAL_WRITE);
                    lkey = sink.lkey();
                }
                assertEquals(0, p.a.qp.postSend(wr.reset().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                        .sge(0, first.address(), 4096, lkey).remote(p.b.mr.address(), p.b.mr.rkey())));
                if (remapped) {
                    int k2 = MemoryWindow.incRkey(lkey);
                    assertEquals(0, p.a.qp.postSend(wr.reset().wrId(3).localInv(lkey)));
                    assertEquals(0, p.a.qp.postSend(wr.reset().wrId(4).regMr(sink, second, k2, Access.LOCAL_WRITE)));
                }
                for (int n = 0; n < 10; n++) {
                    p.a.ctx.progress(); // only A's engine: the READ goes out (and the unfenced local operations run)
                }
                if (!remapped) {
                    sink.close();
                }
                WorkCompletion wc = next(p, p.a.cq);
                assertEquals(WcStatus.LOC_PROT_ERR, wc.status(), wc.toString());
                assertEquals(2, wc.wrId());
                assertEquals(io.jrdma.verbs.QpState.ERROR, p.a.qp.state());
                for (java.lang.foreign.MemorySegment m : List.of(first, second)) {
                    for (long i = 0; i < m.byteSize(); i++) {
                        assertEquals(0, m.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i), "byte " + i + " written");
                    }
                }
                if (remapped) {
                    sink.close();
                }
            }
        }
    }

    private static WorkCompletion next(UdpPair p, io.jrdma.verbs.CompletionQueue cq) {
        WorkCompletion[] wcs = {new WorkCompletion()};
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wcs) == 0) {
            p.progress();
            assertTrue(System.nanoTime() < deadline, "no completion");
        }
        return wcs[0];
    }
}

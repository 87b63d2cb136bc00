package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.MemoryWindow;
import io.jrdma.verbs.MwBind;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Memory windows and fast registration over an RC connection: type 1 windows bound with {@code bindMw},
 * type 2 windows bound with a BIND_MW work request, remote WRITE and READ through them, invalidation by the
 * peer's SEND_WITH_INV and by LOCAL_INV, use after invalidation completing with REM_ACCESS_ERR, a bind over
 * a region without MW_BIND completing with MW_BIND_ERR, the key byte of the rkey changing on each re-bind and
 * re-registration, and fast registration (REG_MR) with LOCAL_INV. Each test is aborted with the reason when
 * the provider does not declare what it needs.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class MemoryWindowTck extends VerbsTckSupport {
    /** Where the window's region is in the server's buffer. */
    private static final long WIN = 1 << 20;
    private static final int WIN_LEN = 64 << 10;
    private static final int REMOTE = Access.REMOTE_WRITE | Access.REMOTE_READ;
    private static final int LEN = 256;

    /** For subclasses. */
    protected MemoryWindowTck() {
    }

    private MemoryRegion bindableRegion() {
        return server.register(WIN, WIN_LEN, Access.LOCAL_WRITE | REMOTE | Access.MW_BIND);
    }

    private MemoryWindow allocMw(MwType type) {
        MemoryWindow mw = track(server, "MW", server.pd.allocMw(type));
        assertEquals(type, mw.type());
        assertSame(server.pd, mw.pd());
        return mw;
    }

    /** Posts a type 2 bind on the server's QP of {@code l} and waits for its completion; returns it. */
    private WorkCompletion bindType2(Link l, MemoryWindow mw, int key, MemoryRegion mr, long addr, long len) {
        post(l.sqp, new SendWorkRequest().wrId(0xB1).flags(SendFlags.SIGNALED).bindMw(mw, key, mr, addr, len, REMOTE));
        return awaitCompletion(l.scq, "type 2 bind");
    }

    /** The client WRITEs {@link #LEN} bytes of pattern {@code seed} to {@code addr} with {@code rkey}; returns the completion. */
    private WorkCompletion write(Link l, long addr, int rkey, int seed, long wrId) {
        fill(client.buf, 0, LEN, seed);
        post(l.cqp, new SendWorkRequest().wrId(wrId).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, LEN).remote(addr, rkey));
        return awaitCompletion(l.ccq, "WRITE with rkey 0x" + Integer.toHexString(rkey));
    }

    private void assertWriteWorks(Link l, long addr, int rkey, int seed) {
        WorkCompletion wc = write(l, addr, rkey, seed, seed);
        assertCompletion(wc, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, seed, l.cqp.qpn(), "WRITE through the window");
        awaitPlaced(() -> holdsPattern(server.buf, addr - server.mr.address(), LEN, seed, 0), "WRITE placed");
        assertPattern(server.buf, addr - server.mr.address(), LEN, seed, "WRITE through rkey 0x" + Integer.toHexString(rkey));
    }

    private void assertWriteRefused(Link l, long addr, int rkey, String why) {
        long off = addr - server.mr.address();
        fillSentinel(server.buf, off, LEN);
        WorkCompletion wc = write(l, addr, rkey, 99, 99);
        if (fx.remoteErrorsFailTheRequest()) {
            assertEquals(WcStatus.REM_ACCESS_ERR, wc.status(), why + ": " + wc);
        } else {
            assertTrue(wc.status() == WcStatus.REM_ACCESS_ERR || wc.status() == WcStatus.SUCCESS, why + ": " + wc);
        }
        assertSentinel(server.buf, off, LEN, why + ": nothing written");
    }

    private static void assertNextKey(int before, int after, String what) {
        assertNotEquals(before & 0xFF, after & 0xFF, what + ": the key byte changes (0x" + Integer.toHexString(before)
                + " -> 0x" + Integer.toHexString(after) + ")");
        assertEquals(before & 0xFFFF_FF00, after & 0xFFFF_FF00, what + ": the index part stays");
    }

    @Test
    void type1BindUseAndRebindWithANewKey() {
        requireMw(MwType.TYPE_1);
        Link l = connect();
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_1);
        int k0 = mw.rkey();
        long addr = mr.address() + 4096;
        MwBind bind = new MwBind().wrId(0xB1).flags(SendFlags.SIGNALED).bind(mr, addr, 8192, REMOTE);
        assertEquals(0, l.sqp.bindMw(mw, bind), "bindMw");
        int k1 = mw.rkey();
        assertNextKey(k0, k1, "type 1 bind");
        assertCompletion(awaitCompletion(l.scq, "type 1 bind"), WcStatus.SUCCESS, WcOpcode.BIND_MW, 0xB1, l.sqp.qpn(), "bind");
        assertWriteWorks(l, addr, k1, 1);

        // READ back through the window
        fillSentinel(client.buf, 4096, LEN);
        post(l.cqp, new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 4096, LEN).remote(addr, k1));
        assertCompletion(awaitCompletion(l.ccq, "READ through the window"), WcStatus.SUCCESS, WcOpcode.RDMA_READ, 2,
                l.cqp.qpn(), "READ");
        assertPattern(client.buf, 4096, LEN, 1, "READ through the window");

        assertEquals(0, l.sqp.bindMw(mw, bind.wrId(0xB2)), "re-bind");
        int k2 = mw.rkey();
        assertNextKey(k1, k2, "type 1 re-bind");
        assertCompletion(awaitCompletion(l.scq, "re-bind"), WcStatus.SUCCESS, WcOpcode.BIND_MW, 0xB2, l.sqp.qpn(), "re-bind");
        assertWriteWorks(l, addr, k2, 3);
        assertWriteRefused(l, addr, k1, "the key of before the re-bind");
    }

    @Test
    void type1AccessOutsideTheWindowIsRefused() {
        requireMw(MwType.TYPE_1);
        fx.deviation(ProviderFixture.Deviation.WINDOW_BOUNDS_NOT_ENFORCED)
                .ifPresent(why -> org.junit.jupiter.api.Assumptions.abort("skipped: " + why));
        Link l = connect();
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_1);
        long addr = mr.address() + 4096;
        assertEquals(0, l.sqp.bindMw(mw, new MwBind().wrId(1).flags(SendFlags.SIGNALED).bind(mr, addr, LEN, REMOTE)));
        awaitCompletion(l.scq, "bind");
        assertWriteRefused(l, addr + 1, mw.rkey(), "a WRITE one byte past the window's start runs past its end");
    }

    @Test
    void type2BindUseAndInvalidateBySendWithInv() {
        requireMw(MwType.TYPE_2);
        Link l = connect();
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_2);
        int k = MemoryWindow.incRkey(mw.rkey());
        assertCompletion(bindType2(l, mw, k, mr, mr.address(), WIN_LEN), WcStatus.SUCCESS, WcOpcode.BIND_MW, 0xB1,
                l.sqp.qpn(), "type 2 bind");
        assertEquals(k, mw.rkey(), "a type 2 window takes the key of its bind");
        assertWriteWorks(l, mr.address() + 128, k, 5);

        post(l.sqp, new RecvWorkRequest().wrId(7).sge(0, server.mr, 0, 64));
        post(l.cqp, new SendWorkRequest().wrId(8).opcode(WrOpcode.SEND_WITH_INV).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 16).invalidate(k));
        awaitCompletion(l.ccq, "SEND_WITH_INV");
        WorkCompletion rc = awaitCompletion(l.scq, "receive of the SEND_WITH_INV");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 7, l.sqp.qpn(), "SEND_WITH_INV receive");
        assertTrue((rc.flags() & WorkCompletion.WITH_INV) != 0, "WITH_INV flag: " + rc);
        assertEquals(k, rc.invalidatedRkey(), "invalidated_rkey of " + rc);
        assertWriteRefused(l, mr.address() + 128, k, "a window invalidated by SEND_WITH_INV");
    }

    @Test
    void type2LocalInvalidateThenRebindWithTheNextKey() {
        requireMw(MwType.TYPE_2);
        Link l = connect();
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_2);
        int k1 = MemoryWindow.incRkey(mw.rkey());
        assertEquals(WcStatus.SUCCESS, bindType2(l, mw, k1, mr, mr.address(), WIN_LEN).status());
        assertWriteWorks(l, mr.address(), k1, 6);
        post(l.sqp, new SendWorkRequest().wrId(0x1A).flags(SendFlags.SIGNALED).localInv(k1));
        assertCompletion(awaitCompletion(l.scq, "LOCAL_INV"), WcStatus.SUCCESS, WcOpcode.LOCAL_INV, 0x1A, l.sqp.qpn(),
                "LOCAL_INV");
        int k2 = MemoryWindow.incRkey(k1);
        assertNextKey(k1, k2, "type 2 re-bind");
        assertEquals(WcStatus.SUCCESS, bindType2(l, mw, k2, mr, mr.address(), WIN_LEN).status(), "re-bind after LOCAL_INV");
        assertEquals(k2, mw.rkey());
        assertWriteWorks(l, mr.address(), k2, 7);
        assertWriteRefused(l, mr.address(), k1, "the key invalidated by LOCAL_INV");
    }

    @Test
    void aBindOverARegionWithoutMwBindFailsWithMwBindErr() {
        DeviceAttr a = require("memory windows", x -> x.supportsMw(MwType.TYPE_1) || x.supportsMw(MwType.TYPE_2));
        for (MwType type : MwType.values()) {
            if (!a.supportsMw(type)) {
                continue;
            }
            Link l = connect();
            MemoryRegion plain = server.register(WIN, WIN_LEN, Access.LOCAL_WRITE | REMOTE); // no MW_BIND
            MemoryWindow mw = allocMw(type);
            WorkCompletion wc;
            if (type == MwType.TYPE_1) {
                assertEquals(0, l.sqp.bindMw(mw, new MwBind().wrId(0xB1).flags(SendFlags.SIGNALED)
                        .bind(plain, plain.address(), 4096, REMOTE)));
                wc = awaitCompletion(l.scq, "type 1 bind over a region without MW_BIND");
            } else {
                wc = bindType2(l, mw, MemoryWindow.incRkey(mw.rkey()), plain, plain.address(), 4096);
            }
            assertEquals(WcStatus.MW_BIND_ERR, wc.status(), type + " bind over a region without MW_BIND: " + wc);
            assertEquals(0xB1, wc.wrId());
        }
    }

    @Test
    void fastRegistrationMapsInvalidatesAndRemapsWithTheNextKey() {
        requireFastReg();
        Link l = connect();
        MemoryRegion mr = track(server, "fast-registration MR", server.pd.allocMr(WIN_LEN));
        int k1 = MemoryWindow.incRkey(mr.rkey());
        int access = Access.LOCAL_WRITE | REMOTE;
        post(l.sqp, new SendWorkRequest().wrId(0xF1).flags(SendFlags.SIGNALED)
                .regMr(mr, server.buf.asSlice(WIN, WIN_LEN), k1, access));
        assertCompletion(awaitCompletion(l.scq, "REG_MR"), WcStatus.SUCCESS, WcOpcode.REG_MR, 0xF1, l.sqp.qpn(), "REG_MR");
        assertEquals(k1, mr.rkey(), "the region takes the key of its registration");
        assertEquals(server.mr.address() + WIN, mr.address(), "the region covers the mapped segment");
        assertEquals(WIN_LEN, mr.length());
        assertWriteWorks(l, mr.address() + 64, k1, 8);

        post(l.sqp, new SendWorkRequest().wrId(0xF2).flags(SendFlags.SIGNALED).localInv(k1));
        assertCompletion(awaitCompletion(l.scq, "LOCAL_INV"), WcStatus.SUCCESS, WcOpcode.LOCAL_INV, 0xF2, l.sqp.qpn(),
                "LOCAL_INV of the region");
        int k2 = MemoryWindow.incRkey(k1);
        post(l.sqp, new SendWorkRequest().wrId(0xF3).flags(SendFlags.SIGNALED)
                .regMr(mr, server.buf.asSlice(WIN, WIN_LEN), k2, access));
        assertCompletion(awaitCompletion(l.scq, "second REG_MR"), WcStatus.SUCCESS, WcOpcode.REG_MR, 0xF3, l.sqp.qpn(),
                "re-registration");
        assertNextKey(k1, mr.rkey(), "re-registration");
        assertWriteWorks(l, mr.address() + 64, k2, 9);
        assertWriteRefused(l, mr.address() + 64, k1, "the key of the first registration");
    }

    @Test
    void aRegistrationWithoutAFreeRegionIsRefused() {
        requireFastReg();
        Link l = connect();
        MemoryRegion mr = track(server, "fast-registration MR", server.pd.allocMr(WIN_LEN));
        int k1 = MemoryWindow.incRkey(mr.rkey());
        post(l.sqp, new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED)
                .regMr(mr, server.buf.asSlice(WIN, WIN_LEN), k1, Access.LOCAL_WRITE));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(l.scq, "REG_MR").status());
        post(l.sqp, new SendWorkRequest().wrId(2).flags(SendFlags.SIGNALED)
                .regMr(mr, server.buf.asSlice(WIN, WIN_LEN), MemoryWindow.incRkey(k1), Access.LOCAL_WRITE));
        WorkCompletion wc = awaitCompletion(l.scq, "REG_MR of a region still registered");
        assertNotEquals(WcStatus.SUCCESS, wc.status(), "a REG_MR of a region that was not invalidated: " + wc);
        assertEquals(k1, mr.rkey(), "the failed registration left the key");
    }

    @Test
    void aType2WindowServesOnlyTheQpItIsBoundTo() {
        requireMw(MwType.TYPE_2);
        Link bound = connect();
        Link other = connect();
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_2);
        int k = MemoryWindow.incRkey(mw.rkey());
        assertEquals(WcStatus.SUCCESS, bindType2(bound, mw, k, mr, mr.address(), WIN_LEN).status());
        assertWriteWorks(bound, mr.address() + 512, k, 11);
        // IBA 10.6.7.2.2: a type 2 window is bound to one QP; a peer of another QP of the same PD is refused
        assertWriteRefused(other, mr.address() + 512, k, "a type 2 window used through a QP it is not bound to");
    }

    @Test
    void aRegionWithAWindowBoundCannotBeDeregisteredAndAClosedWindowsKeyStopsWorking() {
        requireMw(MwType.TYPE_1);
        Link l = connect();
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_1);
        assertEquals(0, l.sqp.bindMw(mw, new MwBind().wrId(1).flags(SendFlags.SIGNALED)
                .bind(mr, mr.address(), WIN_LEN, REMOTE)));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(l.scq, "bind").status());
        int k = mw.rkey();
        assertWriteWorks(l, mr.address() + 1024, k, 12);
        // rxe's dereg_mr refuses a region with windows bound to it (EINVAL); jrdma does the same
        io.jrdma.verbs.RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.jrdma.verbs.RdmaException.class, mr::close, "deregistering a region with a window bound");
        assertEquals(io.jrdma.verbs.RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
        assertWriteWorks(l, mr.address() + 1024, k, 13);
        closeNow(mw); // ibv_dealloc_mw of a bound window: its key stops working at once
        assertWriteRefused(l, mr.address() + 1024, k, "the key of a closed window");
        closeNow(mr); // no window bound any more
    }

    @Test
    void aType2BindOutsideTheRegionOrOfAWindowStillBoundFailsWithMwBindErr() {
        requireMw(MwType.TYPE_2);
        MemoryRegion mr = bindableRegion();
        MemoryWindow mw = allocMw(MwType.TYPE_2);
        Link l = connect();
        WorkCompletion wc = bindType2(l, mw, MemoryWindow.incRkey(mw.rkey()), mr, mr.address() + 1, WIN_LEN);
        assertEquals(WcStatus.MW_BIND_ERR, wc.status(), "a bind one byte past the region's end: " + wc);

        Link l2 = connect();
        int k = MemoryWindow.incRkey(mw.rkey());
        assertEquals(WcStatus.SUCCESS, bindType2(l2, mw, k, mr, mr.address(), 4096).status(), "first bind");
        WorkCompletion again = bindType2(l2, mw, MemoryWindow.incRkey(k), mr, mr.address(), 4096);
        assertEquals(WcStatus.MW_BIND_ERR, again.status(), "a bind of a type 2 window still bound: " + again);
        assertEquals(k, mw.rkey(), "the failed bind left the key");
    }

    @Test
    void aRegistrationLongerThanTheRegionAndAnInvalidationOfARegisteredRegionFail() {
        requireFastReg();
        Link l = connect();
        MemoryRegion mr = track(server, "fast-registration MR", server.pd.allocMr(4096));
        post(l.sqp, new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED)
                .regMr(mr, server.buf.asSlice(WIN, 8192), MemoryWindow.incRkey(mr.rkey()), Access.LOCAL_WRITE));
        WorkCompletion wc = awaitCompletion(l.scq, "REG_MR of 8 KiB on a 4 KiB region");
        assertNotEquals(WcStatus.SUCCESS, wc.status(), "a REG_MR beyond allocMr's maximum: " + wc);
        assertEquals(1, wc.wrId());

        Link l2 = connect();
        MemoryRegion plain = server.register(WIN, 4096, Access.LOCAL_WRITE | REMOTE);
        post(l2.sqp, new SendWorkRequest().wrId(2).flags(SendFlags.SIGNALED).localInv(plain.rkey()));
        WorkCompletion inv = awaitCompletion(l2.scq, "LOCAL_INV of a registered region");
        assertNotEquals(WcStatus.SUCCESS, inv.status(), "LOCAL_INV of a region that is not a fast-registration one: " + inv);
        assertWriteWorks(connect(), plain.address(), plain.rkey(), 14);
    }

    @Test
    void aFastRegistrationRegionIsInvalidatedBySendWithInv() {
        requireFastReg();
        Link l = connect();
        MemoryRegion mr = track(server, "fast-registration MR", server.pd.allocMr(WIN_LEN));
        int k = MemoryWindow.incRkey(mr.rkey());
        post(l.sqp, new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED)
                .regMr(mr, server.buf.asSlice(WIN, WIN_LEN), k, Access.LOCAL_WRITE | REMOTE));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(l.scq, "REG_MR").status());
        assertWriteWorks(l, mr.address(), k, 15);
        post(l.sqp, new RecvWorkRequest().wrId(7).sge(0, server.mr, 0, 64));
        post(l.cqp, new SendWorkRequest().wrId(8).opcode(WrOpcode.SEND_WITH_INV).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 16).invalidate(k));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(l.ccq, "SEND_WITH_INV").status());
        WorkCompletion rc = awaitCompletion(l.scq, "receive of the SEND_WITH_INV");
        assertEquals(WcStatus.SUCCESS, rc.status(), "SEND_WITH_INV of a fast-registration key: " + rc);
        assertEquals(k, rc.invalidatedRkey());
        assertWriteRefused(l, mr.address(), k, "a fast-registration region invalidated by SEND_WITH_INV");
    }

    @Test
    void aWindowGrantsItsOwnAccessNotItsRegions() {
        requireMw(MwType.TYPE_1);
        Link l = connect();
        MemoryRegion mr = bindableRegion(); // the region grants REMOTE_WRITE and REMOTE_READ
        MemoryWindow mw = allocMw(MwType.TYPE_1);
        long addr = mr.address() + 2048;
        assertEquals(0, l.sqp.bindMw(mw, new MwBind().wrId(1).flags(SendFlags.SIGNALED)
                .bind(mr, addr, 4096, Access.REMOTE_READ)));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(l.scq, "bind").status());
        fill(server.buf, addr - server.mr.address(), LEN, 16);
        post(l.cqp, new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 4096, LEN).remote(addr, mw.rkey()));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(l.ccq, "READ through a read-only window").status());
        assertPattern(client.buf, 4096, LEN, 16, "READ through a read-only window");
        assertWriteRefused(l, addr, mw.rkey(), "a WRITE through a window bound with REMOTE_READ only");
    }
}

package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.MemoryWindow;
import io.jrdma.verbs.MwBind;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Unreliable connections ({@code ibv_uc_pingpong}'s verbs): SEND (with or without immediate data) and RDMA
 * WRITE (with or without immediate data) between two UC QPs connected by hand, at 0, 1, MTU, MTU+1 and 64 KiB
 * (multi-packet messages), with the data checked; READ and atomics refused at post; memory windows of both
 * types bound on a UC QP (a BIND_MW work request, or {@code bindMw}) on either side, so in each threading mode,
 * serving UC WRITEs; REG_MR and LOCAL_INV refused at post (as rxe: RC only). Aborted with the reason on a
 * provider without UC.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class UcTck extends VerbsTckSupport {
    private static final long SRC = 0;
    private static final long DST = 2 << 20;
    private static final int GUARD = 64;
    /** Where the windows' region is in each side's buffer. */
    private static final long WIN = 4 << 20;
    private static final int WIN_LEN = 64 << 10;
    private static final int LEN = 256;

    private CompletionQueue ccq;
    private CompletionQueue scq;
    private QueuePair cqp;
    private QueuePair sqp;

    /** For subclasses. */
    protected UcTck() {
    }

    /** Aborts unless the provider has UC, then connects a UC QP of each side by hand. */
    @BeforeEach
    final void ucPair() {
        requireQpType(QpType.UC);
        ccq = client.newCq(256);
        scq = server.newCq(256);
        cqp = client.newQp(QpInitAttr.uc(ccq));
        sqp = server.newQp(QpInitAttr.uc(scq));
        connectByHand(cqp, sqp, WRITE_ACCESS);
    }

    private int[] sizes() {
        int mtu = pathMtu().bytes();
        return new int[] {0, 1, mtu, mtu + 1, 64 << 10};
    }

    private static SendWorkRequest data(SendWorkRequest wr, Side side, int size) {
        return size == 0 ? wr.numSge(0) : wr.sge(0, side.mr, SRC, size);
    }

    @Test
    void sendAndSendWithImmAtEverySize() {
        for (WrOpcode op : new WrOpcode[] {WrOpcode.SEND, WrOpcode.SEND_WITH_IMM}) {
            for (int size : sizes()) {
                String what = "UC " + op + " of " + size + " bytes";
                int seed = size + op.ordinal();
                fill(client.buf, SRC, size, seed);
                fillSentinel(server.buf, DST, (long) size + GUARD);
                post(sqp, new RecvWorkRequest().wrId(size).sge(0, server.mr, DST, (64 << 10) + GUARD));
                post(cqp, data(new SendWorkRequest().wrId(size + 1L).opcode(op).flags(SendFlags.SIGNALED).imm(size),
                        client, size));
                assertCompletion(awaitCompletion(ccq, what + " (sender)"), WcStatus.SUCCESS, WcOpcode.SEND, size + 1L,
                        cqp.qpn(), what);
                WorkCompletion rc = awaitCompletion(scq, what + " (receiver)");
                assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, size, sqp.qpn(), what + " receive");
                assertEquals(size, rc.byteLen(), what + ": byte_len of " + rc);
                assertEquals(op.hasImm(), rc.hasImm(), what + ": WITH_IMM of " + rc);
                assertFalse(rc.hasGrh(), what + ": a UC receive has no GRH: " + rc);
                if (op.hasImm()) {
                    assertEquals(size, rc.imm(), what + ": imm of " + rc);
                }
                assertPattern(server.buf, DST, size, seed, what);
                assertSentinel(server.buf, DST + size, GUARD, what);
            }
        }
    }

    @Test
    void writeAndWriteWithImmAtEverySize() {
        for (WrOpcode op : new WrOpcode[] {WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM}) {
            for (int size : sizes()) {
                String what = "UC " + op + " of " + size + " bytes";
                int seed = size * 3 + op.ordinal();
                fill(client.buf, SRC, size, seed);
                fillSentinel(server.buf, DST, (long) size + GUARD);
                if (op.hasImm()) {
                    post(sqp, new RecvWorkRequest().wrId(size).numSge(0));
                }
                post(cqp, data(new SendWorkRequest().wrId(size + 1L).opcode(op).flags(SendFlags.SIGNALED).imm(~size)
                        .remote(server.addr(DST), server.mr.rkey()), client, size));
                assertCompletion(awaitCompletion(ccq, what + " (sender)"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE,
                        size + 1L, cqp.qpn(), what);
                if (op.hasImm()) {
                    WorkCompletion rc = awaitCompletion(scq, what + " (receiver)");
                    assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, size, sqp.qpn(), what);
                    assertEquals(~size, rc.imm(), what + ": imm of " + rc);
                    assertPattern(server.buf, DST, size, seed, what);
                } else {
                    // UC has no acknowledgement: the sender's completion does not mean the data is placed
                    awaitTrue(() -> holdsPattern(server.buf, DST, size, seed, 0), what + " placed");
                }
                assertSentinel(server.buf, DST + size, GUARD, what);
            }
        }
    }

    @Test
    void readAndAtomicsAreRefusedAtPost() {
        MemoryRegion mr = client.mr;
        for (WrOpcode op : new WrOpcode[] {WrOpcode.RDMA_READ, WrOpcode.ATOMIC_FETCH_AND_ADD, WrOpcode.ATOMIC_CMP_AND_SWP}) {
            int rc = cqp.postSend(new SendWorkRequest().wrId(1).opcode(op).flags(SendFlags.SIGNALED)
                    .sge(0, mr, SRC, 8).remote(server.addr(DST), server.mr.rkey()));
            assertEquals(RdmaException.Errno.EINVAL.value(), rc, "postSend of " + op + " on a UC QP returned "
                    + RdmaException.Errno.of(rc) + " (" + rc + "): UC has no " + op);
        }
    }

    @Test
    void aType2WindowBoundByAWorkRequestOnAUcQpServesUcWrites() {
        requireMw(MwType.TYPE_2);
        type2WindowOn(server, sqp, scq, client, cqp, ccq); // each side binds: each threading mode of the fixture
        type2WindowOn(client, cqp, ccq, server, sqp, scq);
    }

    private void type2WindowOn(Side owner, QueuePair oqp, CompletionQueue ocq, Side peer, QueuePair pqp,
            CompletionQueue pcq) {
        String on = "a type 2 window of the " + owner + " bound on its UC QP";
        MemoryRegion region = owner.register(WIN, WIN_LEN, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.MW_BIND);
        MemoryWindow mw = track(owner, "MW", owner.pd.allocMw(MwType.TYPE_2));
        int key = MemoryWindow.incRkey(mw.rkey());
        long start = region.address() + 4096;
        post(oqp, new SendWorkRequest().wrId(0xB2).flags(SendFlags.SIGNALED)
                .bindMw(mw, key, region, start, 8192, Access.REMOTE_WRITE));
        assertCompletion(awaitCompletion(ocq, on), WcStatus.SUCCESS, WcOpcode.BIND_MW, 0xB2, oqp.qpn(), on);
        assertEquals(key, mw.rkey(), on + ": the window takes the key of its bind");
        assertUcWritePlaced(peer, pqp, pcq, owner, start + 128, key, 21, on);
        if (fx.deviation(ProviderFixture.Deviation.WINDOW_BOUNDS_NOT_ENFORCED).isEmpty()) {
            assertUcWriteDropped(peer, pqp, pcq, owner, oqp, ocq, start - LEN, key, on + ": a WRITE before the window's start");
        } // else declared: the device checks the region's bounds only (the fixture's reason)
        closeNow(mw);
        assertUcWriteDropped(peer, pqp, pcq, owner, oqp, ocq, start + 128, key, on + ": a WRITE after the window is closed");
    }

    @Test
    void aType1WindowBoundWithBindMwOnAUcQpServesUcWritesAndARebindChangesItsKey() {
        requireMw(MwType.TYPE_1);
        type1WindowOn(server, sqp, scq, client, cqp, ccq);
        type1WindowOn(client, cqp, ccq, server, sqp, scq);
    }

    private void type1WindowOn(Side owner, QueuePair oqp, CompletionQueue ocq, Side peer, QueuePair pqp,
            CompletionQueue pcq) {
        String on = "a type 1 window of the " + owner + " bound on its UC QP";
        MemoryRegion region = owner.register(WIN, WIN_LEN, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.MW_BIND);
        MemoryWindow mw = track(owner, "MW", owner.pd.allocMw(MwType.TYPE_1));
        long start = region.address() + 8192;
        MwBind bind = new MwBind().wrId(0xB1).flags(SendFlags.SIGNALED).bind(region, start, 4096, Access.REMOTE_WRITE);
        assertEquals(0, oqp.bindMw(mw, bind), on + ": bindMw");
        int k1 = mw.rkey();
        assertCompletion(awaitCompletion(ocq, on), WcStatus.SUCCESS, WcOpcode.BIND_MW, 0xB1, oqp.qpn(), on);
        assertUcWritePlaced(peer, pqp, pcq, owner, start, k1, 31, on);
        assertEquals(0, oqp.bindMw(mw, bind.wrId(0xB3)), on + ": re-bind");
        int k2 = mw.rkey();
        assertEquals(k1 & 0xFFFF_FF00, k2 & 0xFFFF_FF00, on + ": a re-bind keeps the key's index");
        assertTrue((k1 & 0xFF) != (k2 & 0xFF), on + ": a re-bind changes the key byte: 0x" + Integer.toHexString(k1)
                + " -> 0x" + Integer.toHexString(k2));
        assertCompletion(awaitCompletion(ocq, on + " (re-bind)"), WcStatus.SUCCESS, WcOpcode.BIND_MW, 0xB3, oqp.qpn(), on);
        assertUcWritePlaced(peer, pqp, pcq, owner, start + 64, k2, 32, on + " with its new key");
        assertUcWriteDropped(peer, pqp, pcq, owner, oqp, ocq, start, k1, on + ": a WRITE with the key of before the re-bind");
    }

    @Test
    void fastRegistrationAndLocalInvalidateAreRefusedAtPostOnUc() {
        requireFastReg();
        MemoryRegion fast = track(server, "fast-registration MR", server.pd.allocMr(WIN_LEN));
        int key = MemoryWindow.incRkey(fast.rkey());
        int rc = sqp.postSend(new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED)
                .regMr(fast, server.buf.asSlice(WIN, WIN_LEN), key, Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        assertEquals(RdmaException.Errno.EINVAL.value(), rc, "REG_MR on a UC QP returned " + RdmaException.Errno.of(rc)
                + " (" + rc + "): as rxe, fast registration is an RC work request");
        rc = sqp.postSend(new SendWorkRequest().wrId(2).flags(SendFlags.SIGNALED).localInv(fast.rkey()));
        assertEquals(RdmaException.Errno.EINVAL.value(), rc, "LOCAL_INV on a UC QP returned " + RdmaException.Errno.of(rc)
                + " (" + rc + "): as rxe, LOCAL_INV is an RC work request");
        // the QP is untouched: a SEND still goes through
        post(sqp, new RecvWorkRequest().wrId(3).sge(0, server.mr, DST, 64));
        post(cqp, new SendWorkRequest().wrId(4).flags(SendFlags.SIGNALED).sge(0, client.mr, SRC, 64));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(ccq, "SEND after the refused posts").status());
        assertCompletion(awaitCompletion(scq, "receive after the refused posts"), WcStatus.SUCCESS, WcOpcode.RECV, 3,
                sqp.qpn(), "receive after the refused posts");
    }

    /** {@code from} WRITEs {@link #LEN} bytes of pattern {@code seed} to {@code addr} of {@code to} with {@code rkey}. */
    private void assertUcWritePlaced(Side from, QueuePair qp, CompletionQueue cq, Side to, long addr, int rkey, int seed,
            String what) {
        long off = addr - to.mr.address();
        fillSentinel(to.buf, off, LEN);
        fill(from.buf, SRC, LEN, seed);
        post(qp, new SendWorkRequest().wrId(seed).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, from.mr, SRC, LEN).remote(addr, rkey));
        assertCompletion(awaitCompletion(cq, what + ": WRITE"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, seed, qp.qpn(), what);
        awaitTrue(() -> holdsPattern(to.buf, off, LEN, seed, 0), what + ": the WRITE through rkey 0x"
                + Integer.toHexString(rkey) + " placed");
    }

    /**
     * {@code from} WRITEs to {@code addr} of {@code to} with {@code rkey}, which the receiver must refuse: UC drops the
     * message (no NAK); a WRITE_WITH_IMM through {@code to}'s own region behind it, received in order, shows the
     * refused one was handled; nothing of it was written.
     */
    private void assertUcWriteDropped(Side from, QueuePair qp, CompletionQueue cq, Side to, QueuePair toQp,
            CompletionQueue toCq, long addr, int rkey, String what) {
        long off = addr - to.mr.address();
        fillSentinel(to.buf, off, LEN);
        fill(from.buf, SRC, LEN, 77);
        post(qp, new SendWorkRequest().wrId(0xDD).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, from.mr, SRC, LEN).remote(addr, rkey));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(cq, what + ": WRITE").status(), what
                + ": a UC sender completes once sent, whatever the receiver does");
        post(toQp, new RecvWorkRequest().wrId(0xEE).numSge(0));
        post(qp, new SendWorkRequest().wrId(0xEF).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).imm(0xEF).flags(SendFlags.SIGNALED)
                .numSge(0).remote(to.addr(DST), to.mr.rkey()));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(cq, what + ": the WRITE_WITH_IMM behind it").status());
        assertCompletion(awaitCompletion(toCq, what + ": the WRITE_WITH_IMM behind it received"), WcStatus.SUCCESS,
                WcOpcode.RECV_RDMA_WITH_IMM, 0xEE, toQp.qpn(), what);
        assertSentinel(to.buf, off, LEN, what + ": nothing written");
    }
}

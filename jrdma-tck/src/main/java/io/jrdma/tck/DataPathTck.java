package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every opcode at 0, 1, MTU−1, MTU, MTU+1 bytes and 1 MiB (atomics: 8) with the data checked
 * byte for byte and nothing written outside the destination; scatter/gather lists; INLINE;
 * signaled, unsignaled and sq_sig_all; the fields of every completion.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class DataPathTck extends TckSupport {
    /** Where sources are (client: SEND/WRITE data; server: READ data). */
    protected static final long SRC = 0;
    /** Where destinations are (server: SEND/WRITE; client: READ). */
    protected static final long DST = 2 << 20;
    /** The 8-byte words atomics act on (server) and their results land in (client). */
    protected static final long ATOM = 6 << 20;
    /** One mebibyte, in bytes. */
    protected static final int MIB = 1 << 20;
    /** Bytes after each destination that must stay untouched. */
    protected static final int GUARD = 64;
    private static final long WRID = 0x5EED_0000_0000_0000L;

    /** For subclasses. */
    protected DataPathTck() {
    }

    private static int[] sizes(int mtu) {
        return new int[] {0, 1, mtu - 1, mtu, mtu + 1, MIB};
    }

    /** One SGE over {@code [off, off + size)} of {@code side}'s buffer, or none for 0 bytes. */
    private static SendWorkRequest data(SendWorkRequest wr, TckSupport.Side side, long off, int size) {
        return size == 0 ? wr.numSge(0) : wr.sge(0, side.mr, off, size);
    }

    private void sendAllSizes(WrOpcode op) {
        Link l = connect();
        RecvWorkRequest rwr = new RecvWorkRequest();
        SendWorkRequest wr = new SendWorkRequest();
        for (int size : sizes(l.mtu())) {
            String what = op + " of " + size + " bytes";
            int seed = size + op.ordinal() * 7;
            int imm = 0x8000_0000 | size;
            fill(client.buf, SRC, size, seed);
            fillSentinel(server.buf, DST, (long) size + GUARD);
            post(l.sqp, rwr.reset().wrId(WRID + size).sge(0, server.mr, DST, MIB + GUARD));
            post(l.cqp, data(wr.reset().wrId(WRID + size + 1).opcode(op).flags(SendFlags.SIGNALED).imm(imm),
                    client, SRC, size));

            WorkCompletion sc = awaitCompletion(l.ccq, what + " (sender)");
            assertCompletion(sc, WcStatus.SUCCESS, WcOpcode.SEND, WRID + size + 1, l.cqp.qpn(), what);
            assertFalse(sc.hasImm(), what + ": a send completion carries no immediate data: " + sc);

            WorkCompletion rc = awaitCompletion(l.scq, what + " (receiver)");
            assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, WRID + size, l.sqp.qpn(), what + " receive");
            assertEquals(size, rc.byteLen(), what + ": byte_len of " + rc);
            assertEquals(l.cqp.qpn(), rc.srcQp(), what + ": src_qp of " + rc);
            assertEquals(op.hasImm(), rc.hasImm(), what + ": WITH_IMM flag of " + rc);
            if (op.hasImm()) {
                assertEquals(imm, rc.imm(), what + ": immediate data of " + rc);
            }
            assertEquals(0, rc.flags() & WorkCompletion.SOLICITED, what + ": not solicited: " + rc);
            assertPattern(server.buf, DST, size, seed, what + ": received data");
            assertSentinel(server.buf, DST + size, GUARD, what + ": after the received data");
        }
    }

    @Test
    void send() {
        sendAllSizes(WrOpcode.SEND);
    }

    @Test
    void sendWithImm() {
        requireImmediateData();
        sendAllSizes(WrOpcode.SEND_WITH_IMM);
    }

    /**
     * Found by the rdma-core pingpong work: a completion must never be visible before its queue
     * slot is free, or a receive reposted the moment its completion is polled finds the queue
     * full (ENOMEM). A one-deep receive queue makes every repost depend on it.
     */
    @Test
    void aReceiveRepostedRightAfterItsCompletionAlwaysFindsRoom() {
        Link l = link().serverQp(a -> a.withDepth(16, 1)).connect();
        RecvWorkRequest rwr = new RecvWorkRequest();
        SendWorkRequest wr = new SendWorkRequest();
        post(l.sqp, rwr.reset().wrId(0).sge(0, server.mr, DST, 64));
        for (int i = 0; i < 300; i++) {
            post(l.cqp, data(wr.reset().wrId(i).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED), client, SRC, 8));
            WorkCompletion rc = awaitCompletion(l.scq, "receive " + i);
            assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, i, l.sqp.qpn(), "receive " + i);
            post(l.sqp, rwr.reset().wrId(i + 1).sge(0, server.mr, DST, 64)); // at once: must not be ENOMEM
            assertCompletion(awaitCompletion(l.ccq, "send " + i), WcStatus.SUCCESS, WcOpcode.SEND, i, l.cqp.qpn(),
                    "send " + i);
        }
    }

    private void writeAllSizes(WrOpcode op) {
        Link l = connect();
        RecvWorkRequest rwr = new RecvWorkRequest();
        SendWorkRequest wr = new SendWorkRequest();
        for (int size : sizes(l.mtu())) {
            String what = op + " of " + size + " bytes";
            int seed = size + op.ordinal() * 7 + 3;
            int imm = 0x1234_0000 + size;
            fill(client.buf, SRC, size, seed);
            fillSentinel(server.buf, DST - GUARD, (long) size + 2 * GUARD);
            if (op.hasImm()) {
                post(l.sqp, rwr.reset().wrId(WRID + size).numSge(0));
            }
            post(l.cqp, data(wr.reset().wrId(WRID + size + 1).opcode(op).flags(SendFlags.SIGNALED).imm(imm)
                    .remote(server.addr(DST), server.mr.rkey()), client, SRC, size));

            WorkCompletion sc = awaitCompletion(l.ccq, what);
            assertCompletion(sc, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, WRID + size + 1, l.cqp.qpn(), what);
            if (op.hasImm()) {
                WorkCompletion rc = awaitCompletion(l.scq, what + " (receiver)");
                assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, WRID + size, l.sqp.qpn(),
                        what + " receive");
                assertTrue(rc.hasImm(), what + ": WITH_IMM flag of " + rc);
                assertEquals(imm, rc.imm(), what + ": immediate data of " + rc);
                assertEquals(size, rc.byteLen(), what + ": byte_len of " + rc);
                assertEquals(l.cqp.qpn(), rc.srcQp(), what + ": src_qp of " + rc);
            } else {
                assertNoCompletion(l.scq, Duration.ZERO, "a plain RDMA WRITE consumes no receive");
            }
            awaitPlaced(() -> holdsPattern(server.buf, DST, size, seed, 0), what + " to be placed");
            assertPattern(server.buf, DST, size, seed, what + ": written data");
            assertSentinel(server.buf, DST - GUARD, GUARD, what + ": before the written data");
            assertSentinel(server.buf, DST + size, GUARD, what + ": after the written data");
        }
    }

    @Test
    void rdmaWrite() {
        writeAllSizes(WrOpcode.RDMA_WRITE);
    }

    @Test
    void rdmaWriteWithImm() {
        requireImmediateData();
        writeAllSizes(WrOpcode.RDMA_WRITE_WITH_IMM);
    }

    @Test
    void rdmaRead() {
        Link l = connect();
        SendWorkRequest wr = new SendWorkRequest();
        for (int size : sizes(l.mtu())) {
            String what = "RDMA_READ of " + size + " bytes";
            int seed = size + 11;
            fill(server.buf, SRC, size, seed);
            fillSentinel(client.buf, DST - GUARD, (long) size + 2 * GUARD);
            post(l.cqp, data(wr.reset().wrId(WRID + size).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .remote(server.addr(SRC), server.mr.rkey()), client, DST, size));
            WorkCompletion wc = awaitCompletion(l.ccq, what);
            assertCompletion(wc, WcStatus.SUCCESS, WcOpcode.RDMA_READ, WRID + size, l.cqp.qpn(), what);
            assertEquals(size, wc.byteLen(), what + ": byte_len of " + wc);
            assertPattern(client.buf, DST, size, seed, what + ": data read");
            assertSentinel(client.buf, DST - GUARD, GUARD, what + ": before the destination");
            assertSentinel(client.buf, DST + size, GUARD, what + ": after the destination");
        }
        assertNoCompletion(l.scq, Duration.ZERO, "an RDMA READ consumes no receive");
    }

    private WorkCompletion atomic(Link l, WrOpcode op, long wrId, long compareAdd, long swap, long resultOff) {
        fillSentinel(client.buf, resultOff - 8, 24);
        post(l.cqp, new SendWorkRequest().wrId(wrId).opcode(op).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, resultOff, 8).remote(server.addr(ATOM), server.mr.rkey()).atomic(compareAdd, swap));
        WorkCompletion wc = awaitCompletion(l.ccq, op + " " + wrId);
        assertCompletion(wc, WcStatus.SUCCESS, WcOpcode.of(op), wrId, l.cqp.qpn(), op.toString());
        assertEquals(8, wc.byteLen(), op + ": byte_len of " + wc);
        assertSentinel(client.buf, resultOff - 8, 8, op + ": before the result");
        assertSentinel(client.buf, resultOff + 8, 8, op + ": after the result");
        return wc;
    }

    @Test
    void atomicCompareAndSwap() {
        requireAtomics();
        Link l = connect();
        fillSentinel(server.buf, ATOM - 8, 24);
        putLong(server.buf, ATOM, 41);
        atomic(l, WrOpcode.ATOMIC_CMP_AND_SWP, 1, 41, 0x1234_5678_9ABC_DEF0L, ATOM);
        assertEquals(41, getLong(client.buf, ATOM), "CMP_AND_SWP returns the original value");
        assertEquals(0x1234_5678_9ABC_DEF0L, getLong(server.buf, ATOM), "equal: swapped");
        atomic(l, WrOpcode.ATOMIC_CMP_AND_SWP, 2, 41, 99, ATOM + 64);
        assertEquals(0x1234_5678_9ABC_DEF0L, getLong(client.buf, ATOM + 64), "the original value again");
        assertEquals(0x1234_5678_9ABC_DEF0L, getLong(server.buf, ATOM), "not equal: not swapped");
        assertSentinel(server.buf, ATOM - 8, 8, "before the target word");
        assertSentinel(server.buf, ATOM + 8, 8, "after the target word");
    }

    @Test
    void atomicFetchAndAdd() {
        requireAtomics();
        Link l = connect();
        fillSentinel(server.buf, ATOM - 8, 24);
        putLong(server.buf, ATOM, 0xFFFF_FFFFL);
        atomic(l, WrOpcode.ATOMIC_FETCH_AND_ADD, 1, 1, 0, ATOM);
        assertEquals(0xFFFF_FFFFL, getLong(client.buf, ATOM), "FETCH_AND_ADD returns the original value");
        assertEquals(0x1_0000_0000L, getLong(server.buf, ATOM), "a 64-bit add carries into the high word");
        atomic(l, WrOpcode.ATOMIC_FETCH_AND_ADD, 2, -0x1_0000_0001L, 0, ATOM + 64);
        assertEquals(0x1_0000_0000L, getLong(client.buf, ATOM + 64));
        assertEquals(-1L, getLong(server.buf, ATOM), "adding a negative value wraps");
        assertSentinel(server.buf, ATOM - 8, 8, "before the target word");
        assertSentinel(server.buf, ATOM + 8, 8, "after the target word");
    }

    @Test
    void scatterGatherSendWithThreeSgesOnBothSides() {
        Link l = connect();
        int mtu = l.mtu();
        long[] srcOff = {SRC, SRC + 10_000, SRC + 50_000};
        int[] srcLen = {100, mtu + 7, 3000};
        int total = srcLen[0] + srcLen[1] + srcLen[2];
        long[] dstOff = {DST, DST + 100_000, DST + 200_000};
        int[] dstLen = {1000, 50, total};
        SendWorkRequest wr = new SendWorkRequest().wrId(7).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED);
        RecvWorkRequest rwr = new RecvWorkRequest().wrId(8);
        long pos = 0;
        for (int i = 0; i < 3; i++) {
            fill(client.buf, srcOff[i], srcLen[i], 21, pos);
            pos += srcLen[i];
            wr.sge(i, client.mr, srcOff[i], srcLen[i]);
            fillSentinel(server.buf, dstOff[i], dstLen[i] + GUARD);
            rwr.sge(i, server.mr, dstOff[i], dstLen[i]);
        }
        assertEquals(3, wr.numSge());
        assertEquals(3, rwr.numSge());
        post(l.sqp, rwr);
        post(l.cqp, wr);
        assertCompletion(awaitCompletion(l.ccq, "gathered SEND"), WcStatus.SUCCESS, WcOpcode.SEND, 7, l.cqp.qpn(),
                "gathered SEND");
        WorkCompletion rc = awaitCompletion(l.scq, "scattered receive");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 8, l.sqp.qpn(), "scattered receive");
        assertEquals(total, rc.byteLen(), "byte_len of " + rc);
        assertPattern(server.buf, dstOff[0], 1000, 21, 0, "receive SGE 0");
        assertSentinel(server.buf, dstOff[0] + 1000, GUARD, "after receive SGE 0");
        assertPattern(server.buf, dstOff[1], 50, 21, 1000, "receive SGE 1");
        assertSentinel(server.buf, dstOff[1] + 50, GUARD, "after receive SGE 1");
        assertPattern(server.buf, dstOff[2], total - 1050, 21, 1050, "receive SGE 2");
        assertSentinel(server.buf, dstOff[2] + total - 1050, GUARD, "after the received data in SGE 2");
    }

    @Test
    void scatterGatherWriteAndReadWithThreeSges() {
        Link l = connect();
        int mtu = l.mtu();
        long[] off = {SRC, SRC + 20_000, SRC + 70_000};
        int[] len = {mtu - 3, 5, 2 * mtu + 1};
        int total = len[0] + len[1] + len[2];
        SendWorkRequest write = new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(server.addr(DST), server.mr.rkey());
        long pos = 0;
        for (int i = 0; i < 3; i++) {
            fill(client.buf, off[i], len[i], 33, pos);
            pos += len[i];
            write.sge(i, client.mr, off[i], len[i]);
        }
        fillSentinel(server.buf, DST, total + GUARD);
        post(l.cqp, write);
        assertCompletion(awaitCompletion(l.ccq, "gathered WRITE"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 1,
                l.cqp.qpn(), "gathered WRITE");
        awaitPlaced(() -> holdsPattern(server.buf, DST, total, 33, 0), "the gathered WRITE to be placed");
        assertPattern(server.buf, DST, total, 33, "gathered WRITE data");
        assertSentinel(server.buf, DST + total, GUARD, "after the gathered WRITE");

        long[] dst = {DST, DST + 100_000, DST + 300_000};
        SendWorkRequest read = new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .remote(server.addr(DST), server.mr.rkey());
        for (int i = 0; i < 3; i++) {
            fillSentinel(client.buf, dst[i], len[i] + GUARD);
            read.sge(i, client.mr, dst[i], len[i]);
        }
        int sgeRd = client.ctx.queryDevice().maxSgeRd();
        if (sgeRd < 3) {
            // the device scatters a READ into max_sge_rd SGEs at most (iWARP's siw: 1): more is refused at post
            assertEquals(io.jrdma.verbs.RdmaException.Errno.EINVAL.value(), l.cqp.postSend(read), "a READ with 3 SGEs where the"
                    + " device's max_sge_rd is " + sgeRd + " is refused at post");
            assertNoCompletion(l.ccq, Duration.ZERO, "a refused READ completes nothing");
            read = new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .remote(server.addr(DST), server.mr.rkey());
            // what it takes: the first max_sge_rd - 1 SGEs as above, the last one for the rest of the bytes
            int last = Math.max(1, sgeRd) - 1;
            for (int i = 0; i < last; i++) {
                read.sge(i, client.mr, dst[i], len[i]);
            }
            int rest = 0;
            for (int i = last; i < 3; i++) {
                rest += len[i];
            }
            fillSentinel(client.buf, dst[last], rest + GUARD);
            read.sge(last, client.mr, dst[last], rest);
            len = java.util.Arrays.copyOf(len, last + 1);
            len[last] = rest;
        }
        post(l.cqp, read);
        WorkCompletion wc = awaitCompletion(l.ccq, "scattered READ");
        assertCompletion(wc, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 2, l.cqp.qpn(), "scattered READ");
        assertEquals(total, wc.byteLen(), "byte_len of " + wc);
        pos = 0;
        for (int i = 0; i < len.length; i++) {
            assertPattern(client.buf, dst[i], len[i], 33, pos, "READ SGE " + i);
            assertSentinel(client.buf, dst[i] + len[i], GUARD, "after READ SGE " + i);
            pos += len[i];
        }
    }

    @Test
    void inlineSendIsCopiedWhenPosted() {
        requireImmediateData();
        Link l = connect();
        post(l.sqp, new RecvWorkRequest().wrId(3).sge(0, server.mr, DST, 4096));
        fill(client.buf, SRC, 200, 44);
        fillSentinel(server.buf, DST, 200 + GUARD);
        post(l.cqp, new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND_WITH_IMM).imm(-2)
                .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, client.mr, SRC, 120).sge(1, client.mr, SRC + 120, 80));
        fill(client.buf, SRC, 200, 45); // the source may be reused as soon as postSend returns
        assertCompletion(awaitCompletion(l.ccq, "INLINE SEND"), WcStatus.SUCCESS, WcOpcode.SEND, 4, l.cqp.qpn(),
                "INLINE SEND");
        WorkCompletion rc = awaitCompletion(l.scq, "INLINE SEND receive");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 3, l.sqp.qpn(), "INLINE SEND receive");
        assertEquals(200, rc.byteLen());
        assertEquals(-2, rc.imm());
        assertPattern(server.buf, DST, 200, 44, "INLINE data: what the source held when posted");
        assertSentinel(server.buf, DST + 200, GUARD, "after the INLINE data");
    }

    /**
     * INLINE SGEs of 8 bytes each (the size of perftest's latency messages, copied with one load and one store):
     * unaligned, out of the source's order, each landing at its own offset of the message.
     */
    @Test
    void inlineSendOfEightByteSgesIsCopiedWhenPosted() {
        Link l = connect();
        post(l.sqp, new RecvWorkRequest().wrId(5).sge(0, server.mr, DST, 4096));
        fill(client.buf, SRC, 64, 46);
        fillSentinel(server.buf, DST, 24 + GUARD);
        post(l.cqp, new SendWorkRequest().wrId(6).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE)
                .sge(0, client.mr, SRC + 19, 8).sge(1, client.mr, SRC + 3, 8).sge(2, client.mr, SRC + 40, 8));
        fill(client.buf, SRC, 64, 47); // the source may be reused as soon as postSend returns
        assertCompletion(awaitCompletion(l.ccq, "INLINE SEND of 8-byte SGEs"), WcStatus.SUCCESS, WcOpcode.SEND, 6,
                l.cqp.qpn(), "INLINE SEND of 8-byte SGEs");
        WorkCompletion rc = awaitCompletion(l.scq, "INLINE SEND of 8-byte SGEs, receive");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 5, l.sqp.qpn(), "INLINE SEND of 8-byte SGEs, receive");
        assertEquals(24, rc.byteLen());
        assertPattern(server.buf, DST, 8, 46, 19, "INLINE SGE 0 (source offset 19)");
        assertPattern(server.buf, DST + 8, 8, 46, 3, "INLINE SGE 1 (source offset 3)");
        assertPattern(server.buf, DST + 16, 8, 46, 40, "INLINE SGE 2 (source offset 40)");
        assertSentinel(server.buf, DST + 24, GUARD, "after the INLINE data");
    }

    @Test
    void inlineWriteOfMaxInlineData() {
        Link l = connect();
        int asked = QpInitAttr.rc(l.ccq).maxInlineData();
        java.util.Optional<String> less = fx.deviation(ProviderFixture.Deviation.LESS_INLINE_DATA);
        int n = less.isPresent() ? fx.maxInlineData(l.cqp, asked) : asked;
        if (less.isPresent()) {
            assertTrue(n > 0 && n <= asked, "the inline data the QP took, 1.." + asked + ": " + n);
            if (n < asked) {
                assertEquals(io.jrdma.verbs.RdmaException.Errno.EINVAL.value(), l.cqp.postSend(new SendWorkRequest().wrId(4)
                        .opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.INLINE)
                        .sge(0, client.mr, SRC, n + 1).remote(server.addr(DST), server.mr.rkey())),
                        "an INLINE WRITE of " + (n + 1) + " bytes where the QP took " + n + " (declared: " + less.get()
                        + ") is refused at post");
            }
        }
        fill(client.buf, SRC, n, 46);
        fillSentinel(server.buf, DST, n + GUARD);
        post(l.cqp, new SendWorkRequest().wrId(5).opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, client.mr, SRC, n)
                .remote(server.addr(DST), server.mr.rkey()));
        fill(client.buf, SRC, n, 47);
        assertCompletion(awaitCompletion(l.ccq, "INLINE WRITE"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 5,
                l.cqp.qpn(), "INLINE WRITE");
        awaitPlaced(() -> holdsPattern(server.buf, DST, n, 46, 0), "the INLINE WRITE to be placed");
        assertPattern(server.buf, DST, n, 46, "INLINE WRITE data");
        assertSentinel(server.buf, DST + n, GUARD, "after the INLINE WRITE");
    }

    /** SendFlags.INLINE: "the SGEs' lkeys are not checked" (as in libibverbs, where inline data is copied by address). */
    @Test
    void inlineDataIgnoresTheLkey() {
        Link l = connect();
        post(l.sqp, new RecvWorkRequest().wrId(3).sge(0, server.mr, DST, 4096));
        fill(client.buf, SRC, 64, 48);
        int bogusLkey = client.mr.lkey() ^ 0x0F0F_0F0F;
        int rc = l.cqp.postSend(new SendWorkRequest().wrId(6).opcode(WrOpcode.SEND)
                .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, client.addr(SRC), 64, bogusLkey));
        assertEquals(0, rc, "postSend of an INLINE SEND whose SGE has an invalid lkey: SendFlags.INLINE documents "
                + "that lkeys are not checked, but the provider returned errno " + rc);
        assertCompletion(awaitCompletion(l.ccq, "INLINE SEND"), WcStatus.SUCCESS, WcOpcode.SEND, 6, l.cqp.qpn(),
                "INLINE SEND with an unchecked lkey");
        assertCompletion(awaitCompletion(l.scq, "receive"), WcStatus.SUCCESS, WcOpcode.RECV, 3, l.sqp.qpn(),
                "receive");
        assertPattern(server.buf, DST, 64, 48, "INLINE data");
    }

    @Test
    void unsignaledRequestsCompleteSilentlyUntilASignaledOne() {
        Link l = connect();
        putLong(server.buf, DST, 0);
        putLong(client.buf, SRC, 0x0BAD_CAFEL);
        post(l.cqp, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(0).sge(0, client.mr, SRC, 8)
                .remote(server.addr(DST), server.mr.rkey()));
        awaitTrue(() -> getLong(server.buf, DST) == 0x0BAD_CAFEL, "the unsignaled WRITE to land");
        assertNoCompletion(l.ccq, Duration.ofMillis(50), "an unsignaled WRITE has no completion");

        putLong(client.buf, SRC + 8, 0x600D_F00DL);
        post(l.cqp, new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).flags(0).sge(0, client.mr, SRC + 8, 8)
                .remote(server.addr(DST + 8), server.mr.rkey()));
        post(l.cqp, new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, SRC + 16, 8).remote(server.addr(DST + 8), server.mr.rkey()));
        WorkCompletion wc = awaitCompletion(l.ccq, "the signaled READ after two unsignaled WRITEs");
        assertCompletion(wc, WcStatus.SUCCESS, WcOpcode.RDMA_READ, 3, l.cqp.qpn(),
                "only the signaled request completes");
        assertEquals(0x600D_F00DL, getLong(client.buf, SRC + 16), "the READ sees the WRITE before it");
        assertNoCompletion(l.ccq, Duration.ofMillis(20), "nothing for the unsignaled requests afterwards");
    }

    @Test
    void sqSigAllSignalsUnsignaledRequests() {
        Link l = link().clientQp(a -> a.withSqSigAll(true)).connect();
        post(l.sqp, new RecvWorkRequest().wrId(9).sge(0, server.mr, DST, 64));
        post(l.cqp, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(0).sge(0, client.mr, SRC, 8)
                .remote(server.addr(DST + 64), server.mr.rkey()));
        post(l.cqp, new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(0).sge(0, client.mr, SRC, 8));
        List<WorkCompletion> wcs = awaitCompletions(l.ccq, 2, "two unsignaled requests on an sq_sig_all QP");
        assertCompletion(wcs.get(0), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 1, l.cqp.qpn(), "first");
        assertCompletion(wcs.get(1), WcStatus.SUCCESS, WcOpcode.SEND, 2, l.cqp.qpn(), "second");
        assertCompletion(awaitCompletion(l.scq, "receive"), WcStatus.SUCCESS, WcOpcode.RECV, 9, l.sqp.qpn(),
                "receive");
    }

    @Test
    void largeWrIdsAndNegativeImmediatesSurvive() {
        requireImmediateData();
        Link l = connect();
        long[] ids = {0, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 0xFEDC_BA98_7654_3210L};
        int[] imms = {0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, 0x8765_4321};
        for (int i = 0; i < ids.length; i++) {
            post(l.sqp, new RecvWorkRequest().wrId(~ids[i]).sge(0, server.mr, DST, 64));
        }
        for (int i = 0; i < ids.length; i++) {
            post(l.cqp, new SendWorkRequest().wrId(ids[i]).opcode(i % 2 == 0 ? WrOpcode.SEND_WITH_IMM
                    : WrOpcode.RDMA_WRITE_WITH_IMM).imm(imms[i]).flags(SendFlags.SIGNALED)
                    .sge(0, client.mr, SRC, 8).remote(server.addr(DST + 128), server.mr.rkey()));
        }
        List<WorkCompletion> sent = awaitCompletions(l.ccq, ids.length, "sender completions");
        List<WorkCompletion> recv = awaitCompletions(l.scq, ids.length, "receiver completions");
        for (int i = 0; i < ids.length; i++) {
            boolean send = i % 2 == 0;
            assertCompletion(sent.get(i), WcStatus.SUCCESS, send ? WcOpcode.SEND : WcOpcode.RDMA_WRITE, ids[i],
                    l.cqp.qpn(), "request " + i);
            assertCompletion(recv.get(i), WcStatus.SUCCESS, send ? WcOpcode.RECV : WcOpcode.RECV_RDMA_WITH_IMM,
                    ~ids[i], l.sqp.qpn(), "receive " + i);
            assertEquals(imms[i], recv.get(i).imm(), "immediate data " + i);
            assertTrue(recv.get(i).hasImm(), "WITH_IMM flag " + i);
            assertEquals(l.cqp.qpn(), recv.get(i).srcQp(), "src_qp " + i);
            assertEquals(8, recv.get(i).byteLen(), "byte_len " + i);
        }
    }

    @Test
    void sendWithInvalidateInvalidatesTheNamedKeyAtTheReceiver() {
        long base = 1 << 20;
        Link l = connect();
        // the key a peer may invalidate: a region registered with REMOTE_INVALIDATE, or, where registered regions
        // cannot be (libibverbs), a type 2 memory window bound over one to the server's QP
        long targetAddr;
        int targetKey;
        java.util.Optional<String> noRegion = fx.deviation(ProviderFixture.Deviation.NO_REMOTELY_INVALIDATABLE_REGIONS);
        if (noRegion.isEmpty()) {
            MemoryRegion target = server.register(base, 4096,
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_INVALIDATE);
            targetAddr = target.address();
            targetKey = target.rkey();
        } else {
            io.jrdma.verbs.DeviceAttr a = server.ctx.queryDevice();
            org.junit.jupiter.api.Assumptions.assumeTrue(a.supportsMw(io.jrdma.verbs.MwType.TYPE_2),
                    () -> "skipped: " + noRegion.get() + "; and the device declares no type 2 memory windows, the other"
                            + " key a peer may invalidate");
            MemoryRegion target = server.register(base, 4096,
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.MW_BIND);
            io.jrdma.verbs.MemoryWindow mw = track(server, "type 2 MW", server.pd.allocMw(io.jrdma.verbs.MwType.TYPE_2));
            int key = io.jrdma.verbs.MemoryWindow.incRkey(mw.rkey());
            post(l.sqp, new SendWorkRequest().wrId(6).flags(SendFlags.SIGNALED)
                    .bindMw(mw, key, target, target.address(), 4096, Access.REMOTE_WRITE));
            assertCompletion(awaitCompletion(l.scq, "the type 2 bind"), WcStatus.SUCCESS, WcOpcode.BIND_MW, 6,
                    l.sqp.qpn(), "the bind of the type 2 window a peer invalidates (" + noRegion.get() + ")");
            targetAddr = target.address();
            targetKey = key;
        }
        fill(client.buf, 0, 64, 3);
        post(l.sqp, new RecvWorkRequest().wrId(7).sge(0, server.mr, 0, 4096));
        post(l.cqp, new SendWorkRequest().wrId(8).opcode(WrOpcode.SEND_WITH_INV).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 64).invalidate(targetKey));
        assertCompletion(awaitCompletion(l.ccq, "the SEND_WITH_INV"), WcStatus.SUCCESS, WcOpcode.SEND, 8,
                l.cqp.qpn(), "the SEND_WITH_INV");
        WorkCompletion recv = awaitCompletion(l.scq, "the receive of a SEND_WITH_INV");
        assertCompletion(recv, WcStatus.SUCCESS, WcOpcode.RECV, 7, l.sqp.qpn(), "the receive of a SEND_WITH_INV");
        assertEquals(64, recv.byteLen(), "byte_len of " + recv);
        assertTrue((recv.flags() & WorkCompletion.WITH_INV) != 0, "IBV_WC_WITH_INV in " + recv);
        assertFalse(recv.hasImm(), "no immediate data in " + recv);
        assertEquals(targetKey, recv.invalidatedRkey(), "invalidated_rkey of " + recv);
        assertPattern(server.buf, 0, 64, 3, "the SEND_WITH_INV's payload");

        // the key is gone: a WRITE with it is refused and writes nothing
        fillSentinel(server.buf, base, 4096);
        post(l.cqp, new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 64).remote(targetAddr, targetKey));
        WorkCompletion w = awaitCompletion(l.ccq, "a WRITE with the invalidated key");
        if (fx.remoteErrorsFailTheRequest()) {
            assertEquals(WcStatus.REM_ACCESS_ERR, w.status(), "a WRITE with an invalidated key: " + w);
        } else {
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the writer's QP to enter ERROR (the peer's TERMINATE)");
        }
        assertSentinel(server.buf, base, 4096, "nothing may be written through an invalidated key");
    }
}

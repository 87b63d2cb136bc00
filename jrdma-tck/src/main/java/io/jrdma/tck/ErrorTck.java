package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Error paths: each completes with the IBA status, moves the requester's QP to ERROR, flushes
 * the requests behind it and writes nothing outside what was allowed; post-time and control
 * errors are errno values and {@link RdmaException}s naming what is wrong.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class ErrorTck extends TckSupport {
    /** A connection parameter with one transport retry: a dead peer is noticed after two QP timeouts. */
    private static final ConnParam ONE_RETRY = ConnParam.defaults().withRetry(1, 7);

    /** For subclasses. */
    protected ErrorTck() {
    }

    private SendWorkRequest write(long wrId, long remoteOff, int rkey, int len) {
        return new SendWorkRequest().wrId(wrId).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, len).remote(server.addr(remoteOff), rkey);
    }

    /** Posts {@code failing} then a good WRITE; checks {@code status} for the first, WR_FLUSH_ERR for the second. */
    /** {@return " (the device's behaviour, declared: reason)" when the fixture declares {@code d}, else ""} */
    private String reason(ProviderFixture.Deviation d) {
        return fx.deviation(d).map(r -> " (the device's behaviour, declared: " + r + ")").orElse("");
    }

    /**
     * Where the device declares {@link ProviderFixture.Deviation#REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST}: waits
     * until the client's QP reports ERROR, so that what the test posts next is posted to a failed QP.
     *
     * @return whether the deviation is declared (and the QP reached ERROR)
     */
    private boolean awaitErrorIfPostsMayBeLost(Link l, String what) {
        if (fx.deviation(ProviderFixture.Deviation.REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST).isEmpty()) {
            return false;
        }
        awaitTrue(() -> l.cqp.state() == QpState.ERROR, what + reason(ProviderFixture.Deviation.REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST));
        return true;
    }

    /** The sender's completion of a SEND into a receive too small: REM_INV_REQ_ERR (IBA), or as the fixture declares. */
    private void assertLengthError(WorkCompletion sent, long wrId, int qpn, String what) {
        java.util.Optional<String> op = fx.deviation(ProviderFixture.Deviation.LENGTH_ERROR_MAY_BE_REM_OP_ERR);
        if (op.isPresent() && sent.status() == WcStatus.REM_OP_ERR) {
            assertCompletion(sent, WcStatus.REM_OP_ERR, null, wrId, qpn, what + reason(
                    ProviderFixture.Deviation.LENGTH_ERROR_MAY_BE_REM_OP_ERR));
            return;
        }
        assertCompletion(sent, WcStatus.REM_INV_REQ_ERR, null, wrId, qpn, what);
    }

    /** The receive too small for its SEND: LOC_LEN_ERR (IBA), or as the fixture declares. */
    private void assertReceiveLengthError(WorkCompletion recv, long wrId, int qpn, String what) {
        java.util.Optional<String> op = fx.deviation(ProviderFixture.Deviation.LENGTH_ERROR_MAY_BE_REM_OP_ERR);
        if (op.isPresent() && recv.status() == WcStatus.LOC_QP_OP_ERR) {
            assertCompletion(recv, WcStatus.LOC_QP_OP_ERR, null, wrId, qpn, what + reason(
                    ProviderFixture.Deviation.LENGTH_ERROR_MAY_BE_REM_OP_ERR));
            return;
        }
        assertCompletion(recv, WcStatus.LOC_LEN_ERR, null, wrId, qpn, what);
    }

    /** {@return whether {@code s} is a status the peer reports (a NAK, a TERMINATE, a lost peer), not a local one} */
    private static boolean remote(WcStatus s) {
        return s == WcStatus.REM_ACCESS_ERR || s == WcStatus.REM_INV_REQ_ERR || s == WcStatus.REM_OP_ERR
                || s == WcStatus.RETRY_EXC_ERR || s == WcStatus.RNR_RETRY_EXC_ERR;
    }

    private void expectFailureThenFlush(Link l, SendWorkRequest failing, WcStatus status, String what) {
        if (!fx.remoteErrorsFailTheRequest() && !failing.opcode().isReadOrAtomic() && status != WcStatus.LOC_PROT_ERR
                && status != WcStatus.LOC_QP_OP_ERR) {
            expectConnectionFailure(l, failing, status, what);
            return;
        }
        java.util.Optional<String> lost = fx.deviation(ProviderFixture.Deviation.REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST);
        if (lost.isPresent()) {
            // the request behind the failing one is posted once the QP reports ERROR, and then must be flushed
            post(l.cqp, failing);
            WorkCompletion wc = awaitCompletion(l.ccq, what);
            java.util.Optional<String> flushes = fx.deviation(ProviderFixture.Deviation.TERMINATE_FLUSHES_THE_REFUSED_REQUEST);
            if (flushes.isPresent() && remote(status) && wc.status() == WcStatus.WR_FLUSH_ERR) {
                assertCompletion(wc, WcStatus.WR_FLUSH_ERR, null, failing.wrId(), l.cqp.qpn(), what + reason(
                        ProviderFixture.Deviation.TERMINATE_FLUSHES_THE_REFUSED_REQUEST));
            } else {
                assertCompletion(wc, status, null, failing.wrId(), l.cqp.qpn(), what);
            }
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the requester QP to be in ERROR after " + what
                    + " (it is " + l.cqp.state() + ")");
            post(l.cqp, write(failing.wrId() + 1, 1 << 20, server.mr.rkey(), 8));
            assertCompletion(awaitCompletion(l.ccq, "a request after " + what), WcStatus.WR_FLUSH_ERR, null,
                    failing.wrId() + 1, l.cqp.qpn(), "the request posted after " + what + " (once the QP is in ERROR)"
                    + " is flushed" + reason(ProviderFixture.Deviation.REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST));
            return;
        }
        post(l.cqp, failing);
        post(l.cqp, write(failing.wrId() + 1, 1 << 20, server.mr.rkey(), 8));
        List<WorkCompletion> wcs = awaitCompletions(l.ccq, 2, what);
        assertCompletion(wcs.get(0), status, null, failing.wrId(), l.cqp.qpn(), what);
        assertCompletion(wcs.get(1), WcStatus.WR_FLUSH_ERR, null, failing.wrId() + 1, l.cqp.qpn(),
                "the request after " + what + " is flushed");
        awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the requester QP to be in ERROR after " + what
                + " (it is " + l.cqp.state() + ")");
    }

    /**
     * iWARP ({@link ProviderFixture#remoteErrorsFailTheRequest()} false): the SEND/WRITE completes
     * once handed to the transport (or with {@code status}); the peer's TERMINATE or the lost
     * connection then moves the requester's QP to ERROR, and a request posted afterwards is flushed.
     */
    private void expectConnectionFailure(Link l, SendWorkRequest failing, WcStatus status, String what) {
        post(l.cqp, failing);
        WorkCompletion wc = awaitCompletion(l.ccq, what);
        assertEquals(failing.wrId(), wc.wrId(), what + ": " + wc);
        assertTrue(wc.status() == WcStatus.SUCCESS || wc.status() == status || wc.status() == WcStatus.WR_FLUSH_ERR,
                what + ": completes once handed to the transport, or with " + status + ", not " + wc);
        awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the requester QP to enter ERROR after " + what
                + " (it is " + l.cqp.state() + ")");
        post(l.cqp, write(failing.wrId() + 1, 1 << 20, server.mr.rkey(), 8));
        assertCompletion(awaitCompletion(l.ccq, "a request after " + what), WcStatus.WR_FLUSH_ERR, null,
                failing.wrId() + 1, l.cqp.qpn(), "the request after " + what + " is flushed");
    }

    @Test
    void badRkeyIsRemoteAccessErrorAndFlushesTheRest() {
        Link l = connect();
        fillSentinel(server.buf, 0, 4096);
        fill(client.buf, 0, 100, 1);
        expectFailureThenFlush(l, write(1, 0, server.mr.rkey() ^ 0x5A5A_0000, 100), WcStatus.REM_ACCESS_ERR,
                "a WRITE with a bad rkey");
        assertSentinel(server.buf, 0, 4096, "nothing may be written with a bad rkey");
        // a request posted to a QP in ERROR completes with WR_FLUSH_ERR
        post(l.cqp, write(3, 0, server.mr.rkey(), 8));
        assertCompletion(awaitCompletion(l.ccq, "a WRITE posted in ERROR"), WcStatus.WR_FLUSH_ERR, null, 3,
                l.cqp.qpn(), "a WRITE posted in ERROR");
        assertSentinel(server.buf, 0, 4096, "nothing may be written by a flushed request");
    }

    /**
     * Where a provider makes lkeys differ from rkeys (IBA allows it; soft-RoCE and soft-iWARP do, shm keeps rxe's
     * lkey = rkey), a region's lkey is no rkey: a WRITE that names it is a remote access error, writes nothing,
     * and the lkey still works locally.
     */
    @Test
    void anLkeyIsNotAnRkey() {
        Assumptions.assumeTrue(server.mr.lkey() != server.mr.rkey(),
                "this provider's regions have lkey = rkey (as rxe): nothing to check");
        Link l = connect();
        fillSentinel(server.buf, 0, 4096);
        fill(client.buf, 0, 100, 1);
        expectFailureThenFlush(l, write(1, 0, server.mr.lkey(), 100), WcStatus.REM_ACCESS_ERR,
                "a WRITE naming the target region's lkey as rkey");
        assertSentinel(server.buf, 0, 4096, "nothing may be written through an lkey");
        Link again = connect();
        post(again.cqp, write(6, 0, server.mr.rkey(), 100));
        assertCompletion(awaitCompletion(again.ccq, "a WRITE with the rkey"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 6,
                again.cqp.qpn(), "a WRITE with the rkey (whose gather used the client's lkey)");
        // on iWARP a WRITE completes once handed to TCP: its bytes land a moment later
        awaitTrue(() -> holdsPattern(server.buf, 0, 100, 1, 0), "the WRITE with the rkey to land");
    }

    @Test
    void outOfBoundsAccessIsRemoteAccessError() {
        long base = 1 << 20;
        MemoryRegion small = server.register(base, 64, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        fillSentinel(server.buf, base - 4096, 8192);
        fill(client.buf, 0, 100, 2);

        Link past = connect();
        expectFailureThenFlush(past, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED).sge(0, client.mr, 0, 57).remote(small.address() + 8, small.rkey()),
                WcStatus.REM_ACCESS_ERR, "a WRITE one byte past the end of the region");
        Link before = connect();
        expectFailureThenFlush(before, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED).sge(0, client.mr, 0, 8).remote(small.address() - 1, small.rkey()),
                WcStatus.REM_ACCESS_ERR, "a WRITE one byte before the start of the region");
        assertSentinel(server.buf, base - 4096, 8192, "out-of-bounds WRITEs touch no memory");

        Link read = connect();
        fillSentinel(client.buf, 1 << 20, 4096);
        expectFailureThenFlush(read, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ)
                .flags(SendFlags.SIGNALED).sge(0, client.mr, 1 << 20, 65).remote(small.address(), small.rkey()),
                WcStatus.REM_ACCESS_ERR, "a READ one byte longer than the region");
        assertSentinel(client.buf, 1 << 20, 4096, "a refused READ writes nothing locally");
    }

    @Test
    void missingAccessFlagIsRemoteAccessError() {
        long base = 1 << 20;
        fillSentinel(server.buf, base, 3 * 4096);
        MemoryRegion readOnly = server.register(base, 4096, Access.REMOTE_READ);
        MemoryRegion noRead = server.register(base + 4096, 4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion noAtomic = server.register(base + 8192, 4096,
                Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);

        Link a = connect();
        expectFailureThenFlush(a, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 16).remote(readOnly.address(), readOnly.rkey()), WcStatus.REM_ACCESS_ERR,
                "a WRITE to a region without REMOTE_WRITE");
        Link b = connect();
        java.util.Optional<String> readable = fx.deviation(ProviderFixture.Deviation.REMOTE_READ_NOT_ENFORCED);
        if (readable.isPresent()) {
            // declared: the device serves the READ; it must still complete, and read what the region holds
            client.buf.asSlice(0, 16).fill((byte) 0); // the region holds the sentinel: a served READ brings it
            post(b.cqp, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .sge(0, client.mr, 0, 16).remote(noRead.address(), noRead.rkey()));
            WorkCompletion wc = awaitCompletion(b.ccq, "a READ from a region without REMOTE_READ");
            assertEquals(1, wc.wrId(), wc.toString());
            if (wc.status() == WcStatus.SUCCESS) {
                assertTrue(server.buf.asSlice(base + 4096, 16).mismatch(client.buf.asSlice(0, 16)) < 0,
                        "the READ the device served (declared: " + readable.get() + ") read the region's bytes");
            } else {
                assertTrue(wc.status() == WcStatus.REM_ACCESS_ERR || wc.status() == WcStatus.WR_FLUSH_ERR, wc.toString());
            }
        } else {
            expectFailureThenFlush(b, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ)
                    .flags(SendFlags.SIGNALED).sge(0, client.mr, 0, 16).remote(noRead.address(), noRead.rkey()),
                    WcStatus.REM_ACCESS_ERR, "a READ from a region without REMOTE_READ");
        }
        if (client.ctx.queryDevice().atomicCap() != io.jrdma.verbs.DeviceAttr.AtomicCap.NONE) { // a device without atomics refuses them at post
            Link c = connect();
            expectFailureThenFlush(c, new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .flags(SendFlags.SIGNALED).sge(0, client.mr, 0, 8).remote(noAtomic.address(), noAtomic.rkey())
                    .atomic(1, 0), WcStatus.REM_ACCESS_ERR, "an atomic on a region without REMOTE_ATOMIC");
        }
        assertSentinel(server.buf, base, 3 * 4096, "refused requests change nothing");
    }

    @Test
    void badLkeyIsLocalProtectionError() {
        Link l = connect();
        fillSentinel(server.buf, 0, 4096);
        int bad = client.mr.lkey() + 1;
        // IBA: Local Protection Error; a device that reports it as LOC_QP_OP_ERR declares so, with the reason
        WcStatus prot = fx.deviation(ProviderFixture.Deviation.BAD_LKEY_IS_LOC_QP_OP_ERR).isPresent()
                ? WcStatus.LOC_QP_OP_ERR : WcStatus.LOC_PROT_ERR;
        expectFailureThenFlush(l, new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, client.addr(0), 100, bad).remote(server.addr(0), server.mr.rkey()), prot,
                "a WRITE whose SGE has a bad lkey" + reason(ProviderFixture.Deviation.BAD_LKEY_IS_LOC_QP_OP_ERR));
        assertSentinel(server.buf, 0, 4096, "nothing is sent from a bad lkey");

        Link r = connect();
        fillSentinel(client.buf, 1 << 20, 4096);
        expectFailureThenFlush(r, new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, client.addr(1 << 20), 100, bad).remote(server.addr(0), server.mr.rkey()),
                WcStatus.LOC_PROT_ERR, "a READ into an SGE with a bad lkey");
        assertSentinel(client.buf, 1 << 20, 4096, "nothing is read into a bad lkey");
    }

    @Test
    void badLkeyInAReceiveFailsTheReceiveAndTheSend() {
        Link l = connect();
        post(l.sqp, new RecvWorkRequest().wrId(4).sge(0, server.addr(0), 4096, server.mr.lkey() + 1));
        post(l.cqp, new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 100));
        WorkCompletion sent = awaitCompletion(l.ccq, "a SEND into a receive with a bad lkey");
        if (fx.remoteErrorsFailTheRequest()) {
            assertCompletion(sent, WcStatus.REM_OP_ERR, null, 5, l.cqp.qpn(), "the SEND (IBA: Remote Operational Error)");
        } else {
            assertTrue(sent.status() == WcStatus.SUCCESS || sent.status() == WcStatus.REM_OP_ERR, sent.toString());
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the sender's QP to enter ERROR (the peer's TERMINATE)");
        }
        WorkCompletion recv = awaitCompletion(l.scq, "the receive with a bad lkey");
        assertEquals(4, recv.wrId(), recv.toString());
        java.util.Optional<String> general = fx.deviation(ProviderFixture.Deviation.RECEIVE_PROTECTION_ERROR_IS_GENERAL_ERR);
        if (general.isPresent() && recv.status() == WcStatus.GENERAL_ERR) {
            awaitTrue(() -> l.sqp.state() == QpState.ERROR, "the receiver's QP to enter ERROR after its GENERAL_ERR"
                    + reason(ProviderFixture.Deviation.RECEIVE_PROTECTION_ERROR_IS_GENERAL_ERR));
            return;
        }
        assertTrue(recv.status() == WcStatus.LOC_PROT_ERR || recv.status() == WcStatus.LOC_QP_OP_ERR,
                "the receive with a bad lkey completes with LOC_PROT_ERR (or LOC_QP_OP_ERR), not " + recv);
    }

    @Test
    void invalidatingAKeyRegisteredWithoutRemoteInvalidateIsRefused() {
        Link l = connect();
        post(l.sqp, new RecvWorkRequest().wrId(4).sge(0, server.mr, 0, 4096));
        post(l.cqp, new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND_WITH_INV).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 100).invalidate(server.mr.rkey()));
        WorkCompletion sent = awaitCompletion(l.ccq, "a SEND_WITH_INV of a key that may not be invalidated");
        java.util.Optional<String> onlyRecv = fx.deviation(ProviderFixture.Deviation.REFUSED_INVALIDATION_FAILS_ONLY_THE_RECEIVE);
        if (onlyRecv.isPresent()) {
            // the device acknowledges the SEND and fails the receive: the sender may see SUCCESS
            assertTrue(sent.status() == WcStatus.SUCCESS || sent.status() == WcStatus.REM_ACCESS_ERR,
                    "the SEND_WITH_INV completes SUCCESS or REM_ACCESS_ERR (" + onlyRecv.get() + "): " + sent);
            WorkCompletion recv = awaitCompletion(l.scq, "the receive of the refused SEND_WITH_INV");
            assertEquals(4, recv.wrId(), recv.toString());
            assertTrue(recv.status() == WcStatus.REM_INV_REQ_ERR || recv.status() == WcStatus.LOC_PROT_ERR,
                    "the receive fails (" + onlyRecv.get() + "): " + recv);
            awaitTrue(() -> l.sqp.state() == QpState.ERROR, "the receiver's QP to enter ERROR after the refused"
                    + " invalidation (" + onlyRecv.get() + ")");
        } else if (fx.remoteErrorsFailTheRequest()) {
            assertCompletion(sent, WcStatus.REM_ACCESS_ERR, null, 5, l.cqp.qpn(), "the SEND_WITH_INV");
        } else {
            assertTrue(sent.status() == WcStatus.SUCCESS || sent.status() == WcStatus.REM_ACCESS_ERR, sent.toString());
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the sender's QP to enter ERROR (the peer's TERMINATE)");
        }
        if (onlyRecv.isEmpty()) {
            WorkCompletion recv = awaitCompletion(l.scq, "the receive of the refused SEND_WITH_INV");
            assertEquals(4, recv.wrId(), recv.toString());
            assertTrue(recv.status() == WcStatus.LOC_PROT_ERR || recv.status() == WcStatus.WR_FLUSH_ERR,
                    "the receive fails (LOC_PROT_ERR, or flushed with the QP): " + recv);
        }
        // the region was not invalidated: a new connection still writes into it
        Link again = connect();
        fill(client.buf, 0, 8, 6);
        post(again.cqp, write(6, 0, server.mr.rkey(), 8));
        assertCompletion(awaitCompletion(again.ccq, "a WRITE after the refused invalidation"), WcStatus.SUCCESS,
                WcOpcode.RDMA_WRITE, 6, again.cqp.qpn(), "a WRITE into the region that was not invalidated");
    }

    @Test
    void receiveTooSmallIsLengthError() {
        Link l = connect();
        fillSentinel(server.buf, 0, 4096);
        post(l.sqp, new RecvWorkRequest().wrId(4).sge(0, server.mr, 0, 100));
        post(l.cqp, new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 2000));
        WorkCompletion sent = awaitCompletion(l.ccq, "a SEND larger than the receive");
        if (fx.remoteErrorsFailTheRequest()) {
            assertLengthError(sent, 5, l.cqp.qpn(), "the SEND larger than the receive");
        } else {
            assertTrue(sent.status() == WcStatus.SUCCESS || sent.status() == WcStatus.REM_INV_REQ_ERR, sent.toString());
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the sender's QP to enter ERROR (the peer's TERMINATE)");
        }
        assertReceiveLengthError(awaitCompletion(l.scq, "the receive too small"), 4, l.sqp.qpn(), "the receive too small");
        assertSentinel(server.buf, 100, 4096 - 100, "nothing past the receive buffer");
    }

    /**
     * A SEND that fits one packet (below every provider's MTU) but not the receive posted for it:
     * the receive completes with LOC_LEN_ERR, as rxe's responder reports it (not WR_FLUSH_ERR from
     * the QP's error flush), and the requester learns it as REM_INV_REQ_ERR (rxe: the NAK's
     * Invalid Request syndrome), or, on iWARP, by the peer's TERMINATE.
     */
    @Test
    void onePacketSendLargerThanTheReceiveIsLengthError() {
        Link l = connect();
        fillSentinel(server.buf, 0, 4096);
        fill(client.buf, 0, 200, 9);
        post(l.sqp, new RecvWorkRequest().wrId(14).sge(0, server.mr, 0, 64));
        post(l.cqp, new SendWorkRequest().wrId(15).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 200));
        WorkCompletion sent = awaitCompletion(l.ccq, "a one-packet SEND larger than the receive");
        if (fx.remoteErrorsFailTheRequest()) {
            assertLengthError(sent, 15, l.cqp.qpn(), "the one-packet SEND larger than the receive");
        } else {
            assertTrue(sent.status() == WcStatus.SUCCESS || sent.status() == WcStatus.REM_INV_REQ_ERR, sent.toString());
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the sender's QP to enter ERROR (the peer's TERMINATE)");
        }
        assertReceiveLengthError(awaitCompletion(l.scq, "the receive smaller than a one-packet SEND"), 14,
                l.sqp.qpn(), "the receive smaller than a one-packet SEND");
        assertSentinel(server.buf, 64, 4096 - 64, "nothing past the receive buffer");
        awaitTrue(() -> l.sqp.state() == QpState.ERROR, "the receiver's QP to enter ERROR after the length error"
                + " (it is " + l.sqp.state() + ")");
    }

    @Test
    void noReceiveWithRnrRetryZeroIsRnrRetryExceeded() {
        Link l = link().clientParam(ConnParam.defaults().withRetry(7, 0)).connect();
        assertEquals(0, l.cqp.query().rnrRetry(), "RNR retry from ConnParam.withRetry(7, 0)");
        SendWorkRequest send = new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 10);
        expectFailureThenFlush(l, send, WcStatus.RNR_RETRY_EXC_ERR, "a SEND with no receive posted and rnr_retry 0");
    }

    @Test
    void noReceiveWithRnrRetriesSucceedsOnceOneIsPosted() {
        Assumptions.assumeTrue(fx.hasRnrRetry(), "the transport has no RNR retry (iWARP: a SEND without a receive "
                + "terminates the connection, see noReceiveWithRnrRetryZeroIsRnrRetryExceeded)");
        Link l = connect();
        fill(client.buf, 0, 3000, 6);
        post(l.cqp, new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 3000));
        assertNoCompletion(l.ccq, Duration.ofMillis(30), "RNR retry 7 waits for a receive");
        post(l.sqp, new RecvWorkRequest().wrId(8).sge(0, server.mr, 0, 4096));
        assertCompletion(awaitCompletion(l.ccq, "the SEND after RNR"), WcStatus.SUCCESS, WcOpcode.SEND, 4,
                l.cqp.qpn(), "the SEND after RNR");
        WorkCompletion rc = awaitCompletion(l.scq, "the late receive");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 8, l.sqp.qpn(), "the late receive");
        assertEquals(3000, rc.byteLen());
        assertPattern(server.buf, 0, 3000, 6, "data after RNR");
    }

    @Test
    void destroyedPeerQpIsRetryExceeded() {
        Link l = link().clientParam(ONE_RETRY).connect();
        closeNow(l.sqp);
        // the destroyed QP's connection closes: the requester's QP fails with it before anything is posted
        awaitErrorIfPostsMayBeLost(l, "the requester QP to enter ERROR when the peer's QP is destroyed");
        expectFailureThenFlush(l, write(1, 0, server.mr.rkey(), 100), WcStatus.RETRY_EXC_ERR,
                "a WRITE to a destroyed QP with retry_cnt 1");
    }

    @Test
    void closedPeerContextIsRetryExceeded() {
        Link l = link().clientParam(ONE_RETRY).connect();
        long addr = server.addr(0);
        int rkey = server.mr.rkey();
        closeSide(server);
        awaitErrorIfPostsMayBeLost(l, "the QP to enter ERROR when the peer context closed");
        post(l.cqp, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 100).remote(addr, rkey));
        post(l.cqp, new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 100).remote(addr, rkey));
        List<WorkCompletion> wcs = awaitCompletions(l.ccq, 2, "requests to a closed context");
        if (!fx.remoteErrorsFailTheRequest()) { // the WRITE may have gone to TCP before the close was seen
            assertTrue(wcs.get(0).status() != WcStatus.SUCCESS || wcs.get(1).status() != WcStatus.SUCCESS,
                    "a READ from a closed context cannot succeed: " + wcs);
            awaitTrue(() -> l.cqp.state() == QpState.ERROR, "the QP to enter ERROR when the peer context closed");
            return;
        }
        assertCompletion(wcs.get(0), WcStatus.RETRY_EXC_ERR, null, 1, l.cqp.qpn(), "a WRITE to a closed context");
        assertCompletion(wcs.get(1), WcStatus.WR_FLUSH_ERR, null, 2, l.cqp.qpn(), "the READ behind it");
    }

    /** ConnectionManager.Connection: "Closing it disconnects (the peer's QP then fails its next requests)". */
    @Test
    void closingTheConnectionFailsThePeersNextRequests() {
        Link l = link().clientParam(ONE_RETRY).serverParam(ONE_RETRY).connect();
        closeNow(l.sconn);
        // a WRITE posted while the disconnect reaches the QP may be lost: the next one is posted once it failed
        if (awaitErrorIfPostsMayBeLost(l, "the client's QP to enter ERROR after the server closed the connection")) {
            post(l.cqp, write(1, 0, server.mr.rkey(), 8));
            assertCompletion(awaitCompletion(l.ccq, "a WRITE after the peer closed the connection"),
                    WcStatus.WR_FLUSH_ERR, null, 1, l.cqp.qpn(), "a WRITE after the peer closed the connection");
            return;
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        int successes = 0;
        for (long id = 1; ; id++) {
            post(l.cqp, write(id, 0, server.mr.rkey(), 8));
            WorkCompletion wc = awaitCompletion(l.ccq, "a WRITE after the peer closed the connection");
            if (wc.status() != WcStatus.SUCCESS) {
                assertTrue(wc.status() == WcStatus.RETRY_EXC_ERR || wc.status() == WcStatus.WR_FLUSH_ERR,
                        "after a disconnect requests fail with RETRY_EXC_ERR or WR_FLUSH_ERR, not " + wc);
                return;
            }
            successes++;
            if (System.nanoTime() - deadline > 0) {
                fail("the server closed its Connection, yet " + successes + " WRITEs over 3 s from the client "
                        + "still succeeded: closing a connection must disconnect (the peer's QP then fails its "
                        + "next requests); server QP is " + l.sqp.state() + ", client QP " + l.cqp.state());
            }
        }
    }

    @Test
    void fullSendQueueIsEnomem() {
        Link l = link().clientQp(a -> a.withDepth(8, 8)).clientParam(ONE_RETRY).connect();
        // the responder drops everything in ERROR, so nothing leaves the send queue until the retries run out
        l.sqp.modify(new QpAttr().state(QpState.ERROR));
        SendWorkRequest wr = write(1, 0, server.mr.rkey(), 8);
        int posted = 0;
        int rc;
        while ((rc = l.cqp.postSend(wr)) == 0) {
            posted++;
            if (posted > 1024) {
                fail("a send queue of depth 8 took more than 1024 requests without ENOMEM");
            }
        }
        assertEquals(Errno.ENOMEM.value(), rc, "postSend on a full send queue returns ENOMEM, not "
                + Errno.of(rc));
        assertTrue(posted >= 8, "a send queue of depth 8 must take 8 requests, took " + posted);
    }

    @Test
    void postingInResetOrInitIsEinval() {
        CompletionQueue cq = client.newCq(16);
        QueuePair qp = client.newQp(QpInitAttr.rc(cq));
        assertEquals(QpState.RESET, qp.state());
        SendWorkRequest wr = new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, client.mr, 0, 8);
        RecvWorkRequest rwr = new RecvWorkRequest().wrId(2).sge(0, client.mr, 0, 8);
        assertEquals(Errno.EINVAL.value(), qp.postSend(wr), "postSend in RESET");
        assertEquals(Errno.EINVAL.value(), qp.postRecv(rwr), "postRecv in RESET");
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(Access.LOCAL_WRITE));
        assertEquals(Errno.EINVAL.value(), qp.postSend(wr), "postSend in INIT");
        assertEquals(0, qp.postRecv(rwr), "postRecv in INIT is allowed");
        assertNoCompletion(cq, Duration.ZERO, "refused posts complete nothing");
    }

    @Test
    void malformedRequestsAreEinvalAtPost() {
        Link l = connect();
        SendWorkRequest tooMany = new SendWorkRequest(8).wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED);
        for (int i = 0; i < 5; i++) {
            tooMany.sge(i, client.mr, i * 16L, 16);
        }
        assertEquals(Errno.EINVAL.value(), l.cqp.postSend(tooMany), "5 SGEs on a QP with max_send_sge 4");
        RecvWorkRequest tooManyRecv = new RecvWorkRequest(8).wrId(1);
        for (int i = 0; i < 5; i++) {
            tooManyRecv.sge(i, server.mr, i * 16L, 16);
        }
        assertEquals(Errno.EINVAL.value(), l.sqp.postRecv(tooManyRecv), "5 SGEs on a QP with max_recv_sge 4");
        int max = QpInitAttr.rc(l.ccq).maxInlineData();
        assertEquals(Errno.EINVAL.value(), l.cqp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND)
                .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, client.mr, 0, max + 1)),
                "INLINE data longer than max_inline_data");
        assertEquals(QpState.RTS, l.cqp.state(), "refused posts leave the QP as it was");
        assertNoCompletion(l.ccq, Duration.ofMillis(10), "refused posts complete nothing");
        post(l.cqp, write(3, 0, server.mr.rkey(), 8));
        assertCompletion(awaitCompletion(l.ccq, "a good WRITE afterwards"), WcStatus.SUCCESS, WcOpcode.RDMA_WRITE, 3,
                l.cqp.qpn(), "a good WRITE after refused posts");
    }

    private static void assertInvalid(QueuePair qp, Executable modify, String transition, String... names) {
        QpState before = qp.state();
        RdmaException e = assertThrows(RdmaException.class, modify, transition + " must be refused");
        assertEquals(Errno.EINVAL, e.errno(), transition + ": " + e);
        String m = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT).replace("_", "");
        for (String n : names) {
            boolean found = false;
            for (String alt : n.split("\\|")) {
                found |= m.contains(alt.toLowerCase(Locale.ROOT).replace("_", ""));
            }
            assertTrue(found, transition + ": the message should name the missing attribute " + n + ": \""
                    + e.getMessage() + '"');
        }
        assertEquals(before, qp.state(), transition + ": a refused modify leaves the state as it was");
    }

    @Test
    void invalidStateTransitionsAreEinvalNamingWhatIsMissing() {
        CompletionQueue cq = client.newCq(16);
        QueuePair qp = client.newQp(QpInitAttr.rc(cq));
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.RTS)), "RESET -> RTS");
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.RTR)), "RESET -> RTR");
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.INIT)), "RESET -> INIT without attributes",
                "PKEY_INDEX", "PORT", "ACCESS_FLAGS");
        RdmaException partial = assertThrows(RdmaException.class,
                () -> qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)));
        assertEquals(Errno.EINVAL, partial.errno());
        String pm = partial.getMessage().toLowerCase(Locale.ROOT).replace("_", "");
        assertTrue(pm.contains("accessflags"), "names ACCESS_FLAGS: " + partial.getMessage());
        assertFalse(pm.contains("pkeyindex"), "does not name PKEY_INDEX, which was given: " + partial.getMessage());

        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(Access.REMOTE_WRITE));
        assertEquals(QpState.INIT, qp.state());
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.RTS)), "INIT -> RTS");
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.RTR)), "INIT -> RTR without attributes",
                "AV", "PATH_MTU", "DEST_QPN", "RQ_PSN", "MAX_DEST_RD_ATOMIC", "MIN_RNR_TIMER");

        int sgid = client.ctx.gidIndexOf(fx.gid(client.ctx));
        assertTrue(sgid >= 0, "the client context has a GID for " + fx.address());
        int port = server.ctx.queryPort().udpPort(); // 0 where the transport has no UDP port (iWARP)
        AddressVector av = AddressVector.of(fx.gid(server.ctx), sgid);
        qp.modify(new QpAttr().state(QpState.RTR).av(port > 0 ? av.withUdpPort(port) : av).pathMtu(Mtu.MTU_1024)
                .destQpn(0x123)
                .rqPsn(0).maxDestRdAtomic(1).minRnrTimer(12));
        assertEquals(QpState.RTR, qp.state());
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.RTS)), "RTR -> RTS without attributes",
                "SQ_PSN", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "MAX_QP_RD_ATOMIC|MAXRDATOMIC");
        assertInvalid(qp, () -> qp.modify(new QpAttr().state(QpState.INIT)), "RTR -> INIT");

        Link l = connect();
        assertInvalid(l.cqp, () -> l.cqp.modify(new QpAttr().state(QpState.INIT)), "RTS -> INIT");
        assertInvalid(l.cqp, () -> l.cqp.modify(new QpAttr().state(QpState.RTR)), "RTS -> RTR");
        if (fx.deviation(ProviderFixture.Deviation.NO_RESET_OF_A_CONNECTED_QP).isPresent()) {
            assertInvalid(l.cqp, () -> l.cqp.modify(new QpAttr().state(QpState.RESET)), "RTS -> RESET"
                    + reason(ProviderFixture.Deviation.NO_RESET_OF_A_CONNECTED_QP), "RESET");
            l.cqp.modify(new QpAttr().state(QpState.ERROR));
            assertEquals(QpState.ERROR, l.cqp.state(), "RTS -> ERROR, where RESET is refused");
            return;
        }
        l.cqp.modify(new QpAttr().state(QpState.RESET));
        assertEquals(QpState.RESET, l.cqp.state(), "any state -> RESET");
    }

    @Test
    void closingWhatIsStillInUseIsEbusy() {
        ProtectionDomain pd = track(client, "PD", client.ctx.allocPd());
        MemoryRegion mr = track(client, "MR", pd.register(client.buf.asSlice(0, 4096), Access.LOCAL_WRITE));
        RdmaException e = assertThrows(RdmaException.class, pd::close, "closing a PD with a live MR");
        assertEquals(Errno.EBUSY, e.errno(), e.toString());
        RdmaException busyCtx = assertThrows(RdmaException.class, client.ctx::close,
                "closing a context with live PDs");
        assertEquals(Errno.EBUSY, busyCtx.errno(), busyCtx.toString());
        closeNow(mr);

        CompletionQueue cq = client.newCq(4);
        QueuePair qp = track(client, "QP", pd.createQp(QpInitAttr.rc(cq)));
        e = assertThrows(RdmaException.class, pd::close, "closing a PD with a live QP");
        assertEquals(Errno.EBUSY, e.errno(), e.toString());
        e = assertThrows(RdmaException.class, cq::close, "closing a CQ a QP uses");
        assertEquals(Errno.EBUSY, e.errno(), e.toString());
        closeNow(qp);
        closeNow(cq);
        closeNow(pd);
        // the context survived the refused close
        closeNow(track(client, "PD", client.ctx.allocPd()));
    }

    /** As for the PD, MR, CQ, channel and context: a second close does nothing (and releases nothing twice). */
    @Test
    void closingTwiceIsHarmless() {
        ProtectionDomain pd = track(client, "PD", client.ctx.allocPd());
        MemoryRegion mr = track(client, "MR", pd.register(client.buf.asSlice(0, 4096), Access.LOCAL_WRITE));
        CompletionQueue cq = client.newCq(8);
        QueuePair first = track(client, "QP", pd.createQp(QpInitAttr.rc(cq)));
        QueuePair second = track(client, "QP", pd.createQp(QpInitAttr.rc(cq)));
        closeNow(first);
        try {
            first.close();
        } catch (RuntimeException e) {
            fail("closing a QP a second time threw " + e, e);
        }
        RdmaException e = assertThrows(RdmaException.class, cq::close,
                "after one QP was closed twice the CQ is still used by the other QP");
        assertEquals(Errno.EBUSY, e.errno(), e.toString());
        e = assertThrows(RdmaException.class, pd::close,
                "after one QP was closed twice the PD still has the other QP and an MR");
        assertEquals(Errno.EBUSY, e.errno(), e.toString());
        closeNow(second);
        closeNow(mr);
        mr.close();
        closeNow(cq);
        cq.close();
        closeNow(pd);
        pd.close();
    }

    @Test
    void registeringHeapMemoryIsEinvalWithAMessage() {
        MemorySegment heap = MemorySegment.ofArray(new byte[4096]);
        RdmaException e = assertThrows(RdmaException.class, () -> client.pd.register(heap, Access.LOCAL_WRITE),
                "registering a heap segment");
        assertEquals(Errno.EINVAL, e.errno(), e.toString());
        String m = e.getMessage();
        assertTrue(m != null && m.replace("EINVAL", "").replace(":", "").strip().length() >= 10,
                "the exception says why: \"" + m + '"');
    }
}

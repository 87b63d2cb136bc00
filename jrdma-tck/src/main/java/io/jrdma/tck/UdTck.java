package io.jrdma.tck;

import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Grh;
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
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Unreliable datagrams ({@code ibv_ud_pingpong}'s verbs): address handles made from a GID and from a received
 * completion ({@code initAhFromWc}), the 40-byte GRH in front of each receive and what it holds, the source QP
 * in the completion, the address handle's hop limit and traffic class arriving in the GRH, Q_Key checks (a datagram with another Q_Key is dropped: no completion), and messages up
 * to the path MTU (a longer one is refused); BIND_MW, REG_MR and LOCAL_INV refused at post. Aborted with the reason on a provider without UD.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class UdTck extends VerbsTckSupport {
    /** Where receive buffers are in the buffers (the GRH first, then the payload). */
    private static final long RX = 1 << 20;
    private static final long TX = 0;

    private CompletionQueue ccq;
    private CompletionQueue scq;
    private QueuePair cqp;
    private QueuePair sqp;

    /** For subclasses. */
    protected UdTck() {
    }

    /** Aborts unless the provider has UD, then makes a UD QP on each side, in RTS with {@link #QKEY}. */
    @BeforeEach
    final void udPair() {
        requireQpType(QpType.UD);
        ccq = client.newCq(256);
        scq = server.newCq(256);
        cqp = client.newQp(QpInitAttr.ud(ccq));
        sqp = server.newQp(QpInitAttr.ud(scq));
        assertEquals(QpType.UD, cqp.type());
        readyUd(cqp, QKEY);
        readyUd(sqp, QKEY);
    }

    private int mtu() {
        return pathMtu().bytes();
    }

    private static void postRecv(QueuePair qp, Side side, long wrId, long off, int len) {
        post(qp, new RecvWorkRequest().wrId(wrId).sge(0, side.mr, off, len));
    }

    private static SendWorkRequest udSend(Side side, AddressHandle ah, QueuePair to, int qkey, int len, long wrId) {
        SendWorkRequest wr = new SendWorkRequest().wrId(wrId).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .ud(ah, to.qpn(), qkey);
        return len == 0 ? wr.numSge(0) : wr.sge(0, side.mr, TX, len);
    }

    @Test
    void pingPongWithAnAddressHandleFromTheCompletion() {
        int len = Math.min(mtu(), 1024);
        AddressHandle toServer = newAh(client, server);
        assertEquals(ahAttr(client, server), toServer.attr());

        // ping: client → server, with immediate data
        postRecv(sqp, server, 1, RX, Grh.LENGTH + len);
        fill(client.buf, TX, len, 11);
        post(cqp, udSend(client, toServer, sqp, QKEY, len, 2).opcode(WrOpcode.SEND_WITH_IMM).imm(0x0DDBA11));
        assertCompletion(awaitCompletion(ccq, "ping sent"), WcStatus.SUCCESS, WcOpcode.SEND, 2, cqp.qpn(), "ping");
        WorkCompletion rc = awaitCompletion(scq, "ping received");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 1, sqp.qpn(), "ping receive");
        assertEquals(Grh.LENGTH + len, rc.byteLen(), "byte_len counts the 40 GRH bytes: " + rc);
        assertTrue(rc.hasGrh(), "a UD receive over RoCE has a GRH: " + rc);
        assertEquals(cqp.qpn(), rc.srcQp(), "src_qp of " + rc);
        assertTrue(rc.hasImm(), "immediate data flag: " + rc);
        assertEquals(0x0DDBA11, rc.imm());
        assertPattern(server.buf, RX + Grh.LENGTH, len, 11, "ping payload behind the GRH");

        // pong: server → client, addressed from what the ping brought (ibv_create_ah_from_wc)
        AhAttr back = server.ctx.initAhFromWc(1, rc, server.buf.asSlice(RX, Grh.LENGTH));
        assertEquals(fx.gid(client.ctx), back.dgid(), "initAhFromWc answers the GRH's source GID");
        assertEquals(gidIndex(server), back.sgidIndex(), "initAhFromWc sends from the GID the ping was sent to");
        AddressHandle toClient = track(server, "AH", server.pd.createAh(back.withUdpPort(udpPort(client))));
        postRecv(cqp, client, 3, RX, Grh.LENGTH + len);
        fill(server.buf, TX, len, 12);
        post(sqp, udSend(server, toClient, cqp, QKEY, len, 4));
        assertCompletion(awaitCompletion(scq, "pong sent"), WcStatus.SUCCESS, WcOpcode.SEND, 4, sqp.qpn(), "pong");
        WorkCompletion cc = awaitCompletion(ccq, "pong received");
        assertCompletion(cc, WcStatus.SUCCESS, WcOpcode.RECV, 3, cqp.qpn(), "pong receive");
        assertEquals(Grh.LENGTH + len, cc.byteLen(), "byte_len of " + cc);
        assertEquals(sqp.qpn(), cc.srcQp(), "src_qp of " + cc);
        assertPattern(client.buf, RX + Grh.LENGTH, len, 12, "pong payload behind the GRH");
    }

    @Test
    void theGrhHoldsBothGidsAndTheZeroLengthMessageStillHasOne() {
        AddressHandle toServer = newAh(client, server);
        fillSentinel(server.buf, RX, Grh.LENGTH + 64);
        postRecv(sqp, server, 1, RX, Grh.LENGTH + 64);
        post(cqp, udSend(client, toServer, sqp, QKEY, 0, 2));
        awaitCompletion(ccq, "send");
        WorkCompletion rc = awaitCompletion(scq, "receive of 0 bytes");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 1, sqp.qpn(), "receive");
        assertEquals(Grh.LENGTH, rc.byteLen(), "a zero-length datagram still fills the GRH: " + rc);
        assertTrue(rc.hasGrh());
        Grh grh = Grh.parse(server.buf.asSlice(RX, Grh.LENGTH));
        Gid gid = fx.gid(server.ctx);
        assertEquals(fx.gid(client.ctx), grh.sgid(), "the GRH's source GID is the sender's: " + grh);
        assertEquals(gid, grh.dgid(), "the GRH's destination GID is the receiver's: " + grh);
        assertEquals(gid.isIpv4Mapped(), grh.ipv4(), "an IPv4 GID travels in an IPv4 header at byte 20: " + grh);
        assertTrue(grh.hopLimit() > 0, "hop limit of " + grh);
        assertSentinel(server.buf, RX + Grh.LENGTH, 64, "nothing written behind the GRH of an empty datagram");
    }

    @Test
    void theAddressHandlesHopLimitAndTrafficClassArriveInTheReceiversGrh() {
        // each way, so each side's threading mode sends and receives; over loopback no router lowers the hop limit
        grhCarries(client, cqp, ccq, server, sqp, scq, 9, 0xB8);
        grhCarries(server, sqp, scq, client, cqp, ccq, 200, 0x28);
        grhCarries(client, cqp, ccq, server, sqp, scq, 64, 0);
    }

    private void grhCarries(Side from, QueuePair fqp, CompletionQueue fcq, Side to, QueuePair tqp, CompletionQueue tcq,
            int hopLimit, int trafficClass) {
        String what = "a datagram from the " + from + " with hop limit " + hopLimit + " and traffic class 0x"
                + Integer.toHexString(trafficClass);
        AhAttr a = ahAttr(from, to);
        AddressHandle ah = track(from, "AH", from.pd.createAh(new AhAttr(a.dgid(), a.sgidIndex(), hopLimit, trafficClass,
                0, 0, 1, a.udpPort())));
        assertEquals(hopLimit, ah.attr().hopLimit(), "AddressHandle.attr()");
        fillSentinel(to.buf, RX, Grh.LENGTH);
        postRecv(tqp, to, 5, RX, Grh.LENGTH + 64);
        fill(from.buf, TX, 64, hopLimit);
        post(fqp, udSend(from, ah, tqp, QKEY, 64, 6));
        assertCompletion(awaitCompletion(fcq, what + " sent"), WcStatus.SUCCESS, WcOpcode.SEND, 6, fqp.qpn(), what);
        WorkCompletion rc = awaitCompletion(tcq, what + " received");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 5, tqp.qpn(), what);
        Grh grh = Grh.parse(to.buf.asSlice(RX, Grh.LENGTH));
        if (!grh.ipv4() || fx.deviation(ProviderFixture.Deviation.IPV4_TTL_IS_NOT_THE_HOP_LIMIT).isEmpty()) {
            assertEquals(hopLimit, grh.hopLimit(), what + ": the GRH's hop limit: " + grh);
        } // else declared: the device sends IPv4 with a TTL of its own (the reason is the fixture's)
        assertEquals(trafficClass, grh.trafficClass(), what + ": the GRH's traffic class: " + grh);
        assertPattern(to.buf, RX + Grh.LENGTH, 64, hopLimit, what + ": payload behind the GRH");
        AhAttr back = to.ctx.initAhFromWc(1, rc, to.buf.asSlice(RX, Grh.LENGTH));
        assertEquals(trafficClass, back.trafficClass(), what + ": initAhFromWc takes the GRH's traffic class");
        assertEquals(0xFF, back.hopLimit(), what + ": initAhFromWc answers with hop limit 255, as rdma-core");
    }

    @Test
    void aDatagramWithAnotherQkeyIsDroppedWithoutACompletion() {
        AddressHandle toServer = newAh(client, server);
        postRecv(sqp, server, 1, RX, Grh.LENGTH + 64);
        postRecv(sqp, server, 2, RX + 4096, Grh.LENGTH + 64);
        fill(client.buf, TX, 64, 21);
        post(cqp, udSend(client, toServer, sqp, QKEY ^ 0x0101, 64, 3));
        // UD completes at the sender whether or not the receiver takes it
        assertCompletion(awaitCompletion(ccq, "bad-Q_Key send"), WcStatus.SUCCESS, WcOpcode.SEND, 3, cqp.qpn(), "send");
        fill(client.buf, TX, 64, 22);
        post(cqp, udSend(client, toServer, sqp, QKEY, 64, 4));
        awaitCompletion(ccq, "good send");
        // datagrams on one path arrive in order: the first receive must be taken by the second datagram
        WorkCompletion rc = awaitCompletion(scq, "the datagram with the right Q_Key");
        assertCompletion(rc, WcStatus.SUCCESS, WcOpcode.RECV, 1, sqp.qpn(), "first receive");
        assertPattern(server.buf, RX + Grh.LENGTH, 64, 22, "the first receive holds the right-Q_Key datagram");
    }

    @Test
    void aMessageLongerThanThePathMtuIsRefused() {
        AddressHandle toServer = newAh(client, server);
        int mtu = mtu();
        postRecv(sqp, server, 1, RX, Grh.LENGTH + mtu + 64);
        postRecv(sqp, server, 2, RX + 2 * mtu + 4096, Grh.LENGTH + mtu + 64);
        int rc = cqp.postSend(udSend(client, toServer, sqp, QKEY, mtu + 1, 3));
        if (rc == 0) {
            WorkCompletion wc = awaitCompletion(ccq, "send of MTU+1 bytes");
            assertEquals(WcStatus.LOC_LEN_ERR, wc.status(), "a UD send above the path MTU: " + wc);
        } else {
            assertEquals(RdmaException.Errno.EMSGSIZE.value(), rc, "postSend of a UD send above the path MTU returned "
                    + RdmaException.Errno.of(rc));
        }
        // nothing reached the server: a marker from another QP takes the first receive
        QueuePair marker = client.newQp(QpInitAttr.ud(ccq));
        readyUd(marker, QKEY);
        fill(client.buf, TX, mtu, 31);
        post(marker, udSend(client, toServer, sqp, QKEY, mtu, 4));
        WorkCompletion mc = awaitCompletion(ccq, "marker send of exactly the MTU");
        assertCompletion(mc, WcStatus.SUCCESS, WcOpcode.SEND, 4, marker.qpn(), "marker");
        WorkCompletion got = awaitCompletion(scq, "marker receive");
        assertCompletion(got, WcStatus.SUCCESS, WcOpcode.RECV, 1, sqp.qpn(), "first receive");
        assertEquals(marker.qpn(), got.srcQp(), "the first receive was taken by the marker, not the long message: " + got);
        assertEquals(Grh.LENGTH + mtu, got.byteLen());
        assertPattern(server.buf, RX + Grh.LENGTH, mtu, 31, "marker payload");
    }

    @Test
    void aUdSendWithoutAnAddressHandleIsRefusedAtPost() {
        int rc = cqp.postSend(new SendWorkRequest().wrId(1).flags(SendFlags.SIGNALED).sge(0, client.mr, TX, 8));
        if (rc == 0) {
            fail("postSend of a UD SEND without an address handle was accepted");
        }
        assertEquals(RdmaException.Errno.EINVAL.value(), rc, "returned " + RdmaException.Errno.of(rc));
    }

    @Test
    void localOperationsAreRefusedAtPostOnUd() {
        io.jrdma.verbs.DeviceAttr a = attrOrNull(client);
        int tried = 0;
        for (io.jrdma.verbs.MwType type : io.jrdma.verbs.MwType.values()) {
            if (a == null || !a.supportsMw(type)) {
                continue;
            }
            io.jrdma.verbs.MemoryWindow mw = track(client, "MW", client.pd.allocMw(type));
            int rc = type == io.jrdma.verbs.MwType.TYPE_1
                    ? cqp.bindMw(mw, new io.jrdma.verbs.MwBind().wrId(1).bind(client.mr, client.mr.address(), 64,
                            io.jrdma.verbs.Access.REMOTE_READ))
                    : cqp.postSend(new SendWorkRequest().wrId(1).bindMw(mw, io.jrdma.verbs.MemoryWindow.incRkey(mw.rkey()),
                            client.mr, client.mr.address(), 64, io.jrdma.verbs.Access.REMOTE_READ));
            assertEquals(RdmaException.Errno.EINVAL.value(), rc, "a " + type + " bind on a UD QP returned "
                    + RdmaException.Errno.of(rc) + ": a bind is an RC or UC operation");
            tried++;
        }
        if (a != null && a.has(io.jrdma.verbs.DeviceCap.MEM_MGT_EXTENSIONS)) {
            io.jrdma.verbs.MemoryRegion fast = track(client, "fast-registration MR", client.pd.allocMr(4096));
            int rc = cqp.postSend(new SendWorkRequest().wrId(2).regMr(fast, client.buf.asSlice(0, 4096),
                    io.jrdma.verbs.MemoryWindow.incRkey(fast.rkey()), io.jrdma.verbs.Access.LOCAL_WRITE));
            assertEquals(RdmaException.Errno.EINVAL.value(), rc, "REG_MR on a UD QP returned " + RdmaException.Errno.of(rc));
            rc = cqp.postSend(new SendWorkRequest().wrId(3).localInv(fast.rkey()));
            assertEquals(RdmaException.Errno.EINVAL.value(), rc, "LOCAL_INV on a UD QP returned " + RdmaException.Errno.of(rc));
            tried++;
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(tried > 0, "skipped: the provider declares neither memory windows"
                + " nor fast registration");
    }
}

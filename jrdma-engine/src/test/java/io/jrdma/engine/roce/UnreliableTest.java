package io.jrdma.engine.roce;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Grh;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.IbOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static io.jrdma.engine.roce.EngineTest.check;
import static io.jrdma.engine.roce.EngineTest.fill;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * UC and UD on the in-memory network, where packets can be dropped and captured: UC's loss semantics
 * (a PSN gap loses the message in progress, silently, and the responder resynchronises at the next
 * FIRST/ONLY), UD's counted drops (another Q_Key, no receive posted), the Q_Key of a WR with the high bit
 * set, the address handle's checks, and the bytes of a UD packet against the spec with an ICRC computed
 * here by hand.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class UnreliableTest {
    private static final int QKEY = 0x1111_1111;

    private static QueuePair uc(Pair.Side s) {
        return s.pd.createQp(QpInitAttr.uc(s.cq));
    }

    private static void connectUc(Pair.Side from, QueuePair qp, Pair.Side to, QueuePair peer) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        qp.modify(new QpAttr().state(QpState.RTR).av(AddressVector.of(to.ctx.gid(0), 0)).pathMtu(Mtu.MTU_1024)
                .destQpn(peer.qpn()).rqPsn(0xFFFFFE));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0xFFFFFE)); // PSNs wrap inside the first message
    }

    private static QueuePair ud(Pair.Side s, int qkey) {
        QueuePair qp = s.pd.createQp(QpInitAttr.ud(s.cq));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(qkey));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(7));
        return qp;
    }

    private static long counter(Pair.Side s, String name) {
        return s.ctx.counters().getOrDefault(name, -1L);
    }

    /** Drops the first packet with the given BTH opcode, once. */
    private static void dropFirst(Pair p, int opcode) {
        boolean[] done = {false};
        p.net.dropIf = d -> {
            if (!done[0] && (d[0] & 0xFF) == opcode) {
                done[0] = true;
                return true;
            }
            return false;
        };
    }

    @Test
    void aUcSendWithALostMiddlePacketIsLostAndTheNextMessageTakesTheReceive() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            QueuePair qa = uc(p.a);
            QueuePair qb = uc(p.b);
            connectUc(p.a, qa, p.b, qb);
            connectUc(p.b, qb, p.a, qa);
            dropFirst(p, IbOpcode.UC_SEND_MIDDLE);
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(1).sge(0, p.b.mr, 0, 8192)));
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(2).sge(0, p.b.mr, 8192, 8192)));
            fill(p.a.buf, 0, 3000, 1);
            fill(p.a.buf, 4096, 500, 2);
            SendWorkRequest wr = new SendWorkRequest();
            assertEquals(0, qa.postSend(wr.reset().wrId(10).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 3000)));
            assertEquals(0, qa.postSend(wr.reset().wrId(11).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 4096, 500)));
            assertTrue(p.pump(() -> p.b.completions.size() >= 1 && p.a.completions.size() >= 2, 100_000),
                    () -> "sender " + p.a.completions + ", receiver " + p.b.completions + ", " + p.b.ctx.counters());
            p.pump(() -> false, 1_000); // anything else in flight arrives (bounded: the network is idle)
            // the sender knows nothing of the loss: both complete
            assertEquals(WcStatus.SUCCESS, p.a.completions.get(0).status());
            assertEquals(10, p.a.completions.get(0).wrId());
            assertEquals(11, p.a.completions.get(1).wrId());
            // the receiver: one completion, the second message, in the first receive
            assertEquals(1, p.b.completions.size(), "completions: " + p.b.completions);
            WorkCompletion rc = p.b.completions.get(0);
            assertEquals(WcStatus.SUCCESS, rc.status());
            assertEquals(1, rc.wrId(), "the lost message did not consume its receive");
            assertEquals(500, rc.byteLen());
            assertFalse(rc.hasGrh());
            check(p.b.buf, 0, 500, 2);
            assertEquals(1, counter(p.b, "uc_dropped_msgs"));
            assertTrue(counter(p.b, "out_of_seq_request") >= 1);
            assertEquals(0, counter(p.b, "sent_acks"), "UC sends no ACKs");
            assertEquals(0, counter(p.b, "sent_naks"), "UC sends no NAKs");
            assertEquals(QpState.RTS, qb.state(), "a loss is no error on UC");
            qa.close();
            qb.close();
        }
    }

    @Test
    void aUcWriteWithImmWhoseFirstPacketIsLostLeavesNoCompletion() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            QueuePair qa = uc(p.a);
            QueuePair qb = uc(p.b);
            connectUc(p.a, qa, p.b, qb);
            connectUc(p.b, qb, p.a, qa);
            dropFirst(p, IbOpcode.UC_RDMA_WRITE_FIRST);
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(1).numSge(0)));
            fill(p.a.buf, 0, 2500, 3);
            fill(p.a.buf, 8192, 100, 4);
            SendWorkRequest wr = new SendWorkRequest();
            assertEquals(0, qa.postSend(wr.reset().wrId(20).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).imm(5)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 2500).remote(p.b.mr.address(), p.b.mr.rkey())));
            assertEquals(0, qa.postSend(wr.reset().wrId(21).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).imm(6)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 8192, 100)
                    .remote(p.b.mr.address() + 8192, p.b.mr.rkey())));
            assertTrue(p.pump(() -> p.b.completions.size() >= 1 && p.a.completions.size() >= 2, 100_000),
                    () -> "sender " + p.a.completions + ", receiver " + p.b.completions + ", " + p.b.ctx.counters());
            p.pump(() -> false, 1_000);
            assertEquals(1, p.b.completions.size(), "completions: " + p.b.completions);
            WorkCompletion rc = p.b.completions.get(0);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, rc.opcode());
            assertEquals(6, rc.imm(), "the second WRITE's immediate data: the first was lost");
            check(p.b.buf, 8192, 100, 4);
            assertEquals(1, counter(p.b, "uc_dropped_msgs"));
            qa.close();
            qb.close();
        }
    }

    @Test
    void udDropsAnotherQkeyAndADatagramWithoutAReceiveAndCountsThem() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            QueuePair qa = ud(p.a, 0x2222);
            QueuePair qb = ud(p.b, QKEY);
            AddressHandle ah = p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0));
            SendWorkRequest wr = new SendWorkRequest();
            fill(p.a.buf, 0, 64, 9);
            // no receive posted: dropped, counted
            assertEquals(0, qa.postSend(wr.reset().wrId(1).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 64)
                    .flags(SendFlags.SIGNALED).ud(ah, qb.qpn(), QKEY)));
            assertTrue(p.pump(() -> counter(p.b, "ud_dropped_no_recv") == 1, 100_000));
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(5).sge(0, p.b.mr, 0, 4096)));
            // another Q_Key: dropped, counted, the receive stays
            assertEquals(0, qa.postSend(wr.reset().wrId(2).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 64)
                    .flags(SendFlags.SIGNALED).ud(ah, qb.qpn(), QKEY + 1)));
            assertTrue(p.pump(() -> counter(p.b, "rcvd_bad_qkey") == 1, 100_000));
            // the high bit: the sender's own Q_Key (0x2222), which is not the receiver's either
            assertEquals(0, qa.postSend(wr.reset().wrId(3).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 64)
                    .flags(SendFlags.SIGNALED).ud(ah, qb.qpn(), 0x8000_0000)));
            assertTrue(p.pump(() -> counter(p.b, "rcvd_bad_qkey") == 2, 100_000));
            assertTrue(p.b.completions.isEmpty(), "no completion for a dropped datagram: " + p.b.completions);
            // the QP's own Q_Key set to the receiver's: taken
            qa.modify(new QpAttr().qkey(QKEY));
            assertEquals(0, qa.postSend(wr.reset().wrId(4).opcode(WrOpcode.SEND_WITH_IMM).imm(77)
                    .sge(0, p.a.mr, 0, 64).flags(SendFlags.SIGNALED).ud(ah, qb.qpn(), 0x8000_0000)));
            assertTrue(p.pump(() -> p.b.completions.size() == 1, 100_000));
            WorkCompletion rc = p.b.completions.get(0);
            assertEquals(WcStatus.SUCCESS, rc.status());
            assertEquals(5, rc.wrId());
            assertEquals(Grh.LENGTH + 64, rc.byteLen());
            assertEquals(qa.qpn(), rc.srcQp());
            assertEquals(77, rc.imm());
            assertTrue(rc.hasGrh());
            Grh grh = Grh.parse(p.b.buf.asSlice(0, Grh.LENGTH));
            assertEquals(p.a.ctx.gid(0), grh.sgid());
            assertEquals(p.b.ctx.gid(0), grh.dgid());
            assertTrue(grh.ipv4());
            check(p.b.buf, Grh.LENGTH, 64, 9);
            assertEquals(4, p.a.completions.size(), "UD completes every send, delivered or not");
            for (WorkCompletion c : p.a.completions) {
                assertEquals(WcStatus.SUCCESS, c.status());
            }
            qa.close();
            qb.close();
            ah.close();
        }
    }

    /** rxe's class D: a UD datagram or UC message longer than the receive is dropped, the receive kept. */
    @Test
    void aMessageLongerThanTheReceiveIsDroppedAndTheReceiveKept() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            QueuePair qa = ud(p.a, QKEY);
            QueuePair qb = ud(p.b, QKEY);
            AddressHandle ah = p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0));
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(1).sge(0, p.b.mr, 0, Grh.LENGTH + 100)));
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED);
            assertEquals(0, qa.postSend(wr.wrId(1).sge(0, p.a.mr, 0, 101).ud(ah, qb.qpn(), QKEY)));
            assertTrue(p.pump(() -> counter(p.b, "rcvd_too_long") == 1, 100_000));
            assertEquals(0, qa.postSend(wr.wrId(2).sge(0, p.a.mr, 0, 100).ud(ah, qb.qpn(), QKEY)));
            assertTrue(p.pump(() -> p.b.completions.size() == 1, 100_000));
            assertEquals(1, p.b.completions.get(0).wrId(), "the receive was kept for the datagram that fits");
            assertEquals(Grh.LENGTH + 100, p.b.completions.get(0).byteLen());
            assertEquals(QpState.RTS, qb.state());

            QueuePair ua = uc(p.a);
            QueuePair ub = uc(p.b);
            connectUc(p.a, ua, p.b, ub);
            connectUc(p.b, ub, p.a, ua);
            assertEquals(0, ub.postRecv(new RecvWorkRequest().wrId(7).sge(0, p.b.mr, 0, 2000)));
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED);
            assertEquals(0, ua.postSend(s.wrId(1).sge(0, p.a.mr, 0, 3000)));
            assertEquals(0, ua.postSend(s.wrId(2).sge(0, p.a.mr, 0, 1500)));
            assertTrue(p.pump(() -> p.b.completions.size() == 2, 100_000));
            assertEquals(7, p.b.completions.get(1).wrId());
            assertEquals(1500, p.b.completions.get(1).byteLen(), "the receive took the message that fits");
            assertEquals(WcStatus.SUCCESS, p.b.completions.get(1).status());
            assertEquals(2, counter(p.b, "rcvd_too_long"));
            assertEquals(1, counter(p.b, "uc_dropped_msgs"));
            assertEquals(QpState.RTS, ub.state());
            for (QueuePair q : List.of(qa, qb, ua, ub)) {
                q.close();
            }
            ah.close();
        }
    }

    /** A receive whose lkey is bad fails with LOC_PROT_ERR and takes its UD or UC QP to ERROR (rxe's class A). */
    @Test
    void aReceiveWithABadLkeyFailsItsQp() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            QueuePair qa = ud(p.a, QKEY);
            QueuePair qb = ud(p.b, QKEY);
            AddressHandle ah = p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0));
            int badKey = p.b.mr.lkey() ^ 0x100;
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(1).sge(0, p.b.mr.address(), 4096, badKey)));
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(2).sge(0, p.b.mr, 0, 4096)));
            assertEquals(0, qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 64).ud(ah, qb.qpn(), QKEY)));
            assertTrue(p.pump(() -> p.b.completions.size() == 2, 100_000), () -> "" + p.b.completions);
            assertEquals(WcStatus.LOC_PROT_ERR, p.b.completions.get(0).status());
            assertEquals(WcStatus.WR_FLUSH_ERR, p.b.completions.get(1).status(), "the next receive is flushed");
            assertEquals(QpState.ERROR, qb.state());

            QueuePair ua = uc(p.a);
            QueuePair ub = uc(p.b);
            connectUc(p.a, ua, p.b, ub);
            connectUc(p.b, ub, p.a, ua);
            assertEquals(0, ub.postRecv(new RecvWorkRequest().wrId(3).sge(0, p.b.mr.address(), 4096, badKey)));
            assertEquals(0, ua.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 64)));
            assertTrue(p.pump(() -> p.b.completions.size() == 3, 100_000), () -> "" + p.b.completions);
            assertEquals(WcStatus.LOC_PROT_ERR, p.b.completions.get(2).status());
            assertEquals(QpState.ERROR, ub.state());
            for (QueuePair q : List.of(qa, qb, ua, ub)) {
                q.close();
            }
            ah.close();
        }
    }

    @Test
    void addressHandlesAreCheckedAndTiedToTheirPd() {
        try (Pair p = new Pair(Mtu.MTU_1024, 4096)) {
            RdmaException e = assertThrows(RdmaException.class,
                    () -> p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 5)));
            assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
            e = assertThrows(RdmaException.class, () -> p.a.pd.createAh(AhAttr.of(Gid.parse("fe80::1"), 0)));
            assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
            assertTrue(e.getMessage().contains("IP versions"), e.getMessage());
            QueuePair qa = ud(p.a, QKEY);
            AddressHandle ah = p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0));
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).numSge(0).ud(ah, 0x12, QKEY);
            assertEquals(RdmaException.Errno.EINVAL.value(), qa.postSend(wr), "UD carries SEND only");
            ah.close();
            assertEquals(RdmaException.Errno.EINVAL.value(), qa.postSend(wr.opcode(WrOpcode.SEND)),
                    "a closed address handle");
            // an AH of another PD
            try (var pd2 = p.a.ctx.allocPd(); AddressHandle other = pd2.createAh(AhAttr.of(p.b.ctx.gid(0), 0))) {
                assertEquals(RdmaException.Errno.EINVAL.value(), qa.postSend(wr.ud(other, 0x12, QKEY)));
                RdmaException busy = assertThrows(RdmaException.class, pd2::close);
                assertEquals(RdmaException.Errno.EBUSY, busy.errno(), "a PD with an AH: " + busy.getMessage());
            }
            qa.close();
        }
    }

    /** ibv_destroy_ah's promise: sends posted with a handle before it closed still go out (real UDP sockets). */
    @Test
    void sendsPostedBeforeTheAddressHandleClosedStillGoOut() throws Exception {
        try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024)) {
            p.a.qp.close(); // the RC QPs' path to the same peer would keep the handle's socket open
            p.b.qp.close();
            QueuePair qa = p.a.pd.createQp(QpInitAttr.ud(p.a.cq));
            QueuePair qb = p.b.pd.createQp(QpInitAttr.ud(p.b.cq));
            for (QueuePair q : List.of(qa, qb)) {
                q.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(QKEY));
                q.modify(new QpAttr().state(QpState.RTR));
                q.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            }
            Gid lo = Gid.parse("127.0.0.1");
            AddressHandle ah = p.a.pd.createAh(AhAttr.of(lo, p.a.ctx.gidIndexOf(lo))
                    .withUdpPort(p.b.ctx.queryPort().udpPort()));
            var link = (io.jrdma.engine.link.UdpLink) ((io.jrdma.engine.core.Context) p.a.ctx).link;
            assertEquals(1, link.pathCount(), "the handle has a connected path of its own");
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(1).sge(0, p.b.mr, 0, 4096)));
            assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(2).sge(0, p.b.mr, 4096, 4096)));
            SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 100).ud(ah, qb.qpn(), QKEY);
            assertEquals(0, qa.postSend(wr.wrId(10)));
            assertEquals(0, qa.postSend(wr.wrId(11)));
            ah.close(); // INVOKER contexts: nothing was sent yet
            assertEquals(0, link.pathCount(), "the close released the path (its socket is closed)");
            assertEquals(RdmaException.Errno.EINVAL.value(), qa.postSend(wr.wrId(12)), "a post after the close");
            WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion()};
            int got = 0;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (got < 2 && System.nanoTime() < deadline) {
                p.progress();
                int n = p.b.cq.poll(wcs);
                for (int i = 0; i < n; i++) {
                    assertEquals(WcStatus.SUCCESS, wcs[i].status(), wcs[i].toString());
                    assertEquals(qa.qpn(), wcs[i].srcQp());
                }
                got += n;
            }
            assertEquals(2, got, "both datagrams posted before the close arrived");
            qa.close();
            qb.close();
        }
    }

    /**
     * A UD SEND_ONLY of 5 bytes as IBA 9.2/9.3 lay it out (BTH, DETH, payload, pad to 4) and the ICRC of
     * RoCEv2 (IBA A17.4.1, the masked IPv4 and UDP headers in front) computed here with the JDK's CRC-32,
     * independently of the wire codec.
     */
    @Test
    void aUdPacketHasTheSpecsBytesAndIcrc() {
        try (Pair p = new Pair(Mtu.MTU_1024, 4096)) {
            QueuePair qa = ud(p.a, QKEY);
            QueuePair qb = ud(p.b, QKEY);
            AddressHandle ah = p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0));
            p.a.buf.asSlice(0, 5).copyFrom(java.lang.foreign.MemorySegment.ofArray("hello".getBytes()));
            p.net.capture = true;
            assertEquals(0, qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 5)
                    .flags(SendFlags.SIGNALED).ud(ah, qb.qpn(), 0x0A0B0C0D)));
            assertTrue(p.pump(() -> p.a.completions.size() == 1 && counter(p.b, "rcvd_bad_qkey") == 1, 100_000));
            assertEquals(1, p.net.captured.size());
            byte[] got = p.net.captured.get(0);
            int a = qa.qpn();
            int b = qb.qpn();
            byte[] expected = {
                0x64, 0x30, (byte) 0xFF, (byte) 0xFF,                 // BTH: UD SEND_ONLY, pad 3, P_Key
                0, (byte) (b >> 16), (byte) (b >> 8), (byte) b,      // dest QP
                0, 0, 0, 7,                                          // AckReq 0, PSN 7 (the sq_psn)
                0x0A, 0x0B, 0x0C, 0x0D,                              // DETH: Q_Key
                0, (byte) (a >> 16), (byte) (a >> 8), (byte) a,     // source QP
                'h', 'e', 'l', 'l', 'o', 0, 0, 0,                    // payload, pad
                0, 0, 0, 0                                           // ICRC, below
            };
            int len = expected.length - 4;
            CRC32 crc = new CRC32();
            ByteBuffer pseudo = ByteBuffer.allocate(8 + 20 + 8 + len);
            for (int i = 0; i < 8; i++) {
                pseudo.put((byte) 0xFF); // the LRH a RoCEv2 packet does not have
            }
            pseudo.put((byte) 0x45).put((byte) 0xFF).putShort((short) (20 + 8 + len + 4)) // TOS masked
                    .putShort((short) 0).putShort((short) 0x4000)                        // ID 0, DF
                    .put((byte) 0xFF).put((byte) 17).putShort((short) 0xFFFF)            // TTL, checksum masked
                    .put(new byte[] {10, 0, 0, 1}).put(new byte[] {10, 0, 0, 2});
            pseudo.putShort((short) 4791).putShort((short) 4791).putShort((short) (8 + len + 4))
                    .putShort((short) 0xFFFF); // UDP checksum masked
            byte[] bth = expected.clone();
            bth[4] = (byte) 0xFF; // BTH byte 4 (FECN, BECN, reserved) masked
            pseudo.put(bth, 0, len);
            crc.update(pseudo.array());
            int icrc = (int) crc.getValue();
            expected[len] = (byte) icrc; // little-endian on the wire
            expected[len + 1] = (byte) (icrc >>> 8);
            expected[len + 2] = (byte) (icrc >>> 16);
            expected[len + 3] = (byte) (icrc >>> 24);
            assertArrayEquals(expected, got);
            // and the receiver takes it: the ICRC checked out there too
            assertEquals(0, counter(p.b, "rcvd_icrc_err"));
            assertEquals(1, counter(p.b, "rcvd_bad_qkey"), "Q_Key 0x0A0B0C0D is not the receiver's");
            qa.close();
            qb.close();
            ah.close();
        }
    }

    /**
     * The address handle's hop limit and traffic class reach the wire (the in-memory network records what its
     * link was asked to send each packet with) and the receiver's GRH (bytes 21 and 28 of the IPv4 header in it,
     * whose checksum still holds); a handle made with the defaults sends 64 and 0.
     */
    @Test
    void theAddressHandlesHopLimitAndTrafficClassGoOnTheWireAndIntoTheGrh() {
        try (Pair p = new Pair(Mtu.MTU_1024, 1 << 20)) {
            QueuePair qa = ud(p.a, QKEY);
            QueuePair qb = ud(p.b, QKEY);
            AddressHandle custom = p.a.pd.createAh(new AhAttr(p.b.ctx.gid(0), 0, 9, 0xB8, 0, 0, 1, 4791));
            AddressHandle plain = p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0));
            RdmaException zero = assertThrows(RdmaException.class,
                    () -> p.a.pd.createAh(AhAttr.of(p.b.ctx.gid(0), 0).withHopLimit(0)));
            assertEquals(RdmaException.Errno.EINVAL, zero.errno(), zero.getMessage());
            p.net.capture = true;
            SendWorkRequest wr = new SendWorkRequest();
            int[][] sent = {{9, 0xB8}, {64, 0}};
            AddressHandle[] ahs = {custom, plain};
            for (int i = 0; i < 2; i++) {
                int slot = i * 4096;
                assertEquals(0, qb.postRecv(new RecvWorkRequest().wrId(i).sge(0, p.b.mr, slot, 4096)));
                fill(p.a.buf, 0, 32, i);
                assertEquals(0, qa.postSend(wr.reset().wrId(i).opcode(WrOpcode.SEND).sge(0, p.a.mr, 0, 32)
                        .flags(SendFlags.SIGNALED).ud(ahs[i], qb.qpn(), QKEY)));
                int want = i + 1;
                assertTrue(p.pump(() -> p.b.completions.size() == want, 100_000), () -> "receiver " + p.b.completions);
                assertArrayEquals(sent[i], p.net.capturedIp.get(i), "the IP fields packet " + i + " was sent with");
                var g = p.b.buf.asSlice(slot, Grh.LENGTH);
                assertEquals(sent[i][1], g.get(ValueLayout.JAVA_BYTE, Grh.IPV4_OFFSET + 1) & 0xFF, "TOS byte of the GRH");
                assertEquals(sent[i][0], g.get(ValueLayout.JAVA_BYTE, Grh.IPV4_OFFSET + 8) & 0xFF, "TTL byte of the GRH");
                int sum = 0;
                for (int k = 0; k < 20; k += 2) {
                    sum += ((g.get(ValueLayout.JAVA_BYTE, Grh.IPV4_OFFSET + k) & 0xFF) << 8)
                            | (g.get(ValueLayout.JAVA_BYTE, Grh.IPV4_OFFSET + k + 1) & 0xFF);
                }
                sum = (sum & 0xFFFF) + (sum >>> 16);
                assertEquals(0xFFFF, (sum & 0xFFFF) + (sum >>> 16), "the GRH's IPv4 header checksum");
                Grh grh = Grh.parse(g);
                assertEquals(sent[i][0], grh.hopLimit(), "Grh.hopLimit");
                assertEquals(sent[i][1], grh.trafficClass(), "Grh.trafficClass");
                check(p.b.buf, slot + Grh.LENGTH, 32, i);
            }
            qa.close();
            qb.close();
            custom.close();
            plain.close();
        }
    }
}

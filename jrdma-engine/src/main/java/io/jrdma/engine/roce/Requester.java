package io.jrdma.engine.roce;

import io.jrdma.engine.core.Ah;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.LocalOps;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.core.Wqe;
import io.jrdma.engine.util.Psn;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.AtomicEth;
import io.jrdma.wire.Bth;
import io.jrdma.wire.Deth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Ieth;
import io.jrdma.wire.ImmDt;
import io.jrdma.wire.Reth;

import java.lang.foreign.MemorySegment;

/**
 * The requester (rxe_req.c): turns send-queue WQEs into request packets. Assigns PSNs (a READ
 * takes one per response packet), segments SEND/WRITE payloads by path MTU, sets AckReq on the
 * last packet of a message and at least every {@value RoceQp#MAX_PKT_PER_ACK} packets, keeps at
 * most {@value RoceQp#MAX_UNACKED_PSNS} PSNs unacknowledged, honours FENCE and the READ/atomic
 * depth (ORD), and re-sends from any PSN after {@link #rewind} (go-back-N).
 * The payload copy from the registered region into the packet buffer is the "DMA".
 */
final class Requester {
    private final RoceTransport roce;
    private final Engine engine;

    Requester(RoceTransport roce) {
        this.roce = roce;
        this.engine = roce.engine;
    }

    /** Control path (modify with SQ_PSN): the first request's PSN. */
    void start(RoceQp qp, int sqPsn) {
        qp.req.psn = sqPsn;
    }

    /** The completer retired the head WQE: a requester still pointing before it moves on. */
    void retired(RoceQp qp) {
        if (qp.req.index < qp.sqConsumer) {
            qp.req.index = qp.sqConsumer;
            qp.req.offset = 0;
        }
    }

    /** The completer retired a READ/atomic the requester had started: one more may go out. */
    void readAtomicDone(RoceQp qp) {
        qp.req.rdAtomicInFlight--;
    }

    int run(RoceQp qp, int budget) {
        boolean draining = qp.state == QpState.SQD; // IBA 10.3.1: SQD finishes the message in progress, starts none
        if (qp.state != QpState.RTS && !draining) {
            return 0;
        }
        if (draining) {
            roce.completer.checkDrained(qp); // nothing was outstanding when it entered SQD
        }
        if (qp.comp.rnrWaiting && !roce.completer.rnrWaitOver(qp)) {
            return 0;
        }
        int sent = 0;
        boolean packets = false;
        long producer = qp.sqProducerAcquire(); // release partner: Qp.postSend
        while (sent < budget && qp.req.index != producer) {
            Wqe w = qp.sq[(int) (qp.req.index & qp.sqMask)];
            if (w.started && w.localError >= 0) {
                break; // its region went away part way (regionGone): it fails once it is the head
            }
            if (!w.started) {
                if (draining) {
                    break;
                }
                if (!w.validated) {
                    Sgl.validate(engine.context.keys, qp, w);
                }
                if (w.localError >= 0) {
                    roce.completer.completeLocalErrors(qp);
                    break; // what this run sent before it still arms the retransmit timer (found in review)
                }
                if (w.isLocalOp()) {
                    // rxe_do_local_ops: executed in send-queue order; fenced, it waits until all before it completed
                    if ((w.flags & SendFlags.FENCE) != 0 && qp.sqConsumer != qp.req.index) {
                        break;
                    }
                    w.localError = LocalOps.execute(qp, w);
                    if (w.localError >= 0) {
                        roce.completer.completeLocalErrors(qp);
                        break;
                    }
                    w.started = true;
                    w.firstPsn = qp.req.psn; // no PSN of its own: done once everything before it is
                    w.lastPsn = Psn.add(qp.req.psn, -1);
                    w.npkts = 0;
                    nextWqe(qp);
                    roce.completer.completeLocalOps(qp);
                    sent++;
                    continue;
                }
                if ((w.flags & SendFlags.FENCE) != 0 && qp.req.rdAtomicInFlight > 0) {
                    break;
                }
                if (w.isReadOrAtomic() && qp.req.rdAtomicInFlight >= Math.max(1, qp.maxRdAtomic)) {
                    break;
                }
                if (!qp.unreliable && Psn.diff(qp.req.psn, qp.comp.lastAckedPsn) > RoceQp.MAX_UNACKED_PSNS) {
                    break;
                }
                w.started = true;
                w.firstPsn = qp.req.psn;
                w.npkts = w.opcode.isAtomic() ? 1 : (int) Math.max(1, (w.length + qp.mtuBytes - 1) / qp.mtuBytes);
                w.lastPsn = Psn.add(w.firstPsn, w.npkts - 1);
                qp.req.offset = 0;
                if (w.isReadOrAtomic()) {
                    qp.req.rdAtomicInFlight++;
                }
            } else if (w.isLocalOp()) {
                nextWqe(qp); // executed before a go-back-N rewind: not again
                continue;
            } else if (!qp.unreliable && Psn.diff(qp.req.psn, qp.comp.lastAckedPsn) > RoceQp.MAX_UNACKED_PSNS) {
                break;
            }
            if (!(qp.opcodeTransport == IbOpcode.TRANSPORT_UD ? sendDatagram(qp, w) : sendPacket(qp, w))) {
                break;
            }
            sent++;
            packets = true;
        }
        if (packets && !qp.unreliable) {
            roce.completer.armRetransmit(qp); // from now: the last of these packets has just been handed over
        }
        return sent;
    }

    private boolean sendPacket(RoceQp qp, Wqe w) {
        MemorySegment tx = roce.txSeg;
        int mtu = qp.mtuBytes;
        long off = qp.req.offset;
        int psn = qp.req.psn;
        switch (w.opcode) {
            case RDMA_READ -> {
                Bth.write(tx, 0, IbOpcode.RC_RDMA_READ_REQUEST, false, false, 0, 0xFFFF, qp.destQpn, true, psn);
                Reth.write(tx, Bth.LENGTH, w.remoteAddr + off, w.rkey, (int) (w.length - off));
                if (!roce.send(qp, Bth.LENGTH + Reth.LENGTH)) {
                    return false;
                }
                qp.req.psn = Psn.add(w.lastPsn, 1);
                nextWqe(qp);
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                boolean cas = w.opcode == WrOpcode.ATOMIC_CMP_AND_SWP;
                Bth.write(tx, 0, cas ? IbOpcode.RC_COMPARE_SWAP : IbOpcode.RC_FETCH_ADD, false, false, 0, 0xFFFF,
                        qp.destQpn, true, psn);
                AtomicEth.write(tx, Bth.LENGTH, w.remoteAddr, w.rkey, cas ? w.swap : w.compareAdd,
                        cas ? w.compareAdd : 0);
                if (!roce.send(qp, Bth.LENGTH + AtomicEth.LENGTH)) {
                    return false;
                }
                qp.req.psn = Psn.add(psn, 1);
                nextWqe(qp);
            }
            default -> {
                long remaining = w.length - off;
                int payload = (int) Math.min(mtu, remaining);
                boolean first = off == 0;
                boolean last = remaining <= mtu;
                int opcode = opcode(w.opcode, first, last) | qp.opcodeTransport; // UC's opcodes are RC's + 0x20
                boolean ackReq = !qp.unreliable && (last && (!qp.peerAcksUnrequested || w.signaled || sendQueueHalfFull(qp)))
                        || qp.req.pktsSinceAckReq + 1 >= RoceQp.MAX_PKT_PER_ACK
                        || Psn.diff(psn, qp.comp.lastAckedPsn) >= RoceQp.MAX_UNACKED_PSNS;
                int hdr = IbOpcode.headerLength(opcode);
                boolean se = last && (w.flags & SendFlags.SOLICITED) != 0;
                int pad = (-payload) & 3;
                Bth.write(tx, 0, opcode, se, false, pad, 0xFFFF, qp.destQpn, ackReq, psn);
                int reth = IbOpcode.offset(opcode, IbOpcode.RETH);
                if (reth >= 0) {
                    Reth.write(tx, reth, w.remoteAddr, w.rkey, (int) w.length);
                }
                int imm = IbOpcode.offset(opcode, IbOpcode.IMMDT);
                if (imm >= 0) {
                    ImmDt.write(tx, imm, w.imm);
                }
                int ieth = IbOpcode.offset(opcode, IbOpcode.IETH);
                if (ieth >= 0) {
                    Ieth.write(tx, ieth, w.imm); // the key to invalidate shares the WQE's immediate field
                }
                if (!Sgl.gather(engine.context.keys, qp, w, off, payload, tx, hdr)) {
                    return regionGone(qp, w);
                }
                roce.pad(hdr + payload, payload);
                if (!roce.send(qp, hdr + payload + pad)) {
                    return false;
                }
                qp.req.pktsSinceAckReq = ackReq ? 0 : qp.req.pktsSinceAckReq + 1;
                qp.req.psn = Psn.add(psn, 1);
                if (last) {
                    nextWqe(qp);
                    if (qp.unreliable) {
                        roce.completer.retireSent(qp); // UC: done once its last packet is sent (rxe_req.c)
                    }
                } else {
                    qp.req.offset = off + payload;
                }
            }
        }
        return true;
    }

    /**
     * UD (rxe_req.c for IB_QPT_UD): one SEND_ONLY packet per WQE (the post checked it fits the MTU) to the
     * address handle's path and the WR's QPN, with a DETH carrying the Q_Key (the WR's, or the QP's own when
     * the WR's has its high bit set: IBA 10.2.4.2) and this QP's number; complete once sent.
     */
    private boolean sendDatagram(RoceQp qp, Wqe w) {
        MemorySegment tx = roce.txSeg;
        int payload = (int) w.length;
        int opcode = w.opcode == WrOpcode.SEND_WITH_IMM ? IbOpcode.UD_SEND_ONLY_WITH_IMMEDIATE : IbOpcode.UD_SEND_ONLY;
        int hdr = IbOpcode.headerLength(opcode);
        int pad = (-payload) & 3;
        boolean se = (w.flags & SendFlags.SOLICITED) != 0;
        int psn = qp.req.psn;
        Bth.write(tx, 0, opcode, se, false, pad, 0xFFFF, w.remoteQpn, false, psn);
        Deth.write(tx, IbOpcode.offset(opcode, IbOpcode.DETH), w.remoteQkey < 0 ? qp.qkey : w.remoteQkey, qp.qpn);
        int imm = IbOpcode.offset(opcode, IbOpcode.IMMDT);
        if (imm >= 0) {
            ImmDt.write(tx, imm, w.imm);
        }
        if (!Sgl.gather(engine.context.keys, qp, w, 0, payload, tx, hdr)) {
            return regionGone(qp, w);
        }
        roce.pad(hdr + payload, payload);
        Ah ah = w.ah; // closed since the post: its path is released, the source GID's shared socket remains
        if (!roce.send(ah.closed ? ah.gidEndpoint : ah.local, ah.remote, hdr + payload + pad, false)) {
            return false;
        }
        qp.req.psn = Psn.add(psn, 1);
        nextWqe(qp);
        roce.completer.retireSent(qp);
        return true;
    }

    /**
     * A region the WQE's data comes from is gone since its validation (deregistered, invalidated, registered again
     * elsewhere, its memory freed: {@link Sgl#region}), and this packet is not sent. As rxe's requester, the WQE fails
     * with LOC_PROT_ERR: in order, once everything before it has completed (the completer's
     * {@code completeLocalErrors}, at once when it is the head), and the QP enters ERROR. The requester sends nothing
     * more of it, nor anything after it.
     *
     * @return false: nothing was sent
     */
    private boolean regionGone(RoceQp qp, Wqe w) {
        w.localError = WcStatus.LOC_PROT_ERR.ordinal();
        roce.completer.completeLocalErrors(qp);
        return false;
    }

    /** @return true when at least half the send queue waits for ACKs: ask for one so the poster gets room */
    private static boolean sendQueueHalfFull(RoceQp qp) {
        return (qp.req.index - qp.sqConsumer) * 2 >= qp.sqMask + 1;
    }

    private static void nextWqe(RoceQp qp) {
        qp.req.index++;
        qp.req.offset = 0;
    }

    private static int opcode(WrOpcode op, boolean first, boolean last) {
        return switch (op) {
            case SEND -> first ? (last ? IbOpcode.RC_SEND_ONLY : IbOpcode.RC_SEND_FIRST)
                    : (last ? IbOpcode.RC_SEND_LAST : IbOpcode.RC_SEND_MIDDLE);
            case SEND_WITH_IMM -> first ? (last ? IbOpcode.RC_SEND_ONLY_WITH_IMMEDIATE : IbOpcode.RC_SEND_FIRST)
                    : (last ? IbOpcode.RC_SEND_LAST_WITH_IMMEDIATE : IbOpcode.RC_SEND_MIDDLE);
            case SEND_WITH_INV -> first ? (last ? IbOpcode.RC_SEND_ONLY_WITH_INVALIDATE : IbOpcode.RC_SEND_FIRST)
                    : (last ? IbOpcode.RC_SEND_LAST_WITH_INVALIDATE : IbOpcode.RC_SEND_MIDDLE);
            case RDMA_WRITE -> first ? (last ? IbOpcode.RC_RDMA_WRITE_ONLY : IbOpcode.RC_RDMA_WRITE_FIRST)
                    : (last ? IbOpcode.RC_RDMA_WRITE_LAST : IbOpcode.RC_RDMA_WRITE_MIDDLE);
            case RDMA_WRITE_WITH_IMM -> first
                    ? (last ? IbOpcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : IbOpcode.RC_RDMA_WRITE_FIRST)
                    : (last ? IbOpcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : IbOpcode.RC_RDMA_WRITE_MIDDLE);
            default -> throw new IllegalStateException("not a SEND/WRITE opcode: " + op);
        };
    }

    /**
     * Go-back-N: makes the requester re-send from {@code psn}, which lies in a WQE already
     * started and not yet completed. WQEs after it will be sent again with the same PSNs.
     *
     * @return false when no started WQE holds {@code psn} (nothing changed)
     */
    boolean rewind(RoceQp qp, int psn) {
        long end = qp.req.index;
        if (end < qp.sqProducerAcquire() && qp.sq[(int) (end & qp.sqMask)].started) {
            end++; // the partly sent WQE at reqIndex
        }
        for (long i = qp.sqConsumer; i < end; i++) {
            Wqe w = qp.sq[(int) (i & qp.sqMask)];
            if (!w.started || Psn.diff(psn, w.firstPsn) < 0 || Psn.diff(psn, w.lastPsn) > 0) {
                continue;
            }
            long off;
            int from;
            if (w.opcode.isAtomic()) {
                off = 0;
                from = w.firstPsn;
            } else {
                off = (long) Psn.diff(psn, w.firstPsn) * qp.mtuBytes;
                from = psn;
            }
            int inFlight = 0;
            for (long j = qp.sqConsumer; j < end; j++) {
                Wqe x = qp.sq[(int) (j & qp.sqMask)];
                if (j > i && !x.isLocalOp()) {
                    x.started = false;
                } else if (x.started && x.isReadOrAtomic()) {
                    inFlight++;
                }
            }
            qp.req.rdAtomicInFlight = inFlight;
            qp.req.index = i;
            qp.req.offset = off;
            qp.req.psn = from;
            qp.req.pktsSinceAckReq = 0;
            engine.schedule(qp);
            return true;
        }
        return false;
    }
}

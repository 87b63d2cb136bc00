package io.jrdma.engine.roce;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.core.RecvWqe;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.util.Psn;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.wire.Aeth;
import io.jrdma.wire.AtomicAckEth;
import io.jrdma.wire.AtomicEth;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.Grh;
import io.jrdma.wire.Bth;
import io.jrdma.wire.Deth;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Ieth;
import io.jrdma.wire.ImmDt;
import io.jrdma.wire.Reth;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The responder (rxe_resp.c): checks each request packet's PSN (in sequence, duplicate, or
 * out of sequence → one PSN-sequence-error NAK), opcode order, QP and region access, then
 * places SEND payloads in receive WQEs (RNR NAK when none is posted), WRITE payloads in the
 * region named by the rkey, executes atomics atomically on the region's memory, and queues
 * READ and atomic responses as responder resources. Responses leave in PSN order: queued
 * resources first, then one coalesced ACK or NAK. Duplicates are re-ACKed; duplicate READs are
 * executed again; duplicate atomics are answered from the history of original values.
 */
final class Responder {
    private static final VarHandle ATOMIC_LONG = ValueLayout.JAVA_LONG.varHandle();
    /**
     * How long an ACK that no packet asked for may wait to be coalesced with later ones: far
     * below any retransmit timeout (the CM uses 14, about 67 ms), and long enough that a
     * ping-pong at loopback speed sends one ACK per several round trips.
     */
    static final long ACK_COALESCE_NANOS = 50_000;
    private final RoceTransport roce;
    private final Engine engine;

    Responder(RoceTransport roce) {
        this.roce = roce;
        this.engine = roce.engine;
    }

    /** Control path (modify with RQ_PSN): the first request expected. */
    void start(RoceQp qp, int rqPsn) {
        qp.resp.ePsn = rqPsn;
        qp.resp.ackSentPsn = rqPsn;
    }

    /** Control path (modify to RESET, destroy): forgets the message in progress and everything owed. */
    void reset(RoceQp qp) {
        ResponderState r = qp.resp;
        r.recv = null;
        r.lastOpcode = -1;
        r.writeMr = null;
        r.dropOwed();
        r.nakSeqSent = false;
        r.errorAfterNak = false;
        r.msn = 0;
        r.dropMsg = false;
        r.forgetAtomics();
    }

    /**
     * Control path, before a QP goes away: sends the ACK it still owes (deferred or coalesced).
     *
     * @return true when it sent something
     */
    boolean sendOwedAck(RoceQp qp) {
        ResponderState r = qp.resp;
        if ((qp.state == QpState.RTR || qp.state == QpState.RTS || qp.state == QpState.SQD)
                && (r.ackPending || r.ackDueAt != 0)) {
            r.ackCycle = engine.cycle - 1;
            if (r.ackDueAt != 0) {
                r.ackDueAt = engine.now;
            }
            output(qp, Engine.QP_SEND_BUDGET);
            return true;
        }
        return false;
    }

    void onRequest(RoceQp qp, MemorySegment pkt, int opcode, int mask, int hdr, int payload) {
        QpState s = qp.state;
        if (s != QpState.RTR && s != QpState.RTS && s != QpState.SQD && s != QpState.SQE || qp.resp.errorAfterNak) {
            engine.counters.increment(Counter.RCVD_BAD_STATE);
            return;
        }
        qp.packetIn(); // the first in RTR: COMM_EST
        int psn = Bth.psn(pkt, 0);
        int d = Psn.diff(psn, qp.resp.ePsn);
        if (qp.unreliable) {
            if (!ucInSequence(qp, psn, d, mask)) {
                return;
            }
            d = 0; // in sequence, or resynchronised at this FIRST/ONLY
        }
        if (d > 0) {
            engine.counters.increment(Counter.OUT_OF_SEQ_REQUEST);
            if (!qp.resp.nakSeqSent) {
                qp.resp.nakSeqSent = true;
                queueNak(qp, Aeth.NAK_PSN_SEQ_ERR, qp.resp.ePsn, false);
            }
            return;
        }
        if (d < 0) {
            engine.counters.increment(Counter.DUPLICATE_REQUEST);
            duplicate(qp, pkt, opcode, mask, psn);
            return;
        }
        int last = qp.resp.lastOpcode < 0 ? -1 : qp.resp.lastOpcode & IbOpcode.OPERATION_MASK; // UC: as RC's
        boolean inSend = last == IbOpcode.RC_SEND_FIRST || last == IbOpcode.RC_SEND_MIDDLE;
        boolean inWrite = last == IbOpcode.RC_RDMA_WRITE_FIRST || last == IbOpcode.RC_RDMA_WRITE_MIDDLE;
        boolean continues = (mask & IbOpcode.FIRST) == 0 && (mask & (IbOpcode.MIDDLE | IbOpcode.LAST)) != 0
                && (mask & (IbOpcode.READ | IbOpcode.ATOMIC)) == 0;
        boolean ok = inSend ? continues && (mask & IbOpcode.SEND) != 0
                : inWrite ? continues && (mask & IbOpcode.WRITE) != 0
                : !continues;
        if (!ok) {
            errorNak(qp, Aeth.NAK_INVALID_REQUEST, psn);
            return;
        }
        boolean firstOrOnly = (mask & IbOpcode.FIRST) != 0;
        boolean lastOrOnly = (mask & IbOpcode.LAST) != 0;
        if ((mask & (IbOpcode.SEND | IbOpcode.WRITE)) != 0) {
            int mtu = qp.mtuBytes;
            if (lastOrOnly ? payload > mtu : payload != mtu) {
                errorNak(qp, Aeth.NAK_INVALID_REQUEST, psn);
                return;
            }
        }
        if ((mask & IbOpcode.SEND) != 0) {
            if (!send(qp, pkt, opcode, mask, psn, hdr, payload, firstOrOnly, lastOrOnly)) {
                return;
            }
        } else if ((mask & IbOpcode.WRITE) != 0) {
            if (!write(qp, pkt, opcode, mask, psn, hdr, payload, firstOrOnly, lastOrOnly)) {
                return;
            }
        } else if ((mask & IbOpcode.READ) != 0) {
            read(qp, pkt, psn);
            return;
        } else if ((mask & IbOpcode.ATOMIC) != 0) {
            atomic(qp, pkt, opcode, psn);
            return;
        } else {
            errorNak(qp, Aeth.NAK_INVALID_REQUEST, psn);
            return;
        }
        qp.resp.ePsn = Psn.add(qp.resp.ePsn, 1);
        qp.resp.nakSeqSent = false;
        qp.resp.lastOpcode = lastOrOnly ? -1 : opcode;
        if (qp.unreliable) {
            return; // UC: no ACKs
        }
        if (Bth.ackReq(pkt, 0)) {
            if (qp.resp.ackPending) {
                engine.counters.increment(Counter.ACK_DEFERRED);
            } else {
                qp.resp.ackCycle = engine.cycle;
            }
            qp.resp.ackPending = true;
            engine.schedule(qp);
        } else if (qp.resp.ackDueAt == 0) {
            // no ACK asked for: one still goes out within the coalescing delay, so that a requester
            // that asks only when it needs one is never left waiting for its retransmit timer
            qp.resp.ackDueAt = engine.now + ACK_COALESCE_NANOS;
            engine.schedule(qp);
        }
    }

    /**
     * UC's PSN check (rxe_resp.c check_psn for IB_QPT_UC): a packet out of sequence, or any packet while a
     * message is being dropped, drops the message in progress (lost: no completion, its receive WQE stays for
     * the next message) unless it starts a new message (FIRST/ONLY), where the responder resynchronises.
     *
     * @return true when the packet is to be processed (with ePSN at its PSN)
     */
    private boolean ucInSequence(RoceQp qp, int psn, int d, int mask) {
        ResponderState r = qp.resp;
        if (d == 0 && !r.dropMsg) {
            return true;
        }
        engine.counters.increment(Counter.OUT_OF_SEQ_REQUEST);
        if ((mask & IbOpcode.FIRST) != 0) {
            if (!r.dropMsg && r.lastOpcode >= 0) {
                engine.counters.increment(Counter.UC_DROPPED_MSGS); // a message in progress lost its end
            }
            r.dropMsg = false;
            abandonMessage(r);
            r.ePsn = psn;
            return true;
        }
        dropUcMessage(qp);
        return false;
    }

    /** UC: the message in progress is lost (no completion); later packets are dropped until a FIRST/ONLY. */
    private void dropUcMessage(RoceQp qp) {
        if (!qp.resp.dropMsg) {
            qp.resp.dropMsg = true;
            engine.counters.increment(Counter.UC_DROPPED_MSGS);
        }
        abandonMessage(qp.resp);
    }

    private static void abandonMessage(ResponderState r) {
        r.recv = null; // the receive WQE was not consumed: the next message takes it
        r.recvOffset = 0;
        r.writeMr = null;
        r.lastOpcode = -1;
    }

    /** The preallocated 40 bytes a UD receive's GRH is built in before it is scattered. */
    private final MemorySegment grh = java.lang.foreign.Arena.ofAuto().allocate(Grh.LENGTH, 8);

    /**
     * A UD datagram (rxe_resp.c for IB_QPT_UD): the Q_Key must be the QP's (else dropped and counted, no
     * completion); it takes the next receive WQE (none: dropped and counted, UD has no RNR), which gets the
     * 40-byte GRH (the packet's IP header as rxe writes it) and then the payload (a datagram longer than the
     * receive is dropped and counted, the receive kept, as rxe); the completion has the
     * source QP from the DETH, the GRH flag and byte_len including the 40 bytes. No PSN check, no ACK.
     */
    void onDatagram(RoceQp qp, MemorySegment pkt, int opcode, int hdr, int payload, Endpoint src, Endpoint dst) {
        QpState s = qp.state;
        if (s != QpState.RTR && s != QpState.RTS && s != QpState.SQD && s != QpState.SQE) {
            engine.counters.increment(Counter.RCVD_BAD_STATE);
            return;
        }
        int deth = IbOpcode.offset(opcode, IbOpcode.DETH);
        if (Deth.qkey(pkt, deth) != qp.qkey) {
            engine.counters.increment(Counter.RCVD_BAD_QKEY);
            return;
        }
        RecvWqe r = qp.peekRecv(); // the QP's own queue or its SRQ
        if (r == null) {
            engine.counters.increment(Counter.UD_DROPPED_NO_RECV);
            return;
        }
        int srcQp = Deth.srcQp(pkt, deth);
        if (Grh.LENGTH + (long) payload > r.capacity) {
            // rxe's class D for UD: dropped, no completion, the receive stays for the next datagram
            engine.counters.increment(Counter.RCVD_TOO_LONG);
            return;
        }
        r = qp.takeRecv(); // from an SRQ: taken for good (a copy), its limit may fire
        int udpLength = 8 + hdr + payload + Bth.padCnt(pkt, 0) + Icrc.LENGTH;
        writeGrh(grh, src, dst, udpLength, roce.link.receivedHopLimit(), roce.link.receivedTrafficClass());
        if (!Sgl.scatter(engine.context.keys, qp, r, 0, grh, 0, Grh.LENGTH)
                || !Sgl.scatter(engine.context.keys, qp, r, Grh.LENGTH, pkt, hdr, payload)) {
            completeRecv(qp, r, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, WorkCompletion.GRH, srcQp);
            engine.enterError(qp); // a bad receive WQE (rxe's class A): the QP fails, the rest is flushed
            return;
        }
        int flags = WorkCompletion.GRH | (Bth.se(pkt, 0) ? WorkCompletion.SOLICITED : 0);
        int imm = 0;
        int immOff = IbOpcode.offset(opcode, IbOpcode.IMMDT);
        if (immOff >= 0) {
            imm = ImmDt.imm(pkt, immOff);
            flags |= WorkCompletion.WITH_IMM;
        }
        completeRecv(qp, r, WcStatus.SUCCESS, WcOpcode.RECV, Grh.LENGTH + payload, imm, flags, srcQp);
    }

    /**
     * The 40 bytes in front of a UD receive: over IPv6 the IPv6 header, over IPv4 zeros then the IPv4 header at
     * byte 20 (rxe's layout, where it is the packet's own IP header). Addresses and lengths are the packet's, and so
     * are the hop limit (TTL) and traffic class (TOS) when the link reports them (native sockets); a link that cannot
     * ({@code DatagramChannel}) leaves hop limit 64 and class 0. The IPv6 flow label is 0. Allocation-free.
     *
     * @param hopLimit     the datagram's hop limit or TTL, -1 when unknown
     * @param trafficClass the datagram's traffic class or TOS, -1 when unknown
     */
    static void writeGrh(MemorySegment g, Endpoint src, Endpoint dst, int udpLength, int hopLimit, int trafficClass) {
        int hops = hopLimit >= 0 ? hopLimit : GRH_HOP_LIMIT;
        int tclass = trafficClass >= 0 ? trafficClass : 0;
        g.fill((byte) 0);
        if (src.isIpv6()) {
            g.set(BE32, 0, (6 << 28) | (tclass << 20));
            g.set(BE16, 4, (short) udpLength);
            g.set(ValueLayout.JAVA_BYTE, 6, (byte) 17);
            g.set(ValueLayout.JAVA_BYTE, 7, (byte) hops);
            MemorySegment.copy(src.ipv6Bytes(), 0, g, ValueLayout.JAVA_BYTE, 8, 16);
            MemorySegment.copy(dst.ipv6Bytes(), 0, g, ValueLayout.JAVA_BYTE, 24, 16);
            return;
        }
        int o = Grh.IPV4_OFFSET;
        g.set(BE32, o, (0x45 << 24) | (tclass << 16) | (20 + udpLength));
        g.set(BE32, o + 4, 0x4000); // ID 0, don't fragment
        g.set(BE32, o + 8, (hops << 24) | (17 << 16));
        g.set(BE32, o + 12, src.ipv4());
        g.set(BE32, o + 16, dst.ipv4());
        int sum = 0;
        for (int i = 0; i < 20; i += 2) {
            sum += g.get(BE16, o + i) & 0xFFFF;
        }
        sum = (sum & 0xFFFF) + (sum >>> 16);
        sum = (sum & 0xFFFF) + (sum >>> 16);
        g.set(BE16, o + 10, (short) ~sum);
    }

    /** The hop limit / TTL written into a UD receive's GRH when the link does not report the datagram's own. */
    static final int GRH_HOP_LIMIT = 64;
    private static final ValueLayout.OfInt BE32 =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort BE16 =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private boolean recvAvailable(RoceQp qp) {
        return qp.peekRecv() != null; // the QP's own queue or its SRQ
    }

    private boolean send(RoceQp qp, MemorySegment pkt, int opcode, int mask, int psn, int hdr, int payload,
                         boolean first, boolean last) {
        if (first) {
            RecvWqe taken = qp.takeRecv(); // from an SRQ: taken for good, its limit may fire
            if (taken == null) {
                rnrNak(qp, psn);
                return false;
            }
            qp.resp.recv = taken;
            qp.resp.recvOffset = 0;
        }
        RecvWqe r = qp.resp.recv;
        if (qp.resp.recvOffset + payload > r.capacity) {
            if (qp.unreliable) { // rxe's class D for UC: the message is lost, the receive stays for the next
                engine.counters.increment(Counter.RCVD_TOO_LONG);
                dropUcMessage(qp);
                return false;
            }
            completeRecv(qp, r, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
            errorNak(qp, Aeth.NAK_INVALID_REQUEST, psn);
            return false;
        }
        if (!Sgl.scatter(engine.context.keys, qp, r, qp.resp.recvOffset, pkt, hdr, payload)) {
            completeRecv(qp, r, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
            if (qp.unreliable) { // a bad receive WQE is the receiver's own fault (rxe's class A): its QP fails
                abandonMessage(qp.resp);
                engine.enterError(qp);
                return false;
            }
            errorNak(qp, Aeth.NAK_REMOTE_OP, psn);
            return false;
        }
        qp.resp.recvOffset += payload;
        if (last) {
            int flags = (Bth.se(pkt, 0) ? WorkCompletion.SOLICITED : 0);
            int imm = 0;
            if ((mask & IbOpcode.IMMDT) != 0) {
                imm = ImmDt.imm(pkt, IbOpcode.offset(opcode, IbOpcode.IMMDT));
                flags |= WorkCompletion.WITH_IMM;
            } else if ((mask & IbOpcode.IETH) != 0) {
                imm = Ieth.rkey(pkt, IbOpcode.offset(opcode, IbOpcode.IETH));
                Mr target = engine.context.keys.lookup(imm);
                if (target == null || !target.invalidateFor(qp.pd, qp.qpn)) {
                    // a key this QP may not invalidate: the peer learns it as a remote access error
                    completeRecv(qp, r, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                    refuse(qp, Counter.RCVD_BAD_KEY, psn);
                    return false;
                }
                flags |= WorkCompletion.WITH_INV;
            }
            completeRecv(qp, r, WcStatus.SUCCESS, WcOpcode.RECV, (int) qp.resp.recvOffset, imm, flags);
            qp.resp.msn = Psn.add(qp.resp.msn, 1);
        }
        return true;
    }

    private boolean write(RoceQp qp, MemorySegment pkt, int opcode, int mask, int psn, int hdr, int payload,
                          boolean first, boolean last) {
        boolean withImm = (mask & IbOpcode.IMMDT) != 0;
        if (withImm && !recvAvailable(qp)) {
            rnrNak(qp, psn);
            return false;
        }
        if (first) {
            int reth = IbOpcode.offset(opcode, IbOpcode.RETH);
            long va = Reth.va(pkt, reth);
            long len = Integer.toUnsignedLong(Reth.dmaLength(pkt, reth));
            Mr mr = null;
            if ((qp.accessFlags & Access.REMOTE_WRITE) == 0) {
                refuse(qp, Counter.RCVD_NO_ACCESS, psn);
                return false;
            }
            if (len > 0) {
                mr = engine.context.keys.lookup(Reth.rkey(pkt, reth));
                if (mr == null || !mr.permitsRemote(qp, Access.REMOTE_WRITE, va, len)) {
                    refuse(qp, Mr.refusal(mr, qp, Access.REMOTE_WRITE, va, len), psn);
                    return false;
                }
            }
            qp.resp.writeMr = mr;
            qp.resp.writeRkey = Reth.rkey(pkt, reth);
            qp.resp.writeVa = va;
            qp.resp.writeRemaining = len;
            qp.resp.writeTotal = len;
        }
        if (payload > qp.resp.writeRemaining || (last && payload != qp.resp.writeRemaining)) {
            errorNak(qp, Aeth.NAK_INVALID_REQUEST, psn);
            return false;
        }
        if (payload > 0) {
            // each packet's range checked again through the key (rxe's check_rkey for every WRITE packet): the region
            // may have been deregistered, invalidated or registered again elsewhere since the first (found in review)
            long va = qp.resp.writeVa;
            Mr mr = remote(qp, qp.resp.writeMr, qp.resp.writeRkey, Access.REMOTE_WRITE, va, payload);
            if (mr == null || !place(pkt, hdr, mr, va, payload)) {
                refuse(qp, Mr.refusal(mr, qp, Access.REMOTE_WRITE, va, payload), psn);
                return false;
            }
            qp.resp.writeVa += payload;
            qp.resp.writeRemaining -= payload;
        }
        if (last) {
            if (withImm) {
                RecvWqe r = qp.takeRecv(); // present: checked above
                int imm = ImmDt.imm(pkt, IbOpcode.offset(opcode, IbOpcode.IMMDT));
                int flags = WorkCompletion.WITH_IMM | (Bth.se(pkt, 0) ? WorkCompletion.SOLICITED : 0);
                completeRecv(qp, r, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) qp.resp.writeTotal, imm, flags);
            }
            qp.resp.writeMr = null;
            qp.resp.msn = Psn.add(qp.resp.msn, 1);
        }
        return true;
    }

    /**
     * @return the live region {@code rkey} names now that grants {@code needed} on {@code [va, va + len)} through
     *         {@code qp}, with its memory still alive; else null
     */
    private Mr remote(RoceQp qp, Mr known, int rkey, int needed, long va, long len) {
        // the region found for the request's first packet still answers to its rkey while it is open and its key
        // unchanged (what the table would return: a region's key never changes, a fast registration's changes
        // with each REG_MR), which spares the table's lookup per packet; a window is always looked up
        Mr mr = known != null && known.kind < Mr.MW_TYPE_1 && known.key == rkey && !known.isClosed() ? known
                : engine.context.keys.lookup(rkey);
        return mr != null && mr.permitsRemote(qp, needed, va, len) && mr.segment.scope().isAlive() ? mr : null;
    }

    /** Copies a WRITE packet's payload into the region; false when its memory went away meanwhile (another thread). */
    private static boolean place(MemorySegment pkt, int hdr, Mr mr, long va, int payload) {
        try {
            MemorySegment.copy(pkt, hdr, mr.segment, va - mr.address, payload);
            return true;
        } catch (IllegalStateException | IndexOutOfBoundsException e) {
            return false;
        }
    }

    private void read(RoceQp qp, MemorySegment pkt, int psn) {
        long va = Reth.va(pkt, Bth.LENGTH);
        int rkey = Reth.rkey(pkt, Bth.LENGTH);
        long len = Integer.toUnsignedLong(Reth.dmaLength(pkt, Bth.LENGTH));
        if ((qp.accessFlags & Access.REMOTE_READ) == 0) {
            refuse(qp, Counter.RCVD_NO_ACCESS, psn);
            return;
        }
        Mr mr = null;
        if (len > 0) {
            mr = engine.context.keys.lookup(rkey);
            if (mr == null || !mr.permitsRemote(qp, Access.REMOTE_READ, va, len)) {
                refuse(qp, Mr.refusal(mr, qp, Access.REMOTE_READ, va, len), psn);
                return;
            }
        }
        if (qp.resp.resCount == qp.resp.resCapacity) {
            return; // no room to queue the response: dropped unacknowledged, the requester retries
        }
        int npkts = (int) Math.max(1, (len + qp.mtuBytes - 1) / qp.mtuBytes);
        qp.resp.msn = Psn.add(qp.resp.msn, 1);
        addResource(qp, false, psn, mr, va, len, 0);
        qp.resp.resRkey[(qp.resp.resHead + qp.resp.resCount - 1) % qp.resp.resCapacity] = rkey;
        qp.resp.ePsn = Psn.add(qp.resp.ePsn, npkts);
        qp.resp.nakSeqSent = false;
        qp.resp.lastOpcode = -1;
    }

    private void atomic(RoceQp qp, MemorySegment pkt, int opcode, int psn) {
        long va = AtomicEth.va(pkt, Bth.LENGTH);
        int rkey = AtomicEth.rkey(pkt, Bth.LENGTH);
        if ((va & 7) != 0) {
            errorNak(qp, Aeth.NAK_INVALID_REQUEST, psn); // IBA 9.4.5: atomics must be 8-byte aligned
            return;
        }
        if ((qp.accessFlags & Access.REMOTE_ATOMIC) == 0) {
            refuse(qp, Counter.RCVD_NO_ACCESS, psn);
            return;
        }
        Mr mr = engine.context.keys.lookup(rkey);
        if (mr == null || !mr.permitsRemote(qp, Access.REMOTE_ATOMIC, va, 8)) {
            refuse(qp, Mr.refusal(mr, qp, Access.REMOTE_ATOMIC, va, 8), psn);
            return;
        }
        if (qp.resp.resCount == qp.resp.resCapacity) {
            return; // no room to queue the response: dropped unacknowledged, the requester retries
        }
        long operand = AtomicEth.swapAdd(pkt, Bth.LENGTH);
        long off = va - mr.address;
        long original;
        if (opcode == IbOpcode.RC_COMPARE_SWAP) {
            original = (long) ATOMIC_LONG.compareAndExchange(mr.segment, off, AtomicEth.compare(pkt, Bth.LENGTH), operand);
        } else {
            original = (long) ATOMIC_LONG.getAndAdd(mr.segment, off, operand);
        }
        qp.resp.rememberAtomic(psn, original);
        qp.resp.msn = Psn.add(qp.resp.msn, 1);
        addResource(qp, true, psn, null, 0, 8, original);
        qp.resp.ePsn = Psn.add(qp.resp.ePsn, 1);
        qp.resp.nakSeqSent = false;
        qp.resp.lastOpcode = -1;
    }

    /** A request PSN before ePSN: re-ACK SEND/WRITE, execute READ again, replay an atomic's original value. */
    private void duplicate(RoceQp qp, MemorySegment pkt, int opcode, int mask, int psn) {
        if ((mask & IbOpcode.READ) != 0) {
            long va = Reth.va(pkt, Bth.LENGTH);
            long len = Integer.toUnsignedLong(Reth.dmaLength(pkt, Bth.LENGTH));
            int rkey = Reth.rkey(pkt, Bth.LENGTH);
            Mr mr = null;
            if (len > 0) {
                mr = engine.context.keys.lookup(rkey);
                if (mr == null || !mr.permitsRemote(qp, Access.REMOTE_READ, va, len)) {
                    return;
                }
            }
            for (int k = 0; k < qp.resp.resCount; k++) {
                int i = (qp.resp.resHead + k) % qp.resp.resCapacity;
                if (!qp.resp.resAtomic[i] && qp.resp.resPsn[i] == psn) {
                    qp.resp.resMr[i] = mr;
                    qp.resp.resRkey[i] = rkey;
                    qp.resp.resVa[i] = va;
                    qp.resp.resLen[i] = len;
                    qp.resp.resSent[i] = 0;
                    return;
                }
            }
            if (qp.resp.resCount < qp.resp.resCapacity) {
                addResource(qp, false, psn, mr, va, len, 0);
                qp.resp.resRkey[(qp.resp.resHead + qp.resp.resCount - 1) % qp.resp.resCapacity] = rkey;
            }
        } else if ((mask & IbOpcode.ATOMIC) != 0) {
            int i = qp.resp.atomicAt(psn);
            if (i >= 0 && qp.resp.resCount < qp.resp.resCapacity) {
                addResource(qp, true, psn, null, 0, 8, qp.resp.atomicOrig[i]);
            }
        } else {
            qp.resp.ackPending = true;
            engine.schedule(qp);
        }
    }

    private void addResource(RoceQp qp, boolean atomic, int psn, Mr mr, long va, long len, long orig) {
        int i = (qp.resp.resHead + qp.resp.resCount) % qp.resp.resCapacity;
        qp.resp.resAtomic[i] = atomic;
        qp.resp.resPsn[i] = psn;
        qp.resp.resMr[i] = mr;
        qp.resp.resVa[i] = va;
        qp.resp.resLen[i] = len;
        qp.resp.resSent[i] = 0;
        qp.resp.resOrig[i] = orig;
        qp.resp.resMsn[i] = qp.resp.msn;
        qp.resp.resCount++;
        engine.schedule(qp);
    }

    private void rnrNak(RoceQp qp, int psn) {
        if (qp.unreliable) {
            dropUcMessage(qp); // UC: no receive posted, the message is lost (rxe: drop_msg)
            return;
        }
        engine.counters.increment(Counter.SEND_RNR_ERR);
        qp.resp.nakSeqSent = true; // later packets of the window are dropped silently until the retry
        queueNak(qp, Aeth.RNR_NAK | qp.minRnrTimer, psn, false);
    }

    /** A NAK sent, by its reason (error path). */
    private void countNak(int syndrome) {
        switch (syndrome) {
            case Aeth.NAK_PSN_SEQ_ERR -> engine.counters.increment(Counter.SENT_NAK_SEQ_ERR);
            case Aeth.NAK_INVALID_REQUEST -> engine.counters.increment(Counter.SENT_NAK_INV_REQ);
            case Aeth.NAK_REMOTE_ACCESS -> engine.counters.increment(Counter.SENT_NAK_REM_ACCESS);
            case Aeth.NAK_REMOTE_OP -> engine.counters.increment(Counter.SENT_NAK_REM_OP);
            default -> { } // RNR NAKs: send_rnr_err
        }
    }

    /** A remote access refused: counted by its reason, then NAKed (Remote Access Error) or, on UC, dropped. */
    private void refuse(RoceQp qp, Counter reason, int psn) {
        engine.counters.increment(reason);
        errorNak(qp, Aeth.NAK_REMOTE_ACCESS, psn);
    }

    private void errorNak(RoceQp qp, int syndrome, int psn) {
        if (syndrome == Aeth.NAK_INVALID_REQUEST) {
            engine.counters.increment(Counter.RCVD_INV_REQ);
        }
        if (qp.unreliable) {
            dropUcMessage(qp); // UC has no NAKs: a bad request loses its message, the QP goes on (rxe: drop_msg)
            return;
        }
        queueNak(qp, syndrome, psn, true);
    }

    private void queueNak(RoceQp qp, int syndrome, int psn, boolean fatal) {
        qp.resp.nakPendingSyndrome = syndrome;
        qp.resp.nakPendingPsn = psn;
        qp.resp.ackPending = false;
        qp.resp.errorAfterNak |= fatal;
        engine.schedule(qp);
    }

    private void completeRecv(RoceQp qp, RecvWqe r, WcStatus st, WcOpcode op, int len, int imm, int flags) {
        completeRecv(qp, r, st, op, len, imm, flags, qp.destQpn);
    }

    private void completeRecv(RoceQp qp, RecvWqe r, WcStatus st, WcOpcode op, int len, int imm, int flags, int srcQp) {
        long wrId = r.wrId;
        // the slot is free before the completion is visible: a poster that reposts on seeing it finds room
        qp.recvDone();
        qp.recvCq.push(wrId, st, op, len, imm, flags, qp.qpn, srcQp);
        qp.resp.recv = null;
        engine.counters.increment(Counter.RDMA_RECVS);
    }

    // ------------------------------------------------------------------ output, in PSN order

    int output(RoceQp qp, int budget) {
        int sent = 0;
        MemorySegment tx;
        while (qp.resp.resCount > 0 && sent < budget) {
            tx = roce.txSeg; // a batching link holds each packet until it flushes: every packet its own slot
            int i = qp.resp.resHead;
            if (qp.resp.resAtomic[i]) {
                Bth.write(tx, 0, IbOpcode.RC_ATOMIC_ACKNOWLEDGE, false, false, 0, 0xFFFF, qp.destQpn, false,
                        qp.resp.resPsn[i]);
                Aeth.write(tx, Bth.LENGTH, Aeth.ACK | Aeth.CREDIT_UNLIMITED, qp.resp.resMsn[i]);
                AtomicAckEth.write(tx, Bth.LENGTH + Aeth.LENGTH, qp.resp.resOrig[i]);
                if (!roce.send(qp, Bth.LENGTH + Aeth.LENGTH + AtomicAckEth.LENGTH)) {
                    return sent;
                }
                popResource(qp);
            } else {
                int mtu = qp.mtuBytes;
                long off = qp.resp.resSent[i];
                long len = qp.resp.resLen[i];
                int index = (int) (off / mtu);
                int payload = (int) Math.min(mtu, len - off);
                boolean first = off == 0;
                boolean last = off + mtu >= len;
                int opcode = first ? (last ? IbOpcode.RC_RDMA_READ_RESPONSE_ONLY : IbOpcode.RC_RDMA_READ_RESPONSE_FIRST)
                        : (last ? IbOpcode.RC_RDMA_READ_RESPONSE_LAST : IbOpcode.RC_RDMA_READ_RESPONSE_MIDDLE);
                int pad = (-payload) & 3;
                Bth.write(tx, 0, opcode, false, false, pad, 0xFFFF, qp.destQpn, false, Psn.add(qp.resp.resPsn[i], index));
                int hdr = IbOpcode.headerLength(opcode);
                if (hdr > Bth.LENGTH) {
                    Aeth.write(tx, Bth.LENGTH, Aeth.ACK | Aeth.CREDIT_UNLIMITED, qp.resp.resMsn[i]);
                }
                if (payload > 0) {
                    // each response packet's range checked again through the key (rxe's rxe_recheck_mr): the region
                    // may have been deregistered, invalidated or registered again elsewhere since the request (found
                    // in review). Gone: the responses queued are dropped, the requester gets a remote access NAK
                    long va = qp.resp.resVa[i] + off;
                    Mr mr = remote(qp, qp.resp.resMr[i], qp.resp.resRkey[i], Access.REMOTE_READ, va, payload);
                    if (mr == null || !fetch(mr, va, tx, hdr, payload)) {
                        int psn = qp.resp.resPsn[i];
                        Counter reason = Mr.refusal(mr, qp, Access.REMOTE_READ, va, payload);
                        while (qp.resp.resCount > 0) {
                            popResource(qp);
                        }
                        refuse(qp, reason, psn);
                        break; // the NAK below
                    }
                }
                roce.pad(hdr + payload, payload);
                if (!roce.send(qp, hdr + payload + pad)) {
                    return sent;
                }
                qp.resp.resSent[i] = off + payload;
                if (last) {
                    popResource(qp);
                }
            }
            sent++;
        }
        if (qp.resp.resCount > 0) {
            return sent;
        }
        tx = roce.txSeg;
        if (qp.resp.nakPendingSyndrome >= 0) {
            Bth.write(tx, 0, IbOpcode.RC_ACKNOWLEDGE, false, false, 0, 0xFFFF, qp.destQpn, false, qp.resp.nakPendingPsn);
            Aeth.write(tx, Bth.LENGTH, qp.resp.nakPendingSyndrome, qp.resp.msn);
            if (!roce.send(qp, Bth.LENGTH + Aeth.LENGTH)) {
                return sent;
            }
            engine.counters.increment(Counter.SEND_NAKS);
            engine.counters.increment(qp.stats, QpCounter.SENT_NAKS);
            int syndrome = qp.resp.nakPendingSyndrome;
            countNak(syndrome);
            qp.resp.nakPendingSyndrome = -1;
            if (qp.resp.errorAfterNak) {
                // IBA 11.6.3: the responder's own QP learns why it stopped as an affiliated event
                engine.context.events.raise(syndrome == Aeth.NAK_REMOTE_ACCESS ? AsyncEvent.Type.QP_ACCESS_ERR
                        : syndrome == Aeth.NAK_INVALID_REQUEST ? AsyncEvent.Type.QP_REQ_ERR : AsyncEvent.Type.QP_FATAL, qp);
                engine.enterError(qp);
            }
            sent++;
        } else if ((qp.resp.ackPending && (engine.cycle != qp.resp.ackCycle
                || Psn.diff(qp.resp.ePsn, qp.resp.ackSentPsn) > RoceQp.MAX_UNACKED_PSNS / 2))
                || (qp.resp.ackDueAt != 0 && engine.now - qp.resp.ackDueAt >= 0)) {
            // one duty cycle late, so that a reply the application posts on seeing the data leaves
            // first (the ACK is off the critical path of a ping-pong); sooner when the window fills
            Bth.write(tx, 0, IbOpcode.RC_ACKNOWLEDGE, false, false, 0, 0xFFFF, qp.destQpn, false,
                    Psn.add(qp.resp.ePsn, -1));
            Aeth.write(tx, Bth.LENGTH, Aeth.ACK | Aeth.CREDIT_UNLIMITED, qp.resp.msn);
            if (!roce.send(qp, Bth.LENGTH + Aeth.LENGTH)) {
                return sent;
            }
            engine.counters.increment(Counter.SENT_ACKS);
            qp.resp.ackPending = false;
            qp.resp.ackDueAt = 0;
            qp.resp.ackSentPsn = qp.resp.ePsn;
            sent++;
        }
        return sent;
    }

    /** Copies a READ response packet's payload out of the region; false when its memory went away meanwhile. */
    private static boolean fetch(Mr mr, long va, MemorySegment tx, int hdr, int payload) {
        try {
            MemorySegment.copy(mr.segment, va - mr.address, tx, hdr, payload);
            return true;
        } catch (IllegalStateException | IndexOutOfBoundsException e) {
            return false;
        }
    }

    private static void popResource(RoceQp qp) {
        qp.resp.resMr[qp.resp.resHead] = null;
        qp.resp.resHead = (qp.resp.resHead + 1) % qp.resp.resCapacity;
        qp.resp.resCount--;
    }
}

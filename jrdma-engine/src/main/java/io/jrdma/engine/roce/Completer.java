package io.jrdma.engine.roce;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.core.Wqe;
import io.jrdma.engine.util.Psn;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.Aeth;
import io.jrdma.wire.AtomicAckEth;
import io.jrdma.wire.Bth;
import io.jrdma.wire.IbOpcode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The completer (rxe_comp.c): consumes ACKs, NAKs, READ responses and atomic ACKs, retires
 * send WQEs in order (a completion only when signaled or failed), runs the retransmit and RNR
 * timers and turns NAKs into go-back-N retries or error completions. Any progress resets the
 * retry counters, so a QP fails with RETRY_EXC_ERR only after {@code retry_cnt} retries in a
 * row without a response.
 */
final class Completer {
    private static final ValueLayout.OfLong NATIVE_LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private final RoceTransport roce;
    private final Engine engine;

    Completer(RoceTransport roce) {
        this.roce = roce;
        this.engine = roce.engine;
    }

    /** Control path (modify with SQ_PSN): nothing before the first PSN is outstanding. */
    void start(RoceQp qp, int sqPsn) {
        qp.comp.lastAckedPsn = (sqPsn - 1) & 0xFFFFFF;
    }

    /** Control path (modify with RETRY_CNT / RNR_RETRY): the retry budgets start full. */
    void reloadRetries(RoceQp qp, boolean retry, boolean rnr) {
        if (retry) {
            qp.comp.retryLeft = qp.retryCnt;
        }
        if (rnr) {
            qp.comp.rnrRetryLeft = qp.rnrRetry;
        }
    }

    /** The requester asks, while an RNR NAK holds it: @return true (and the wait ends) once the RNR timer ran out */
    boolean rnrWaitOver(RoceQp qp) {
        if (engine.now - qp.comp.rnrDeadline < 0) {
            return false;
        }
        qp.comp.rnrWaiting = false;
        return true;
    }

    /**
     * The requester sent packets (once per QP and run, after the last): the retransmit timer runs a whole
     * timeout from now. rxe arms it at the first packet and re-arms it on each response, which is the same
     * while a burst leaves in microseconds; here a burst can take longer than the timeout (a loaded host, a
     * deep window toward a slow peer), and timing from its first packet retransmitted packets the peer had
     * had no time to answer (seen against rxe: a 64 KiB SEND's packets took 69 ms to leave, and its
     * go-back-N came 2 ms after the last). One clock read per QP and run, not per packet.
     */
    void armRetransmit(RoceQp qp) {
        long t = RoceTransport.timeoutNanos(qp.timeout);
        qp.comp.retransmitDeadline = t == 0 ? 0 : engine.clock.nanoTime() + t;
    }

    /** Go-back-N from {@code psn} (the requester rewinds; this role remembers where, so a repeated NAK does not). */
    private void rewind(RoceQp qp, int psn) {
        if (roce.requester.rewind(qp, psn)) {
            qp.comp.lastRewindPsn = psn;
        }
    }

    void onResponse(RoceQp qp, MemorySegment pkt, int opcode, int mask, int hdr, int payload) {
        QpState s = qp.state;
        if (s != QpState.RTS && s != QpState.SQD && s != QpState.SQE) {
            engine.counters.increment(Counter.RCVD_BAD_STATE);
            return;
        }
        int psn = Bth.psn(pkt, 0);
        if (qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        if (opcode == IbOpcode.RC_ACKNOWLEDGE) {
            int syn = Aeth.syndrome(pkt, Bth.LENGTH);
            if (Aeth.isAck(syn)) {
                onAck(qp, psn);
            } else if (Aeth.isRnrNak(syn)) {
                onRnrNak(qp, psn, Aeth.rnrTimer(syn));
            } else if (syn == Aeth.NAK_PSN_SEQ_ERR) {
                onSeqNak(qp, psn);
            } else {
                WcStatus st = switch (syn) {
                    case Aeth.NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
                    case Aeth.NAK_REMOTE_ACCESS -> WcStatus.REM_ACCESS_ERR;
                    case Aeth.NAK_REMOTE_OP -> WcStatus.REM_OP_ERR;
                    default -> WcStatus.BAD_RESP_ERR;
                };
                onErrorNak(qp, psn, st);
            }
        } else if ((mask & IbOpcode.READ_RESP) != 0) {
            onReadResponse(qp, pkt, opcode, mask, psn, hdr, payload);
        } else if (opcode == IbOpcode.RC_ATOMIC_ACKNOWLEDGE) {
            onAtomicAck(qp, psn, AtomicAckEth.originalData(pkt, IbOpcode.offset(opcode, IbOpcode.ATMACK)));
        } else {
            engine.counters.increment(Counter.RCVD_MALFORMED);
        }
    }

    /**
     * In SQD, once nothing is outstanding (every request started has completed, none is part way sent), raises
     * SQ_DRAINED for the QP, once per drain (IBA 11.6.3's affiliated event; rxe raises it when its completer catches
     * up with the requester in its drain state; found in review: it was never raised).
     */
    void checkDrained(RoceQp qp) {
        if (qp.state == QpState.SQD && !qp.drainedRaised && qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            qp.drainedRaised = true;
            engine.context.events.raise(io.jrdma.verbs.AsyncEvent.Type.SQ_DRAINED, qp);
        }
    }

    private static boolean partlySent(RoceQp qp) {
        return qp.req.index != qp.sqProducerAcquire() && qp.sq[(int) (qp.req.index & qp.sqMask)].started;
    }

    /** @return true if {@code psn} is a PSN this QP has sent (before its next PSN) */
    private static boolean sent(RoceQp qp, int psn) {
        return Psn.diff(psn, qp.req.psn) < 0 || highestStartedLastPsnAtLeast(qp, psn);
    }

    private static boolean highestStartedLastPsnAtLeast(RoceQp qp, int psn) {
        // after a rewind reqPsn moved back, but responses for PSNs sent before the rewind are still valid
        long p = qp.sqProducerAcquire();
        for (long i = qp.sqConsumer; i < p; i++) {
            Wqe w = qp.sq[(int) (i & qp.sqMask)];
            if (!w.started) {
                break;
            }
            if (Psn.diff(psn, w.lastPsn) <= 0) {
                return true;
            }
        }
        return false;
    }

    private void onAck(RoceQp qp, int psn) {
        if (!sent(qp, psn)) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        if (Psn.diff(psn, qp.comp.lastAckedPsn) > 0) {
            qp.comp.lastAckedPsn = psn;
            progress(qp);
        }
        while (qp.sqConsumer != qp.req.index) {
            Wqe w = head(qp);
            if (w.localError >= 0 || Psn.diff(w.lastPsn, psn) > 0) {
                break;
            }
            if (w.isReadOrAtomic()) {
                // an ACK beyond an unanswered READ/atomic: its responses were lost (implicit NAK)
                retry(qp, w);
                break;
            }
            retire(qp, w, WcStatus.SUCCESS);
        }
        completeLocalErrors(qp);
        rearm(qp);
    }

    private void onSeqNak(RoceQp qp, int psn) {
        engine.counters.increment(Counter.RCVD_SEQ_ERR);
        engine.counters.increment(qp.stats, QpCounter.RCVD_NAKS);
        if (!sent(qp, psn) && psn != qp.req.psn) {
            return;
        }
        if (completeBefore(qp, psn) || qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            return;
        }
        Wqe w = head(qp);
        engine.counters.increment(qp.stats, QpCounter.RETRANSMITS); // what follows the NAKed PSN goes again
        if (w.isReadOrAtomic() && Psn.diff(psn, w.firstPsn) > 0) {
            retry(qp, w);
        } else if (psn != qp.comp.lastRewindPsn) {
            rewind(qp, psn);
        }
    }

    private void onRnrNak(RoceQp qp, int psn, int timer) {
        engine.counters.increment(Counter.RCVD_RNR_ERR);
        engine.counters.increment(qp.stats, QpCounter.RCVD_RNR_NAKS);
        if (completeBefore(qp, psn) || qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            return;
        }
        if (qp.comp.rnrRetryLeft == 0) {
            engine.counters.increment(Counter.RNR_RETRY_EXCEEDED_ERR);
            fail(qp, head(qp), WcStatus.RNR_RETRY_EXC_ERR);
            return;
        }
        if (qp.rnrRetry != 7) {
            qp.comp.rnrRetryLeft--;
        }
        rewind(qp, psn);
        qp.comp.rnrWaiting = true;
        qp.comp.rnrDeadline = engine.now + RoceTransport.rnrNanos(timer);
        rearm(qp);
    }

    private void onErrorNak(RoceQp qp, int psn, WcStatus status) {
        engine.counters.increment(status == WcStatus.REM_INV_REQ_ERR ? Counter.RCVD_NAK_INV_REQ
                : status == WcStatus.REM_ACCESS_ERR ? Counter.RCVD_NAK_REM_ACCESS : Counter.RCVD_NAK_REM_OP);
        engine.counters.increment(qp.stats, QpCounter.RCVD_NAKS);
        if (completeBefore(qp, psn) || qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            return;
        }
        fail(qp, head(qp), status);
    }

    /**
     * Retires the SEND/WRITE WQEs that end before {@code psn} (a NAK for psn acknowledges
     * everything before it). @return true if the QP went to ERROR on the way
     */
    private boolean completeBefore(RoceQp qp, int psn) {
        while (qp.sqConsumer != qp.req.index) {
            Wqe w = head(qp);
            if (w.localError >= 0 || w.isReadOrAtomic() || Psn.diff(w.lastPsn, psn) >= 0) {
                break;
            }
            retire(qp, w, WcStatus.SUCCESS);
            progress(qp);
        }
        return qp.state == QpState.ERROR;
    }

    private void onReadResponse(RoceQp qp, MemorySegment pkt, int opcode, int mask, int psn, int hdr, int payload) {
        completeBefore(qp, psn);
        if (qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        Wqe w = head(qp);
        if (w.opcode != WrOpcode.RDMA_READ || !w.started || Psn.diff(psn, w.firstPsn) < 0
                || Psn.diff(psn, w.lastPsn) > 0) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        if (qp.comp.readIndex != qp.sqConsumer) {
            qp.comp.readIndex = qp.sqConsumer;
            qp.comp.readPsn = w.firstPsn;
        }
        int d = Psn.diff(psn, qp.comp.readPsn);
        if (d < 0) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        if (d > 0) {
            if (qp.comp.readPsn != qp.comp.lastRewindPsn) {
                rewind(qp, qp.comp.readPsn);
            }
            return;
        }
        int index = Psn.diff(psn, w.firstPsn);
        boolean last = index == w.npkts - 1;
        // a READ re-issued from the middle (go-back-N) is answered FIRST..LAST from there, so only
        // the end of the message and each packet's length are fixed by the position
        boolean opLast = (mask & IbOpcode.LAST) != 0;
        long off = (long) index * qp.mtuBytes;
        long expect = Math.min(qp.mtuBytes, w.length - off);
        if (last != opLast || payload != expect) {
            engine.counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        if (!Sgl.scatter(engine.context.keys, qp, w, off, pkt, hdr, payload)) {
            regionGone(qp, w); // rxe's completer: LOC_PROT_ERR when the response's copy fails
            return;
        }
        qp.comp.readPsn = Psn.add(psn, 1);
        if (Psn.diff(psn, qp.comp.lastAckedPsn) > 0) {
            qp.comp.lastAckedPsn = psn;
        }
        progress(qp);
        if (last) {
            qp.comp.readIndex = -1;
            retire(qp, w, WcStatus.SUCCESS);
            completeLocalErrors(qp);
        }
        rearm(qp);
    }

    private void onAtomicAck(RoceQp qp, int psn, long original) {
        completeBefore(qp, psn);
        if (qp.sqConsumer == qp.req.index) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        Wqe w = head(qp);
        if (!w.opcode.isAtomic() || !w.started || w.firstPsn != psn) {
            engine.counters.increment(Counter.RCVD_STALE_RESPONSE);
            return;
        }
        Mr mr = Sgl.region(engine.context.keys, qp, w, 0, w.sgeAddr[0], 8);
        if (mr == null) {
            regionGone(qp, w);
            return;
        }
        try {
            mr.segment.set(NATIVE_LONG, w.sgeAddr[0] - mr.address, original);
        } catch (IllegalStateException e) { // its memory was freed after the check
            regionGone(qp, w);
            return;
        }
        if (Psn.diff(psn, qp.comp.lastAckedPsn) > 0) {
            qp.comp.lastAckedPsn = psn;
        }
        progress(qp);
        retire(qp, w, WcStatus.SUCCESS);
        completeLocalErrors(qp);
        rearm(qp);
    }

    /** Retries a READ/atomic WQE from the first response PSN not yet received. */
    private void retry(RoceQp qp, Wqe w) {
        int from = qp.comp.readIndex == qp.sqConsumer ? qp.comp.readPsn : w.firstPsn;
        if (from != qp.comp.lastRewindPsn) {
            rewind(qp, from);
        }
    }

    /**
     * Retires the local operations (BIND_MW, REG_MR, LOCAL_INV) the requester executed once they reach the head
     * of the send queue: they complete in order, after everything posted before them.
     */
    void completeLocalOps(RoceQp qp) {
        while (qp.state != QpState.ERROR && qp.sqConsumer != qp.req.index) {
            Wqe w = head(qp);
            if (!w.started || !w.isLocalOp()) {
                return;
            }
            retire(qp, w, WcStatus.SUCCESS);
        }
    }

    /** Completes, in order, WQEs the requester found locally bad (LOC_PROT_ERR...), once all before them are done. */
    void completeLocalErrors(RoceQp qp) {
        if (qp.state == QpState.ERROR || qp.sqConsumer == qp.sqProducerAcquire()) {
            return;
        }
        Wqe w = head(qp);
        if (w.localError >= 0) { // a local operation's, a validation's, or a region gone part way (started)
            fail(qp, w, WcStatus.of(w.localError));
        }
    }

    /**
     * The head READ's or atomic's response arrived, and the region it lands in is gone since validation
     * ({@link Sgl#region}): nothing of it is written, the WQE fails with LOC_PROT_ERR and the QP enters ERROR.
     */
    private void regionGone(RoceQp qp, Wqe w) {
        qp.comp.readIndex = -1;
        fail(qp, w, WcStatus.LOC_PROT_ERR);
    }

    /** Timer duty (rxe's retransmit timer and RNR wait), once per cycle per active QP. */
    void checkTimers(RoceQp qp) {
        if (qp.comp.retransmitDeadline == 0 || engine.now - qp.comp.retransmitDeadline < 0 || qp.comp.rnrWaiting) {
            return;
        }
        if (qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            qp.comp.retransmitDeadline = 0;
            return;
        }
        engine.counters.increment(Counter.COMPLETER_RETRY_ERR);
        engine.counters.increment(qp.stats, QpCounter.RETRANSMITS);
        if (qp.comp.retryLeft == 0) {
            engine.counters.increment(Counter.RETRY_EXCEEDED_ERR);
            fail(qp, head(qp), WcStatus.RETRY_EXC_ERR);
            return;
        }
        qp.comp.retryLeft--;
        Wqe w = head(qp);
        int from;
        if (w.isReadOrAtomic()) {
            from = qp.comp.readIndex == qp.sqConsumer ? qp.comp.readPsn : w.firstPsn;
        } else {
            int next = Psn.add(qp.comp.lastAckedPsn, 1);
            from = Psn.diff(next, w.firstPsn) > 0 ? next : w.firstPsn;
        }
        rewind(qp, from);
        qp.comp.retransmitDeadline = engine.now + RoceTransport.timeoutNanos(qp.timeout);
    }

    private Wqe head(RoceQp qp) {
        return qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
    }

    private void progress(RoceQp qp) {
        qp.comp.retryLeft = qp.retryCnt;
        qp.comp.rnrRetryLeft = qp.rnrRetry;
        qp.comp.lastRewindPsn = -1;
    }

    private void rearm(RoceQp qp) {
        if (qp.sqConsumer == qp.req.index && !partlySent(qp)) {
            qp.comp.retransmitDeadline = 0;
        } else {
            long t = RoceTransport.timeoutNanos(qp.timeout);
            qp.comp.retransmitDeadline = t == 0 ? 0 : engine.now + t;
        }
    }

    /** Retires the head WQE: a completion if signaled or failed; frees the slot for the poster. */
    private void retire(RoceQp qp, Wqe w, WcStatus status) {
        if (w.isReadOrAtomic() && w.started) {
            roce.requester.readAtomicDone(qp);
        }
        boolean complete = w.signaled || status != WcStatus.SUCCESS;
        long wrId = w.wrId;
        WrOpcode op = w.opcode;
        int len = op.isAtomic() ? 8 : (int) w.length;
        if (status == WcStatus.SUCCESS && (op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM)) {
            engine.counters.increment(Counter.RDMA_SENDS);
        }
        w.started = false;
        // the slot is free before the completion is visible: a poster that posts on seeing it finds room
        qp.sqConsumerRelease(qp.sqConsumer + 1); // acquire partner: Qp.postSend's full check
        if (complete) {
            qp.sendCq.push(wrId, status, WcOpcode.of(op), len, 0, 0, qp.qpn, 0);
        }
        roce.requester.retired(qp);
        if (status == WcStatus.SUCCESS && !w.isLocalOp()) {
            completeLocalOps(qp); // local operations that waited for this one
        }
        checkDrained(qp);
    }

    /** UC/UD: the requester sent the head WQE's last packet; with no ACK to wait for, it is done. */
    void retireSent(RoceQp qp) {
        retire(qp, head(qp), WcStatus.SUCCESS);
    }

    /** Completes the head WQE with an error and moves the QP to ERROR; the rest is flushed. */
    private void fail(RoceQp qp, Wqe w, WcStatus status) {
        retire(qp, w, status);
        engine.enterError(qp);
    }
}

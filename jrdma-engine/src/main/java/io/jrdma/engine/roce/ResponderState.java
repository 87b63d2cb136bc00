package io.jrdma.engine.roce;

import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.RecvWqe;

/**
 * The responder's state of one RoCE QP (rxe's {@code struct rxe_resp_info}, {@code qp->resp},
 * and its queue of READ/atomic responses, rxe's {@code struct resp_res}): written by the
 * {@link Responder} only, on the engine thread.
 */
final class ResponderState {
    static final int ATOMIC_HISTORY = 16;

    /** the expected PSN of the next request */
    int ePsn;
    /** the message sequence number of the last completed request */
    int msn;
    /** a PSN sequence error NAK was sent and no in-order packet has arrived since */
    boolean nakSeqSent;
    /** opcode of the last in-sequence request packet, to check FIRST/MIDDLE/LAST order; -1 = none */
    int lastOpcode = -1;
    /** the receive WQE a multi-packet SEND is being placed into */
    RecvWqe recv;
    long recvOffset;
    /** the region, address and bytes left of the WRITE being placed */
    Mr writeMr;
    long writeVa;
    long writeRemaining;
    long writeTotal;
    /** an ACK is owed at the end of this cycle ({@link #ackCycle}) */
    boolean ackPending;
    long ackCycle;
    /** when the ACK owed for packets that did not request one falls due; 0 when none is owed */
    long ackDueAt;
    int ackSentPsn;
    /** a NAK to send (its AETH syndrome), -1 when none */
    int nakPendingSyndrome = -1;
    int nakPendingPsn;
    boolean errorAfterNak;
    /** UC: a packet of the message in progress was lost; the rest is dropped until the next FIRST/ONLY (rxe's drop_msg) */
    boolean dropMsg;

    // responder resources (rxe's resp_res): queued READ and atomic responses, in PSN order
    int resCapacity;
    boolean[] resAtomic;
    int[] resPsn;
    Mr[] resMr;
    long[] resVa;
    long[] resLen;
    long[] resSent;
    long[] resOrig;
    int[] resMsn;
    int resHead;
    int resCount;
    /** the last atomic requests' PSNs and results, to answer a duplicate without executing it again */
    final int[] atomicPsn = new int[ATOMIC_HISTORY];
    final long[] atomicOrig = new long[ATOMIC_HISTORY];
    int atomicNext;

    ResponderState() {
        sizeResources(1);
    }

    /**
     * Responder resources: room for twice the negotiated incoming READ/atomic depth (IRD), so
     * that re-executed duplicates fit beside new requests; a request beyond it is dropped
     * unanswered and retried by the peer. Sized on the control path, when the queue is empty.
     */
    void sizeResources(int ird) {
        int cap = 2 * Math.max(1, ird) + 4;
        if (cap == resCapacity || resCount > 0) {
            return;
        }
        resCapacity = cap;
        resHead = 0;
        resAtomic = new boolean[cap];
        resPsn = new int[cap];
        resMr = new Mr[cap];
        resVa = new long[cap];
        resLen = new long[cap];
        resSent = new long[cap];
        resOrig = new long[cap];
        resMsn = new int[cap];
    }

    /** Nothing more is owed to the peer (the QP enters ERROR). */
    void dropOwed() {
        resCount = 0;
        ackPending = false;
        ackDueAt = 0;
        nakPendingSyndrome = -1;
    }
}

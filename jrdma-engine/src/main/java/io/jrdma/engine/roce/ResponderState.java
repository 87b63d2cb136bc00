package io.jrdma.engine.roce;

import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.RecvWqe;

/**
 * The responder's state of one RoCE QP (rxe's {@code struct rxe_resp_info}, {@code qp->resp},
 * and its queue of READ/atomic responses, rxe's {@code struct resp_res}): written by the
 * {@link Responder} only, on the engine thread.
 */
final class ResponderState {
    /** the fewest atomics the history keeps (more when the negotiated IRD is larger: {@link #sizeResources}) */
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
    /** the region, address and bytes left of the WRITE being placed, and its rkey (resolved again per packet) */
    Mr writeMr;
    int writeRkey;
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
    /** a READ's rkey, resolved again for each response packet */
    int[] resRkey;
    long[] resVa;
    long[] resLen;
    long[] resSent;
    long[] resOrig;
    int[] resMsn;
    int resHead;
    int resCount;
    /**
     * the last atomic requests' PSNs and results, to answer a duplicate without executing it again: as many as the
     * negotiated IRD lets the requester have outstanding (at least {@link #ATOMIC_HISTORY}), so that every atomic a
     * lost ACK makes it send again is still there (rxe keeps max_dest_rd_atomic resources); {@link #atomicCount}
     * of them hold one (none after a RESET: the history of the QP's last connection answers nothing of the next)
     */
    int[] atomicPsn = new int[ATOMIC_HISTORY];
    long[] atomicOrig = new long[ATOMIC_HISTORY];
    int atomicNext;
    int atomicCount;

    ResponderState() {
        sizeResources(1);
    }

    /**
     * Responder resources: room for twice the negotiated incoming READ/atomic depth (IRD), so
     * that re-executed duplicates fit beside new requests; a request beyond it is dropped
     * unanswered and retried by the peer. Sized on the control path, when the queue is empty.
     */
    void sizeResources(int ird) {
        int history = Math.max(ATOMIC_HISTORY, ird);
        if (history != atomicPsn.length) {
            atomicPsn = new int[history];
            atomicOrig = new long[history];
            atomicNext = 0;
            atomicCount = 0;
        }
        int cap = 2 * Math.max(1, ird) + 4;
        if (cap == resCapacity || resCount > 0) {
            return;
        }
        resCapacity = cap;
        resHead = 0;
        resAtomic = new boolean[cap];
        resPsn = new int[cap];
        resMr = new Mr[cap];
        resRkey = new int[cap];
        resVa = new long[cap];
        resLen = new long[cap];
        resSent = new long[cap];
        resOrig = new long[cap];
        resMsn = new int[cap];
    }

    /** Nothing more is owed to the peer (the QP enters ERROR). */
    /** Records an executed atomic's original value under its PSN. */
    void rememberAtomic(int psn, long original) {
        atomicPsn[atomicNext] = psn;
        atomicOrig[atomicNext] = original;
        atomicNext = (atomicNext + 1) % atomicPsn.length;
        atomicCount = Math.min(atomicCount + 1, atomicPsn.length);
    }

    /** @return the history's index of the atomic executed at {@code psn}, or -1 */
    int atomicAt(int psn) {
        for (int k = 1; k <= atomicCount; k++) { // the newest first
            int i = (atomicNext - k + atomicPsn.length) % atomicPsn.length;
            if (atomicPsn[i] == psn) {
                return i;
            }
        }
        return -1;
    }

    /** Forgets the atomics' history (RESET): a new connection's duplicates are not answered from the last one's. */
    void forgetAtomics() {
        atomicNext = 0;
        atomicCount = 0;
    }

    void dropOwed() {
        resCount = 0;
        ackPending = false;
        ackDueAt = 0;
        nakPendingSyndrome = -1;
    }
}

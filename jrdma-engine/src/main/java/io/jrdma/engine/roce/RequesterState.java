package io.jrdma.engine.roce;

/**
 * The requester's state of one RoCE QP (rxe's {@code struct rxe_req_info}, {@code qp->req}):
 * written by the {@link Requester} only, on the engine thread; the completer reads it and asks
 * the requester to change it ({@link Requester#rewind}, {@link Requester#retired}).
 */
final class RequesterState {
    /** the send-queue index of the WQE being sent (rxe: {@code wqe_index}) */
    long index;
    /** the byte offset within that WQE of the next packet */
    long offset;
    /** the PSN of the next request packet */
    int psn;
    /** packets sent since the last one that asked for an ACK */
    int pktsSinceAckReq;
    /** READ/atomic requests sent and not yet completed (bounded by the QP's max_rd_atomic) */
    int rdAtomicInFlight;

    /** Back to the start of the queue (modify to RESET, destroy, flush): nothing is in flight. */
    void restart(long sqIndex) {
        index = sqIndex;
        offset = 0;
        rdAtomicInFlight = 0;
    }
}

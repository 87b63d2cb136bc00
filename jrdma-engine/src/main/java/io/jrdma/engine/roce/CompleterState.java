package io.jrdma.engine.roce;

/**
 * The completer's state of one RoCE QP (rxe's {@code struct rxe_comp_info}, {@code qp->comp},
 * with the retransmit and RNR timers): written by the {@link Completer} only, on the engine thread.
 */
final class CompleterState {
    /** the highest PSN acknowledged */
    int lastAckedPsn;
    /** the next READ response PSN the head READ WQE expects */
    int readPsn;
    /** the send-queue index of the READ whose responses are arriving; -1 when none */
    long readIndex = -1;
    /** retries left before RETRY_EXC_ERR (reloaded on progress) */
    int retryLeft;
    /** RNR retries left before RNR_RETRY_EXC_ERR (reloaded on progress) */
    int rnrRetryLeft;
    /** when the retransmit timer fires; 0 when it is not armed */
    long retransmitDeadline;
    /** the PSN the requester was last rewound to, so a repeated NAK does not rewind it again; -1 when none */
    int lastRewindPsn = -1;
    /** an RNR NAK stopped the requester until {@link #rnrDeadline} */
    boolean rnrWaiting;
    /** when the RNR wait ends */
    long rnrDeadline;

    /** The timers stop (the QP enters ERROR). */
    void stopTimers() {
        retransmitDeadline = 0;
        rnrWaiting = false;
    }
}

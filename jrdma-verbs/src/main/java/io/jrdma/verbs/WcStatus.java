package io.jrdma.verbs;

/** Work completion statuses, in the order and meaning of {@code ibv_wc_status} (IBA 11.6.2). */
public enum WcStatus {
    /** The work request completed; its data is in place. */
    SUCCESS,
    /** Local length error: a received message was longer than the receive's scatter list. */
    LOC_LEN_ERR,
    /** Local QP operation error: an internal consistency error of the QP (not reported by jrdma's software providers). */
    LOC_QP_OP_ERR,
    /** Local EE context operation error (reliable datagram; not used by jrdma). */
    LOC_EEC_OP_ERR,
    /** Local protection error: an SGE outside its region, a bad lkey, or a region without the access needed. */
    LOC_PROT_ERR,
    /** Flushed: the QP was in ERROR when the request was processed (posted after, or queued behind, a failure). */
    WR_FLUSH_ERR,
    /**
     * Memory window bind error: a bind (type 1 or type 2) whose region lacks {@link Access#MW_BIND}, whose
     * range is outside the region, whose window belongs to another PD, or a type 2 bind of a window that is
     * still bound (invalidate it first). The QP goes to ERROR.
     */
    MW_BIND_ERR,
    /** Bad response: an unexpected opcode or length in a response from the responder. */
    BAD_RESP_ERR,
    /** Local access error on a local data buffer (not reported by jrdma's software providers). */
    LOC_ACCESS_ERR,
    /** Remote invalid request: the responder NAKed the request as invalid (for example an operation it does not support). */
    REM_INV_REQ_ERR,
    /**
     * Remote access error: a bad rkey, an access outside the region or window, a region or window without the
     * remote access asked, or a key that was invalidated (SEND_WITH_INV, LOCAL_INV) or whose window was re-bound.
     */
    REM_ACCESS_ERR,
    /** Remote operation error: the responder could not complete the operation (a remote operational NAK or iWARP TERMINATE). */
    REM_OP_ERR,
    /** Transport retry counter exceeded: no ACK came after the retries ({@link QpAttr#retryCnt(int)}); the peer is gone. */
    RETRY_EXC_ERR,
    /** RNR retry counter exceeded: the peer had no receive posted after the retries ({@link QpAttr#rnrRetry(int)}). */
    RNR_RETRY_EXC_ERR,
    /** Local RDD violation (reliable datagram; not used by jrdma). */
    LOC_RDD_VIOL_ERR,
    /** Remote invalid RD request (reliable datagram; not used by jrdma). */
    REM_INV_RD_REQ_ERR,
    /** Remote aborted error (not reported by jrdma's software providers). */
    REM_ABORT_ERR,
    /** Invalid EE context number (reliable datagram; not used by jrdma). */
    INV_EECN_ERR,
    /** Invalid EE context state (reliable datagram; not used by jrdma). */
    INV_EEC_STATE_ERR,
    /** Fatal error of the device (not reported by jrdma's software providers). */
    FATAL_ERR,
    /** Response timeout error (not reported by jrdma's software providers). */
    RESP_TIMEOUT_ERR,
    /** Any other error (not reported by jrdma's software providers). */
    GENERAL_ERR,
    /** Tag matching error (libibverbs' {@code IBV_WC_TM_ERR}; jrdma has no tag matching). */
    TM_ERR,
    /** Tag matching rendezvous incomplete (libibverbs' {@code IBV_WC_TM_RNDV_INCOMPLETE}; jrdma has no tag matching). */
    TM_RNDV_INCOMPLETE;

    private static final WcStatus[] VALUES = values();

    /**
     * {@return the status for an ordinal, without allocating}
     *
     * @param ordinal 0..{@code values().length - 1}
     * @throws ArrayIndexOutOfBoundsException for another ordinal
     */
    public static WcStatus of(int ordinal) {
        return VALUES[ordinal];
    }
}

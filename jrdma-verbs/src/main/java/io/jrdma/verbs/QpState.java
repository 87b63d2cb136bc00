package io.jrdma.verbs;

/** Queue pair states (IBA 10.3.1), in libibverbs' {@code ibv_qp_state} order. */
public enum QpState {
    /** Just created or reset: no work requests are accepted. */
    RESET,
    /** Initialized: receives may be posted; nothing is sent or received yet. */
    INIT,
    /** Ready to receive: the path and the peer are known; incoming requests are served. */
    RTR,
    /** Ready to send: the normal state of a connected QP. */
    RTS,
    /** Send queue drained: the message in progress finishes, no new one starts (IBA 10.3.1). */
    SQD,
    /** Send queue error (unreliable QP types; an RC QP goes to ERROR instead). */
    SQE,
    /** An error or a disconnect: outstanding and new work requests complete with {@link WcStatus#WR_FLUSH_ERR}. */
    ERROR
}

package io.jrdma.verbs;

/** Queue pair states (IBA 10.3.1), in libibverbs' {@code ibv_qp_state} order. */
public enum QpState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERROR
}

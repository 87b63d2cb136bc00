package io.jrdma.verbs;

/** Work completion statuses, in the order and meaning of {@code ibv_wc_status} (IBA 11.6.2). */
public enum WcStatus {
    SUCCESS, LOC_LEN_ERR, LOC_QP_OP_ERR, LOC_EEC_OP_ERR, LOC_PROT_ERR, WR_FLUSH_ERR, MW_BIND_ERR,
    BAD_RESP_ERR, LOC_ACCESS_ERR, REM_INV_REQ_ERR, REM_ACCESS_ERR, REM_OP_ERR, RETRY_EXC_ERR,
    RNR_RETRY_EXC_ERR, LOC_RDD_VIOL_ERR, REM_INV_RD_REQ_ERR, REM_ABORT_ERR, INV_EECN_ERR,
    INV_EEC_STATE_ERR, FATAL_ERR, RESP_TIMEOUT_ERR, GENERAL_ERR;

    private static final WcStatus[] VALUES = values();

    /** @return the status for an ordinal, without allocating */
    public static WcStatus of(int ordinal) {
        return VALUES[ordinal];
    }
}

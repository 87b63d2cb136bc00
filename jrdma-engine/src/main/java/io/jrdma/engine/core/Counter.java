package io.jrdma.engine.core;

/**
 * Device counters. The first group carries the names of Linux rxe's hw_counters
 * ({@code /sys/class/infiniband/rxe0/ports/1/hw_counters}) with the same meaning; the second
 * group is jrdma's own, for what rxe does not count (malformed input is dropped and counted).
 */
public enum Counter {
    SENT_PKTS("sent_pkts"),
    RCVD_PKTS("rcvd_pkts"),
    DUPLICATE_REQUEST("duplicate_request"),
    OUT_OF_SEQ_REQUEST("out_of_seq_request"),
    RCVD_RNR_ERR("rcvd_rnr_err"),
    SEND_RNR_ERR("send_rnr_err"),
    RCVD_SEQ_ERR("rcvd_seq_err"),
    COMPLETER_RETRY_ERR("completer_retry_err"),
    RETRY_EXCEEDED_ERR("retry_exceeded_err"),
    RNR_RETRY_EXCEEDED_ERR("rnr_retry_exceeded_err"),
    SEND_ERR("send_err"),
    LINK_DOWNED("link_downed"),
    RDMA_SENDS("rdma_sends"),
    RDMA_RECVS("rdma_recvs"),
    ACK_DEFERRED("ack_deferred"),
    // jrdma's own
    RCVD_ICRC_ERR("rcvd_icrc_err"),
    ICRC_IPV4_ID_SOLVED("icrc_ipv4_id_solved"),
    RCVD_MALFORMED("rcvd_malformed"),
    RCVD_UNKNOWN_QP("rcvd_unknown_qp"),
    RCVD_BAD_STATE("rcvd_bad_state"),
    RCVD_BAD_ADDR("rcvd_bad_addr"),
    RCVD_STALE_RESPONSE("rcvd_stale_response"),
    SEND_NAKS("sent_naks"),
    SENT_ACKS("sent_acks"),
    CQ_OVERFLOW("cq_overflow"),
    /** asynchronous events queued ({@code ibv_get_async_event}'s) */
    ASYNC_EVENTS("async_events"),
    /** asynchronous events dropped because the context's event queue was full */
    ASYNC_EVENT_OVERFLOW("async_event_overflow"),
    ENGINE_ERRORS("engine_errors"),
    /** UD: a datagram whose DETH Q_Key is not the QP's (IBA 10.2.4.2): dropped, no completion */
    RCVD_BAD_QKEY("rcvd_bad_qkey"),
    /** UD: a datagram for a QP with no receive posted: dropped (UD has no RNR) */
    UD_DROPPED_NO_RECV("ud_dropped_no_recv"),
    /** UD/UC: a message longer than the receive it would take: dropped, the receive kept for the next (rxe's class D) */
    RCVD_TOO_LONG("rcvd_too_long"),
    /** UC: messages lost to a PSN gap, an out-of-order opcode, a missing receive or a bad rkey: no completion */
    UC_DROPPED_MSGS("uc_dropped_msgs"),
    /** UD on shm0: datagrams the sender dropped: no such receiving UD QP (or not taking datagrams), or its ring full */
    UD_DROPPED_SENDS("ud_dropped_sends"),
    // iWARP (jrdma's own names; siw has no hw_counters)
    SENT_TERMINATES("sent_terminates"),
    RCVD_TERMINATES("rcvd_terminates"),
    RCVD_MPA_CRC_ERR("rcvd_mpa_crc_err"),
    // issue 16: bytes, NAKs and refused requests by reason (jrdma's own names)
    /** bytes of the packets sent: UDP payloads (ICRC included) on RoCE, FPDUs on iWARP */
    SENT_BYTES("sent_bytes"),
    /** bytes of the packets received, before any check */
    RCVD_BYTES("rcvd_bytes"),
    /** NAKs sent by reason (RNR NAKs: send_rnr_err); each is also in sent_naks */
    SENT_NAK_SEQ_ERR("sent_nak_seq_err"),
    SENT_NAK_INV_REQ("sent_nak_inv_req"),
    SENT_NAK_REM_ACCESS("sent_nak_rem_access"),
    SENT_NAK_REM_OP("sent_nak_rem_op"),
    /** NAKs received by reason (RNR: rcvd_rnr_err, PSN sequence: rcvd_seq_err) */
    RCVD_NAK_INV_REQ("rcvd_nak_inv_req"),
    RCVD_NAK_REM_ACCESS("rcvd_nak_rem_access"),
    RCVD_NAK_REM_OP("rcvd_nak_rem_op"),
    /** requests refused by reason: a key that names no live region or window of the QP's PD (or that it may not invalidate) */
    RCVD_BAD_KEY("rcvd_bad_key"),
    /** a range outside the region or window */
    RCVD_OUT_OF_BOUNDS("rcvd_out_of_bounds"),
    /** an access the region, window or QP does not grant */
    RCVD_NO_ACCESS("rcvd_no_access"),
    /** an invalid request: opcode out of sequence, bad length, misaligned atomic, a SEND longer than its receive */
    RCVD_INV_REQ("rcvd_inv_req");

    private final String rxeName;

    Counter(String rxeName) {
        this.rxeName = rxeName;
    }

    /** @return the counter's name as Linux rxe (or, for jrdma's own, this project) spells it */
    public String counterName() {
        return rxeName;
    }
}

package io.jrdma.engine.core;

/**
 * Per-QP counters, kept in the QP's slot of its context's counters file ({@link StatsFile}) next to the
 * device counters ({@link Counter}). Written by the engine thread only.
 */
public enum QpCounter {
    /**
     * packets (RoCE) or FPDUs (iWARP) sent for the QP, retransmissions and ACKs included; shared memory: slots
     * written into the peer QP's inbound ring (a SEND's chunks of up to 8 KiB)
     */
    SENT_PKTS("sent_pkts"),
    /** their bytes: the UDP payload (RoCE, ICRC included) or the FPDU (iWARP, MPA header, pad and CRC included) */
    SENT_BYTES("sent_bytes"),
    /**
     * packets or FPDUs received for the QP (after the device's checks: ICRC, QP number, source); shared memory:
     * slots of its inbound ring read
     */
    RCVD_PKTS("rcvd_pkts"),
    RCVD_BYTES("rcvd_bytes"),
    /** requester: times a request was sent again (a retransmit timeout or a PSN sequence NAK) */
    RETRANSMITS("retransmits"),
    /** requester: RNR NAKs received (shared memory: a SEND's slot came back RNR) */
    RCVD_RNR_NAKS("rcvd_rnr_naks"),
    /**
     * responder: NAKs sent (RNR, PSN sequence, invalid request, remote access, remote operation); shared memory:
     * slot results other than done (RNR, a receive too short, a bad receive lkey, a refused invalidation)
     */
    SENT_NAKS("sent_naks"),
    /** requester: NAKs other than RNR received (shared memory: requests the initiator's checks refused, or a NAK in a slot) */
    RCVD_NAKS("rcvd_naks"),
    /**
     * requester, shared memory: requests done (a WRITE, READ or atomic on the peer's memory, a SEND or WRITE with
     * immediate data the receiver consumed), counted when they complete successfully
     */
    OPS("ops"),
    /** requester, shared memory: the bytes of those requests (8 per atomic) */
    OP_BYTES("op_bytes"),
    /** requester, shared memory: requests refused because the peer has no such key (or withdrew it) */
    REM_BAD_KEY("rem_bad_key"),
    /** requester, shared memory: requests refused because the range is not inside the peer's region */
    REM_OUT_OF_BOUNDS("rem_out_of_bounds"),
    /**
     * requester, shared memory: requests refused because the peer's QP or region does not allow the operation,
     * or the region is of another protection domain
     */
    REM_NO_ACCESS("rem_no_access"),
    /** requests and receives of the QP completed with WR_FLUSH_ERR (every provider) */
    FLUSHED("flushed");

    private final String label;

    QpCounter(String label) {
        this.label = label;
    }

    /** @return the name {@code jrdma stat} prints */
    public String label() {
        return label;
    }
}

package io.jrdma.engine.core;

/**
 * Per-QP counters, kept in the QP's slot of its context's counters file ({@link StatsFile}) next to the
 * device counters ({@link Counter}). Written by the engine thread only.
 */
public enum QpCounter {
    /** packets (RoCE) or FPDUs (iWARP) sent for the QP, retransmissions and ACKs included */
    SENT_PKTS("sent_pkts"),
    /** their bytes: the UDP payload (RoCE, ICRC included) or the FPDU (iWARP, MPA header, pad and CRC included) */
    SENT_BYTES("sent_bytes"),
    /** packets or FPDUs received for the QP (after the device's checks: ICRC, QP number, source) */
    RCVD_PKTS("rcvd_pkts"),
    RCVD_BYTES("rcvd_bytes"),
    /** requester: times a request was sent again (a retransmit timeout or a PSN sequence NAK) */
    RETRANSMITS("retransmits"),
    /** requester: RNR NAKs received */
    RCVD_RNR_NAKS("rcvd_rnr_naks"),
    /** responder: NAKs sent (RNR, PSN sequence, invalid request, remote access, remote operation) */
    SENT_NAKS("sent_naks"),
    /** requester: NAKs other than RNR received */
    RCVD_NAKS("rcvd_naks");

    private final String label;

    QpCounter(String label) {
        this.label = label;
    }

    /** @return the name {@code jrdma stat} prints */
    public String label() {
        return label;
    }
}

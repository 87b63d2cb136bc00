package io.jrdma.verbs;

/**
 * Queue pair transport service types ({@code ibv_qp_type}). Which types a provider implements is in
 * {@link DeviceAttr#qpTypes()}; creating a QP of another type throws
 * {@link RdmaException.Errno#EOPNOTSUPP}. jrdma's providers implement RC today.
 */
public enum QpType {
    /** Reliable connection: acknowledged, retried, in order; every operation (SEND, WRITE, READ, atomics). */
    RC,
    /**
     * Unreliable connection: SEND and RDMA WRITE (with or without immediate data) to one peer QP, no
     * acknowledgements and no retries: a lost packet drops its whole message, silently at the requester.
     */
    UC,
    /**
     * Unreliable datagram: SENDs of at most one path MTU to any UD QP, addressed per request by an
     * {@link AddressHandle}, a remote QP number and a Q_Key; each receive starts with 40 bytes of GRH.
     */
    UD
}

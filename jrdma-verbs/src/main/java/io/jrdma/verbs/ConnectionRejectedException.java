package io.jrdma.verbs;

/**
 * The peer rejected a connection request ({@code RDMA_CM_EVENT_REJECTED}): errno ECONNREFUSED,
 * with the private data the server sent along.
 */
public class ConnectionRejectedException extends RdmaException {
    private static final long serialVersionUID = 1L;
    private final transient byte[] privateData;
    /** the rejection's reason code (0 when the CM carries none) */
    private final int reason;

    /**
     * Makes the exception a client's {@code connect} throws.
     *
     * @param message     what was rejected, by whom
     * @param privateData the server's private data (copied)
     */
    public ConnectionRejectedException(String message, byte[] privateData) {
        this(message, 0, privateData);
    }

    /**
     * Makes the exception a client's {@code connect} throws when the rejection carries a reason code.
     *
     * @param message     what was rejected, by whom
     * @param reason      the reason ({@code rdma_cm_event.status} of {@code RDMA_CM_EVENT_REJECTED}): over the
     *                    InfiniBand CM the REJ's reason code (8: nobody listens on the port, 28: the
     *                    application rejected); 0 where the CM carries none
     * @param privateData the server's private data (copied)
     */
    public ConnectionRejectedException(String message, int reason, byte[] privateData) {
        super(Errno.ECONNREFUSED, message);
        this.privateData = privateData.clone();
        this.reason = reason;
    }

    /** {@return the rejection's reason code, as {@code rdma_cm_event.status} gives it (0 when the CM has none)} */
    public int reason() {
        return reason;
    }

    /** {@return what the server sent with its rejection (up to 256 bytes)} */
    public byte[] privateData() {
        return privateData.clone();
    }
}

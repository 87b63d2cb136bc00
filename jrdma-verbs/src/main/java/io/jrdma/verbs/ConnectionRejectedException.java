package io.jrdma.verbs;

/**
 * The peer rejected a connection request ({@code RDMA_CM_EVENT_REJECTED}): errno ECONNREFUSED,
 * with the private data the server sent along.
 */
public class ConnectionRejectedException extends RdmaException {
    private static final long serialVersionUID = 1L;
    private final transient byte[] privateData;

    /**
     * Makes the exception a client's {@code connect} throws.
     *
     * @param message     what was rejected, by whom
     * @param privateData the server's private data (copied)
     */
    public ConnectionRejectedException(String message, byte[] privateData) {
        super(Errno.ECONNREFUSED, message);
        this.privateData = privateData.clone();
    }

    /** {@return what the server sent with its rejection (up to 256 bytes)} */
    public byte[] privateData() {
        return privateData.clone();
    }
}

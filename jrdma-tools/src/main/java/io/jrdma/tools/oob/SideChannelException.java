package io.jrdma.tools.oob;

/** The side channel failed: no peer, a peer that went away, or one that does not speak the protocol. Exit code 1. */
public final class SideChannelException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SideChannelException(String message) {
        super(message);
    }

    public SideChannelException(String message, Throwable cause) {
        super(message, cause);
    }
}

package io.jrdma.wire.mad;

/**
 * A MAD (or the rdma_cm header in its private data) failed a decode check: too short, a
 * version, class, method or attribute this codec does not take, or a field out of range. The
 * receive path catches it, drops the datagram and counts it; it never leaves the GSI agent.
 */
public final class MadFormatException extends Exception {
    private static final long serialVersionUID = 1L;

    /** @param message what was wrong with the datagram */
    public MadFormatException(String message) {
        super(message, null, false, false); // no stack trace: a flood of bad MADs costs little
    }
}

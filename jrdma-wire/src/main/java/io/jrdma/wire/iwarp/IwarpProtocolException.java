package io.jrdma.wire.iwarp;

/** A control-path frame (MPA Request/Reply) was rejected; {@link #error()} says why. */
public final class IwarpProtocolException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient IwarpError error;

    /** An exception for {@code error}, with extra detail appended to its message. */
    public IwarpProtocolException(IwarpError error, String detail) {
        super(detail == null || detail.isEmpty() ? error.message()
                : error.message() + ": " + detail);
        this.error = error;
    }

    /** The reason. */
    public IwarpError error() {
        return error;
    }
}

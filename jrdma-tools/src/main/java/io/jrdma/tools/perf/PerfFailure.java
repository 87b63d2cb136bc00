package io.jrdma.tools.perf;

/** A benchmark that failed: error completion, verification mismatch, timeout, protocol error. Exit code 1. */
public final class PerfFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public PerfFailure(String message) {
        super(message);
    }

    public PerfFailure(String message, Throwable cause) {
        super(message, cause);
    }
}

package io.jrdma.verbs;

/** Who runs a device context's engine (the software NIC). */
public enum ThreadingMode {
    /** One engine thread per device context, started on open: a passive target needs no calls. */
    DEDICATED,
    /**
     * No engine thread: {@link DeviceContext#progress()} (called by {@link CompletionQueue#poll} too)
     * runs the engine in the caller's thread. All calls that drive it must come from one thread at a time.
     */
    INVOKER
}

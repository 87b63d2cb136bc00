package io.jrdma.tools.perf;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Every wait of a run has a deadline: a run fails when nothing happened (no completion, no
 * packet) for the timeout, or when the peer thread of a {@code --loopback} run failed. Cheap
 * enough for the data path: {@link #progress()} is a field store, {@link #idle()} reads the
 * clock every 256th call.
 */
final class Watchdog {
    private final long limitNanos;
    private final AtomicBoolean peerFailed;
    private boolean progressed;
    private long last = System.nanoTime();
    private int idle;
    private String what = "starting";
    /** the peer's side channel: true once it closed; checked at most every {@value #PEER_CHECK_NANOS} ns */
    private java.util.function.BooleanSupplier peerClosed;
    private String peerClosedWhy;
    private long peerCheckedAt;
    private static final long PEER_CHECK_NANOS = 100_000_000L;

    Watchdog(int timeoutSec, AtomicBoolean peerFailed) {
        this.limitNanos = timeoutSec * 1_000_000_000L;
        this.peerFailed = peerFailed;
    }

    long limitNanos() {
        return limitNanos;
    }

    /**
     * Watches the peer's side channel: a wait fails within a fraction of a second once the peer closed it (it
     * stopped or died), not after the timeout.
     */
    void watchPeer(java.util.function.BooleanSupplier closed) {
        watchPeer(closed, "the peer closed the side channel (it stopped or died)");
    }

    /**
     * Watches the peer through {@code gone} (checked at most every 100 ms, so cheap enough for the data path's idle
     * turns): a wait fails with {@code why} once it says the peer is gone. Null stops watching.
     */
    void watchPeer(java.util.function.BooleanSupplier gone, String why) {
        this.peerClosed = gone;
        this.peerClosedWhy = why;
    }

    /** Starts a new wait, named for the error message. */
    void reset(String doing) {
        what = doing;
        last = System.nanoTime();
        progressed = false;
        idle = 0;
    }

    void progress() {
        progressed = true;
    }

    /** An idle turn of a wait loop. */
    void idle() {
        if ((++idle & 255) == 0) {
            check();
        }
    }

    /** Fails when the deadline passed or the peer failed. */
    void check() {
        long now = System.nanoTime();
        if (progressed) {
            progressed = false;
            last = now;
        }
        if (peerFailed != null && peerFailed.get()) {
            throw new PerfFailure("stopped " + what + ": the other side of the loopback run failed");
        }
        if (peerClosed != null && now - peerCheckedAt > PEER_CHECK_NANOS) {
            peerCheckedAt = now;
            if (peerClosed.getAsBoolean()) {
                throw new PerfFailure("stopped " + what + ": " + peerClosedWhy);
            }
        }
        if (now - last > limitNanos) {
            throw new PerfFailure("timed out " + what + ": nothing happened for " + limitNanos / 1_000_000_000L
                    + " s (is the peer still running? see --timeout)");
        }
    }
}

package io.jrdma.verbs;

/** What a dedicated engine thread does when a duty cycle found no work. */
public enum IdleStrategy {
    /** Spin: lowest latency, one core busy. */
    SPIN,
    /** {@link Thread#yield()} between cycles. */
    YIELD,
    /**
     * Spin, then yield, then park for exponentially longer up to 1 ms (longer where the provider's input wakes the
     * engine and nothing of it needs the clock: shared memory with no request in flight, up to its next check of
     * its peers, 20 ms, or 1 s with no peer); a post wakes it at once.
     */
    BACKOFF,
    /**
     * Park between cycles, up to 1 ms or the provider's longer limit as BACKOFF's longest park (lowest CPU; a post
     * wakes it at once, packets wait for the timer).
     */
    PARK
}

package io.jrdma.verbs;

import java.time.Duration;

/**
 * A completion channel ({@code ibv_comp_channel}): a thread blocks in {@link #await} until an
 * armed CQ has a completion, instead of spinning on poll.
 */
public interface CompletionChannel extends AutoCloseable {
    /**
     * Waits for the next CQ event ({@code ibv_get_cq_event} + {@code ibv_ack_cq_events}).
     * In INVOKER mode the waiting thread drives the engine while it waits.
     *
     * @return the CQ that fired, or null when the timeout passed first
     */
    CompletionQueue await(Duration timeout);

    @Override
    void close();
}

package io.jrdma.verbs;

import java.time.Duration;

/**
 * A completion channel ({@code ibv_comp_channel}): a thread blocks in {@link #await} until an
 * armed CQ has a completion, instead of spinning on poll.
 */
public interface CompletionChannel extends AutoCloseable {
    /**
     * Waits for the next CQ event ({@code ibv_get_cq_event} + {@code ibv_ack_cq_events}).
     * In INVOKER mode the waiting thread drives the engine while it waits. The CQ must be
     * re-armed with {@link CompletionQueue#requestNotify(boolean)} for its next event.
     *
     * @param timeout how long to wait at most
     * @return the CQ that fired, or null when the timeout passed first
     */
    CompletionQueue await(Duration timeout);

    /**
     * Destroys the channel; CQs created with it must be closed first, and the device context refuses to close while it is open.
     */
    @Override
    void close();
}

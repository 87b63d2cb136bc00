package io.jrdma.verbs;

/** A completion queue ({@code ibv_cq}). */
public interface CompletionQueue extends AutoCloseable {
    /** @return the number of entries it holds */
    int capacity();

    /**
     * Fills up to {@code wcs.length} completions, oldest first ({@code ibv_poll_cq}); in
     * INVOKER mode it first runs the engine once. Allocation-free.
     *
     * @return how many were filled; 0 when none are waiting
     */
    int poll(WorkCompletion[] wcs);

    /** Polls at most one completion into {@code wc}; returns 1 or 0. */
    int poll(WorkCompletion wc);

    /**
     * Arms the CQ ({@code ibv_req_notify_cq}): the next completion (or, with
     * {@code solicitedOnly}, the next solicited or error completion) signals the channel once.
     */
    void requestNotify(boolean solicitedOnly);

    /** @return the channel this CQ notifies, or null */
    CompletionChannel channel();

    /** Refused (EBUSY) while a QP uses it. */
    @Override
    void close();
}

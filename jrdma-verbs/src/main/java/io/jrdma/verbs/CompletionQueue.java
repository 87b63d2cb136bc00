package io.jrdma.verbs;

/** A completion queue ({@code ibv_cq}). */
public interface CompletionQueue extends AutoCloseable {
    /** {@return the number of entries it holds} */
    int capacity();

    /**
     * Fills up to {@code wcs.length} completions, oldest first ({@code ibv_poll_cq}); in
     * INVOKER mode it first runs the engine once. Allocation-free. One thread polls a CQ at a time.
     *
     * @param wcs caller-owned completion objects, reused across calls
     * @return how many were filled; 0 when none are waiting
     */
    int poll(WorkCompletion[] wcs);

    /**
     * Polls at most one completion into {@code wc}, as {@link #poll(WorkCompletion[])}.
     *
     * @param wc a caller-owned completion object
     * @return 1 if {@code wc} was filled, 0 if none was waiting
     */
    int poll(WorkCompletion wc);

    /**
     * Arms the CQ ({@code ibv_req_notify_cq}): the next completion (or, with
     * {@code solicitedOnly}, the next solicited or error completion) signals the CQ's channel once.
     * Poll after arming, as with libibverbs, so a completion that came before is not missed.
     *
     * @param solicitedOnly notify only for solicited receives and errors
     * @throws RdmaException EINVAL if the CQ was created without a completion channel
     */
    void requestNotify(boolean solicitedOnly);

    /** {@return the channel this CQ notifies, or null} */
    CompletionChannel channel();

    /**
     * Destroys the CQ ({@code ibv_destroy_cq}).
     *
     * @throws RdmaException EBUSY while a QP uses it: close the QP first
     */
    @Override
    void close();
}

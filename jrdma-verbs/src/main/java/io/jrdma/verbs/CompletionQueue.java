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
     * Polls at most one completion into {@code wc}, as {@link #poll(WorkCompletion[])}. In INVOKER mode a
     * provider may instead complete a receive that has arrived straight into {@code wc}, with every check and
     * effect its engine would apply, when no completion is waiting in this CQ and none is armed, and never on two
     * polls in a row, so that the engine still runs at least every other poll (shared memory does so for small
     * SENDs).
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

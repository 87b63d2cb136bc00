package io.jrdma.verbs;

/**
 * A shared receive queue ({@code ibv_srq}): one pool of receives that many QPs of its PD take from
 * (RC, UC and UD), named in their {@link QpInitAttr#srq()}. A QP with an SRQ has no receive queue of
 * its own: {@link QueuePair#postRecv} on it returns EINVAL, receives are posted here, and each
 * completion names the QP that took the message ({@link WorkCompletion#qpNum()}). Made by
 * {@link ProtectionDomain#createSrq}.
 *
 * <p>When a receive is taken and fewer than the armed limit remain, the context raises
 * {@link AsyncEvent.Type#SRQ_LIMIT_REACHED} for this queue once and disarms the limit; set it again with
 * {@link #modify(SrqAttr, int)} to re-arm.
 */
public interface SharedReceiveQueue extends AutoCloseable {
    /** {@return the protection domain it was created in} */
    ProtectionDomain pd();

    /**
     * Changes the depth and/or arms the limit ({@code ibv_modify_srq}). A new depth ({@link SrqAttr#MAX_WR}) may
     * grow the queue or shrink it down to the receives posted and not yet taken, which all stay, in order (as
     * Linux rxe); {@link #query()} then reports it and {@link #postRecv} enforces it. A resize replaces the
     * queue's storage, so, like {@link #postRecv}, it must not run while another thread posts to this queue
     * (one thread at a time posts to a queue). A modify that fails changes nothing.
     *
     * @param attr the new values
     * @param mask which to apply: {@link SrqAttr#MAX_WR}, {@link SrqAttr#LIMIT} or both
     * @throws RdmaException EINVAL for a limit above the depth (the new one when both are given), a depth of 0,
     *                       above {@link DeviceAttr#maxSrqWr()}, below the receives now posted or below the armed
     *                       limit, or an unknown mask bit; EOPNOTSUPP for MAX_WR on a provider that cannot
     *                       resize (no {@link DeviceCap#SRQ_RESIZE})
     */
    void modify(SrqAttr attr, int mask);

    /** {@return the depth, the SGEs per receive and the armed limit (0: disarmed) ({@code ibv_query_srq})} */
    SrqAttr query();

    /**
     * Posts a receive ({@code ibv_post_srq_recv}): the request is copied, so {@code wr} may be reused at
     * once. Allocation-free; never throws for a bad request.
     *
     * @param wr the request
     * @return 0, or an errno value: {@code ENOMEM} (12) when the queue is full, {@code EINVAL} (22) for too
     *         many SGEs or a destroyed queue
     */
    int postRecv(RecvWorkRequest wr);

    /**
     * Destroys the queue ({@code ibv_destroy_srq}); receives still in it are dropped without completions.
     *
     * @throws RdmaException EBUSY while a QP uses it: close the QPs first
     */
    @Override
    void close();
}

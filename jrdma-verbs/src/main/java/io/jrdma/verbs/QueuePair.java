package io.jrdma.verbs;

/**
 * A queue pair ({@code ibv_qp}). Posting copies the request into the queue and returns a
 * status instead of throwing: 0, {@link RdmaException.Errno#ENOMEM} when the queue is full,
 * {@link RdmaException.Errno#EINVAL} for a malformed request (too many SGEs, inline data too
 * long, an opcode the QP type lacks), or {@code EINVAL} in a state that forbids posting.
 * One thread posts to a given queue at a time.
 */
public interface QueuePair extends AutoCloseable {
    /** {@return the QP number (24 bits), which the peer addresses} */
    int qpn();

    /** {@return the transport service type} */
    QpType type();

    /**
     * {@return the current state; it moves to ERROR by itself when a request fails or the peer disconnects}
     */
    QpState state();

    /** {@return the protection domain it was created in} */
    ProtectionDomain pd();

    /** {@return the CQ that receives send-queue completions} */
    CompletionQueue sendCq();

    /** {@return the CQ that receives receive-queue completions} */
    CompletionQueue recvCq();

    /**
     * Moves the QP through its state machine ({@code ibv_modify_qp}), applying the attributes
     * set in {@code attr}. QPs connected through a {@link ConnectionManager} need no call.
     *
     * @param attr the target state and the attributes the transition requires (see {@link QpAttr})
     * @throws RdmaException EINVAL for a transition the state machine forbids, a missing or
     *                       extra attribute (the message names them), or a destroyed QP
     */
    void modify(QpAttr attr);

    /** {@return the current attributes, every field set} */
    QpAttr query();

    /**
     * Posts a send-queue request ({@code ibv_post_send}): the request is copied, so {@code wr} may
     * be reused at once. Allocation-free; never throws for a bad request.
     *
     * @param wr the request
     * @return 0, or an errno value: {@code ENOMEM} (12) when the send queue is full, {@code EINVAL} (22)
     *         for a malformed request (too many SGEs, inline data too long, an atomic not on 8 aligned
     *         bytes) or a state that forbids posting, {@code EMSGSIZE} (90) for a message over 2 GiB,
     *         {@code EOPNOTSUPP} (95) for an operation the transport lacks (atomics and immediate
     *         data over iWARP to a peer that is not jrdma; an opcode the provider does not implement, such
     *         as LOCAL_INV, BIND_MW or REG_MR without {@link DeviceCap#MEM_MGT_EXTENSIONS} or {@link DeviceCap#MEM_WINDOW});
     *         for UD, {@code EINVAL} without an address handle and {@code EMSGSIZE} above the path MTU
     */
    int postSend(SendWorkRequest wr);

    /**
     * Posts a receive request ({@code ibv_post_recv}): the request is copied. Allocation-free.
     *
     * @param wr the request
     * @return 0, or an errno value: {@code ENOMEM} (12) when the receive queue is full, {@code EINVAL} (22)
     *         for too many SGEs, a state that forbids posting, or a QP with an SRQ (post to the SRQ)
     */
    int postRecv(RecvWorkRequest wr);

    /**
     * Binds a type 1 memory window ({@code ibv_bind_mw}): posts a bind on this QP's send queue and gives the
     * window its next rkey at once ({@link MemoryWindow#rkey()} returns it before the bind completes, as
     * {@code mw->rkey} in libibverbs); the key works once the bind's completion ({@link WcOpcode#BIND_MW})
     * is seen. A region without {@link Access#MW_BIND} completes it with {@link WcStatus#MW_BIND_ERR}.
     * Allocation-free; never throws for a bad bind.
     *
     * @param mw   a type 1 window of this QP's PD
     * @param bind the region, range, access, wr_id and flags (copied)
     * @return 0, or an errno value: {@code ENOMEM} (12) when the send queue is full, {@code EINVAL} (22) for a
     *         type 2 window, a bind with an address or length but no region, a state that forbids posting, or
     *         a QP type without binds (UD: a bind is an RC or UC operation),
     *         {@code EPERM} (1) for a region of another PD than the window (as libibverbs' {@code ibv_bind_mw}),
     *         {@code EOPNOTSUPP} (95) from a provider without memory windows (the default)
     */
    default int bindMw(MemoryWindow mw, MwBind bind) {
        return RdmaException.Errno.EOPNOTSUPP.value();
    }

    /**
     * {@return the shared receive queue this QP takes its receives from ({@link QpInitAttr#srq()}), or null
     * when it has a receive queue of its own; providers with SRQs override this (the default: null, no SRQ)}
     */
    default SharedReceiveQueue srq() {
        return null;
    }

    /** Destroys the QP; outstanding requests are dropped without completions, as {@code ibv_destroy_qp}. */
    @Override
    void close();
}

package io.jrdma.verbs;

/**
 * A queue pair ({@code ibv_qp}). Posting copies the request into the queue and returns a
 * status instead of throwing: 0, {@link RdmaException.Errno#ENOMEM} when the queue is full,
 * {@link RdmaException.Errno#EINVAL} for a malformed request (too many SGEs, inline data too
 * long, an opcode the QP type lacks), or {@code EINVAL} in a state that forbids posting.
 * One thread posts to a given queue at a time.
 */
public interface QueuePair extends AutoCloseable {
    int qpn();

    QpType type();

    QpState state();

    ProtectionDomain pd();

    CompletionQueue sendCq();

    CompletionQueue recvCq();

    /** Moves the QP through its state machine ({@code ibv_modify_qp}); throws EINVAL with the reason on a bad transition. */
    void modify(QpAttr attr);

    /** @return the current attributes, every field set */
    QpAttr query();

    /** Posts a send-queue request; returns 0 or an errno value. Allocation-free. */
    int postSend(SendWorkRequest wr);

    /** Posts a receive request; returns 0 or an errno value. Allocation-free. */
    int postRecv(RecvWorkRequest wr);

    /** Destroys the QP; outstanding requests are dropped without completions, as {@code ibv_destroy_qp}. */
    @Override
    void close();
}

package io.jrdma.verbs;

/**
 * Creation attributes of a queue pair ({@code ibv_qp_init_attr}).
 *
 * @param type          RC, UC or UD (which ones a provider has: {@link DeviceAttr#qpTypes()})
 * @param sendCq        where send completions go
 * @param recvCq        where receive completions go (may be the same CQ)
 * @param maxSendWr     send queue depth
 * @param maxRecvWr     receive queue depth
 * @param maxSendSge    SGEs per send request
 * @param maxRecvSge    SGEs per receive request
 * @param maxInlineData bytes a request flagged INLINE may carry
 * @param sqSigAll      every send request generates a completion, signaled or not
 * @param srq           the shared receive queue the QP takes its receives from, or null for a receive queue of
 *                      its own; with one, {@code maxRecvWr} and {@code maxRecvSge} are ignored (as
 *                      {@code ibv_create_qp}) and {@link QueuePair#postRecv} returns EINVAL
 */
public record QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, int maxSendWr, int maxRecvWr,
                         int maxSendSge, int maxRecvSge, int maxInlineData, boolean sqSigAll, SharedReceiveQueue srq) {
    /**
     * Validates and makes the attributes.
     *
     * @throws RdmaException EINVAL if the type or a CQ is missing, or a queue size is not positive
     */
    public QpInitAttr {
        if (type == null || sendCq == null || recvCq == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "a QP needs a type, a send CQ and a receive CQ");
        }
        if (maxSendWr < 1 || maxRecvWr < 0 || maxSendSge < 1 || maxRecvSge < 1 || maxInlineData < 0) {
            throw new RdmaException(RdmaException.Errno.EINVAL,
                    "queue sizes must be positive: maxSendWr=" + maxSendWr + " maxRecvWr=" + maxRecvWr
                            + " maxSendSge=" + maxSendSge + " maxRecvSge=" + maxRecvSge);
        }
    }

    /**
     * Attributes without a shared receive queue (the form before SRQs existed).
     *
     * @param type          RC, UC or UD
     * @param sendCq        where send completions go
     * @param recvCq        where receive completions go (may be the same CQ)
     * @param maxSendWr     send queue depth
     * @param maxRecvWr     receive queue depth
     * @param maxSendSge    SGEs per send request
     * @param maxRecvSge    SGEs per receive request
     * @param maxInlineData bytes a request flagged INLINE may carry
     * @param sqSigAll      every send request generates a completion, signaled or not
     * @throws RdmaException EINVAL as the canonical constructor
     */
    public QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, int maxSendWr, int maxRecvWr,
                      int maxSendSge, int maxRecvSge, int maxInlineData, boolean sqSigAll) {
        this(type, sendCq, recvCq, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll, null);
    }

    /**
     * {@return the attributes of an RC QP with 128-deep queues, 4 SGEs per request, 256 bytes of
     * inline data, and one CQ for both queues}
     *
     * @param cq the CQ for send and receive completions
     */
    public static QpInitAttr rc(CompletionQueue cq) {
        return new QpInitAttr(QpType.RC, cq, cq, 128, 128, 4, 4, 256, false);
    }

    /**
     * {@return the attributes of a UC QP, sized as {@link #rc(CompletionQueue)}}
     *
     * @param cq the CQ for send and receive completions
     */
    public static QpInitAttr uc(CompletionQueue cq) {
        return new QpInitAttr(QpType.UC, cq, cq, 128, 128, 4, 4, 256, false);
    }

    /**
     * {@return the attributes of a UD QP, sized as {@link #rc(CompletionQueue)}; each receive needs 40 bytes
     * for the GRH in front of the message ({@link Grh})}
     *
     * @param cq the CQ for send and receive completions
     */
    public static QpInitAttr ud(CompletionQueue cq) {
        return new QpInitAttr(QpType.UD, cq, cq, 128, 128, 4, 4, 256, false);
    }

    /**
     * {@return these attributes taking receives from a shared receive queue (or from a queue of the QP's own,
     * with null)}
     *
     * @param queue an SRQ of the same PD as the QP will be, or null
     */
    public QpInitAttr withSrq(SharedReceiveQueue queue) {
        return new QpInitAttr(type, sendCq, recvCq, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData,
                sqSigAll, queue);
    }

    /**
     * {@return these attributes with other queue depths}
     *
     * @param sendWr the send queue depth, at least 1
     * @param recvWr the receive queue depth, at least 0
     * @throws RdmaException EINVAL for a depth out of range
     */
    public QpInitAttr withDepth(int sendWr, int recvWr) {
        return new QpInitAttr(type, sendCq, recvCq, sendWr, recvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll, srq);
    }

    /**
     * {@return these attributes with every send request signaled, or only those flagged SIGNALED}
     *
     * @param all true: every send request generates a completion
     */
    public QpInitAttr withSqSigAll(boolean all) {
        return new QpInitAttr(type, sendCq, recvCq, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, all, srq);
    }

    /**
     * {@return these attributes with separate CQs}
     *
     * @param send where send completions go
     * @param recv where receive completions go
     */
    public QpInitAttr withCqs(CompletionQueue send, CompletionQueue recv) {
        return new QpInitAttr(type, send, recv, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll, srq);
    }
}

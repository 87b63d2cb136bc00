package io.jrdma.verbs;

/**
 * Creation attributes of a queue pair ({@code ibv_qp_init_attr}).
 *
 * @param type          RC (UC and UD come later)
 * @param sendCq        where send completions go
 * @param recvCq        where receive completions go (may be the same CQ)
 * @param maxSendWr     send queue depth
 * @param maxRecvWr     receive queue depth
 * @param maxSendSge    SGEs per send request
 * @param maxRecvSge    SGEs per receive request
 * @param maxInlineData bytes a request flagged INLINE may carry
 * @param sqSigAll      every send request generates a completion, signaled or not
 */
public record QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, int maxSendWr, int maxRecvWr,
                         int maxSendSge, int maxRecvSge, int maxInlineData, boolean sqSigAll) {
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

    /** An RC QP with 128-deep queues, 4 SGEs each, 256 bytes of inline data, one CQ for both queues. */
    public static QpInitAttr rc(CompletionQueue cq) {
        return new QpInitAttr(QpType.RC, cq, cq, 128, 128, 4, 4, 256, false);
    }

    public QpInitAttr withDepth(int sendWr, int recvWr) {
        return new QpInitAttr(type, sendCq, recvCq, sendWr, recvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll);
    }

    public QpInitAttr withSqSigAll(boolean all) {
        return new QpInitAttr(type, sendCq, recvCq, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, all);
    }

    public QpInitAttr withCqs(CompletionQueue send, CompletionQueue recv) {
        return new QpInitAttr(type, send, recv, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll);
    }
}

package io.jrdma.verbs;

/** Send work request flags, with libibverbs' {@code ibv_send_flags} values. */
public final class SendFlags {
    /** Wait for all previous RDMA READ and atomic operations to complete first. */
    public static final int FENCE = 1;
    /** Generate a completion for this request (when the QP is not sq_sig_all). */
    public static final int SIGNALED = 1 << 1;
    /** Set the solicited event bit: the receiver's CQ notifies a solicited-only waiter. */
    public static final int SOLICITED = 1 << 2;
    /**
     * Copy the gathered data at post time; the SGEs' lkeys are not checked. The bytes must lie in
     * memory registered with the QP's PD (Java reads no raw address without native access); the
     * request may reuse its buffers as soon as postSend returns.
     */
    public static final int INLINE = 1 << 3;

    private SendFlags() {
    }
}

package io.jrdma.verbs;

/**
 * The attributes of a shared receive queue ({@code ibv_srq_attr}): what {@link SharedReceiveQueue#query()}
 * returns and {@link SharedReceiveQueue#modify(SrqAttr, int)} applies (only the fields its mask names).
 *
 * @param maxWr    the queue's depth: how many receives it holds at most
 * @param maxSge   scatter entries per receive (query only: modify cannot change it)
 * @param srqLimit the limit: when a receive is taken and fewer than this many remain, the queue raises
 *                 {@link AsyncEvent.Type#SRQ_LIMIT_REACHED} once and disarms (0: disarmed); modify re-arms it
 */
public record SrqAttr(int maxWr, int maxSge, int srqLimit) {
    /**
     * Mask bit of {@link SharedReceiveQueue#modify}: resize to {@link #maxWr()} ({@code IBV_SRQ_MAX_WR}), on a
     * provider with {@link DeviceCap#SRQ_RESIZE}: grow, or shrink down to the receives posted.
     */
    public static final int MAX_WR = 1;
    /** Mask bit of {@link SharedReceiveQueue#modify}: set and arm {@link #srqLimit()} ({@code IBV_SRQ_LIMIT}). */
    public static final int LIMIT = 1 << 1;

    /**
     * Validates and makes the attributes.
     *
     * @throws RdmaException EINVAL for a negative field
     */
    public SrqAttr {
        if (maxWr < 0 || maxSge < 0 || srqLimit < 0) {
            throw new RdmaException(RdmaException.Errno.EINVAL,
                    "SRQ attributes must not be negative: maxWr=" + maxWr + " maxSge=" + maxSge + " srqLimit=" + srqLimit);
        }
    }

    /**
     * {@return attributes that only set the limit (use with mask {@link #LIMIT})}
     *
     * @param srqLimit the new limit, 0 to disarm
     */
    public static SrqAttr limit(int srqLimit) {
        return new SrqAttr(0, 0, srqLimit);
    }
}

package io.jrdma.verbs;

/**
 * Creation attributes of a shared receive queue ({@code ibv_srq_init_attr}).
 *
 * @param maxWr    the depth: receives the queue holds at most, at least 1 (a provider may round it up;
 *                 {@link SharedReceiveQueue#query()} says what it made)
 * @param maxSge   scatter entries per receive, at least 1
 * @param srqLimit the limit armed at creation, 0 for none (see {@link SrqAttr#srqLimit()}); libibverbs
 *                 ignores it at creation, jrdma arms it, as {@code ibv_modify_srq} with {@code IBV_SRQ_LIMIT} would
 */
public record SrqInitAttr(int maxWr, int maxSge, int srqLimit) {
    /**
     * Validates and makes the attributes.
     *
     * @throws RdmaException EINVAL for a depth or SGE count below 1, or a limit outside 0..maxWr
     */
    public SrqInitAttr {
        if (maxWr < 1 || maxSge < 1 || srqLimit < 0 || srqLimit > maxWr) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "an SRQ needs maxWr >= 1, maxSge >= 1 and 0 <= srqLimit"
                    + " <= maxWr: maxWr=" + maxWr + " maxSge=" + maxSge + " srqLimit=" + srqLimit);
        }
    }

    /**
     * {@return attributes of {@code maxWr} receives of {@code maxSge} entries each, no limit armed}
     *
     * @param maxWr  the depth
     * @param maxSge scatter entries per receive
     */
    public static SrqInitAttr of(int maxWr, int maxSge) {
        return new SrqInitAttr(maxWr, maxSge, 0);
    }
}

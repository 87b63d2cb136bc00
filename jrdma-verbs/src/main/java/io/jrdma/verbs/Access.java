package io.jrdma.verbs;

/**
 * Memory and QP access flags, bit for bit the values of libibverbs' {@code ibv_access_flags},
 * so that masks can be exchanged with native peers unchanged. Combine with {@code |}.
 */
public final class Access {
    /** The local HCA may write into the region (receive buffers, READ and atomic results). */
    public static final int LOCAL_WRITE = 1;
    /** A remote peer may RDMA WRITE into the region. Requires LOCAL_WRITE. */
    public static final int REMOTE_WRITE = 1 << 1;
    /** A remote peer may RDMA READ from the region. */
    public static final int REMOTE_READ = 1 << 2;
    /** A remote peer may run atomics on the region. Requires LOCAL_WRITE. */
    public static final int REMOTE_ATOMIC = 1 << 3;
    /**
     * Memory windows may be bound to the region ({@code IBV_ACCESS_MW_BIND}); a bind over a region without it
     * completes with {@link WcStatus#MW_BIND_ERR}.
     */
    public static final int MW_BIND = 1 << 4;

    /**
     * jrdma: a peer's SEND_WITH_INV may invalidate the region's key. libibverbs has no such flag: there
     * only memory windows and fast-registration regions can be invalidated remotely; the API has both now
     * ({@link MemoryWindow}, {@link ProtectionDomain#allocMr}) but no provider implements them yet, so a
     * region registered with {@link ProtectionDomain#register} says so when it is registered (a bit
     * libibverbs leaves unused). An invalidated region refuses every access, local and remote, until it is
     * deregistered.
     */
    public static final int REMOTE_INVALIDATE = 1 << 24;

    /** Every flag this version knows. */
    public static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | MW_BIND | REMOTE_INVALIDATE;

    private Access() {
    }

    /**
     * {@return a readable form such as {@code LOCAL_WRITE|REMOTE_READ}}
     *
     * @param flags a combination of this class's flags
     */
    public static String toString(int flags) {
        StringBuilder sb = new StringBuilder();
        String[] names = {"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC", "MW_BIND"};
        for (int i = 0; i < names.length; i++) {
            if ((flags & (1 << i)) != 0) {
                if (!sb.isEmpty()) {
                    sb.append('|');
                }
                sb.append(names[i]);
            }
        }
        if ((flags & REMOTE_INVALIDATE) != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("REMOTE_INVALIDATE");
        }
        return sb.isEmpty() ? "0" : sb.toString();
    }
}

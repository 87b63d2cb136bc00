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
    /** Memory windows may be bound to the region. */
    public static final int MW_BIND = 1 << 4;

    /** Every flag this version knows. */
    public static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | MW_BIND;

    private Access() {
    }

    /** @return a readable form such as {@code LOCAL_WRITE|REMOTE_READ} */
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
        return sb.isEmpty() ? "0" : sb.toString();
    }
}

package io.jrdma.verbs;

/**
 * A type 1 memory window bind ({@code ibv_mw_bind} with its {@code ibv_mw_bind_info}), for
 * {@link QueuePair#bindMw}. Reusable, like {@link SendWorkRequest}: the bind is copied when posted.
 * A zero length unbinds the window.
 */
public final class MwBind {
    private long wrId;
    private int flags;
    private MemoryRegion mr;
    private long addr;
    private long length;
    private int access;

    /** An empty bind, to be filled and reused. */
    public MwBind() {
    }

    /**
     * Sets the identifier of the bind's completion.
     *
     * @param wrId any value, returned in the completion's {@link WorkCompletion#wrId()}
     * @return this bind
     */
    public MwBind wrId(long wrId) {
        this.wrId = wrId;
        return this;
    }

    /**
     * Sets the send flags.
     *
     * @param flags a combination of {@link SendFlags#SIGNALED} and {@link SendFlags#FENCE}
     * @return this bind
     */
    public MwBind flags(int flags) {
        this.flags = flags;
        return this;
    }

    /**
     * Sets what the window opens ({@code bind_info}).
     *
     * @param mr     the region, registered with {@link Access#MW_BIND} (else the bind completes with MW_BIND_ERR)
     * @param addr   the first byte, inside the region (in {@link MemoryRegion#address()} terms)
     * @param length the bytes; 0 unbinds the window
     * @param access a combination of {@link Access#REMOTE_READ}, {@link Access#REMOTE_WRITE} and {@link Access#REMOTE_ATOMIC}
     * @return this bind
     */
    public MwBind bind(MemoryRegion mr, long addr, long length, int access) {
        this.mr = mr;
        this.addr = addr;
        this.length = length;
        this.access = access;
        return this;
    }

    /** {@return the identifier of the bind's completion} */
    public long wrId() {
        return wrId;
    }

    /** {@return the send flags} */
    public int flags() {
        return flags;
    }

    /** {@return the region the window opens} */
    public MemoryRegion mr() {
        return mr;
    }

    /** {@return the first byte the window opens} */
    public long addr() {
        return addr;
    }

    /** {@return the bytes the window opens (0: unbind)} */
    public long length() {
        return length;
    }

    /** {@return the access the window grants} */
    public int access() {
        return access;
    }
}

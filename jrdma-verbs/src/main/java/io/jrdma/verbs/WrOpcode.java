package io.jrdma.verbs;

/** Send work request opcodes ({@code ibv_wr_opcode}). */
public enum WrOpcode {
    /** Write local data into the peer's memory at {@link SendWorkRequest#remote(long, int)}; the peer sees no completion. */
    RDMA_WRITE,
    /** An RDMA WRITE that also consumes a receive at the peer, completing it with the immediate data. */
    RDMA_WRITE_WITH_IMM,
    /** Send local data into the next receive the peer posted. */
    SEND,
    /** A SEND that carries 32 bits of immediate data into the peer's completion. */
    SEND_WITH_IMM,
    /** Read the peer's memory at the remote address into the local scatter list. */
    RDMA_READ,
    /** Atomically compare the peer's 8 bytes with an operand and, if equal, swap in another; the old value comes back. */
    ATOMIC_CMP_AND_SWP,
    /** Atomically add an operand to the peer's 8 bytes; the old value comes back. */
    ATOMIC_FETCH_AND_ADD,
    /** A SEND that also invalidates the remote key {@link SendWorkRequest#invalidate(int)} names at the receiver. */
    SEND_WITH_INV,
    /**
     * Invalidate a local key ({@code IBV_WR_LOCAL_INV}): the memory window or fast-registration region
     * whose key {@link SendWorkRequest#invalidate(int)} names refuses every access once the request
     * completes. Local: nothing goes on the wire. RC QPs (jrdma's providers refuse it on UC and UD with
     * EINVAL, as Linux rxe).
     */
    LOCAL_INV,
    /**
     * Bind a type 2 memory window ({@code IBV_WR_BIND_MW}) to a range of a region with the key, range
     * and access {@link SendWorkRequest#bindMw} sets. Local: nothing goes on the wire. (A type 1 window
     * is bound with {@link QueuePair#bindMw}, which posts this same opcode.) RC and UC QPs (EINVAL on UD).
     */
    BIND_MW,
    /**
     * Fast registration ({@code IB_WR_REG_MR} of the kernel verbs; user-space libibverbs has no such
     * opcode): map a region made by {@link ProtectionDomain#allocMr(long)} onto memory with the key and
     * access {@link SendWorkRequest#regMr} sets. Local: nothing goes on the wire. RC QPs (jrdma's providers
     * refuse it on UC and UD with EINVAL, as Linux rxe).
     */
    REG_MR;

    private static final WrOpcode[] VALUES = values();

    /**
     * {@return the opcode for an ordinal, without allocating}
     *
     * @param ordinal 0..{@code values().length - 1}
     * @throws ArrayIndexOutOfBoundsException for another ordinal
     */
    public static WrOpcode of(int ordinal) {
        return VALUES[ordinal];
    }

    /** {@return true for the operations that consume a receive WQE at the responder} */
    public boolean consumesRecv() {
        return this == SEND || this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_INV;
    }

    /** {@return true for operations whose responses carry data back (READ and atomics)} */
    public boolean isReadOrAtomic() {
        return this == RDMA_READ || this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** {@return true for the two atomics} */
    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** {@return true for the operations executed locally, which put nothing on the wire (LOCAL_INV, BIND_MW, REG_MR)} */
    public boolean isLocal() {
        return this == LOCAL_INV || this == BIND_MW || this == REG_MR;
    }

    /** {@return true if the request carries immediate data} */
    public boolean hasImm() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }
}

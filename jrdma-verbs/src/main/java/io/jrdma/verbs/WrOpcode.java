package io.jrdma.verbs;

/** Send work request opcodes ({@code ibv_wr_opcode}). */
public enum WrOpcode {
    RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND, SEND_WITH_IMM, RDMA_READ, ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD,
    /** A SEND that also invalidates the remote key {@link SendWorkRequest#invalidate(int)} names at the receiver. */
    SEND_WITH_INV;

    private static final WrOpcode[] VALUES = values();

    /** @return the opcode for an ordinal, without allocating */
    public static WrOpcode of(int ordinal) {
        return VALUES[ordinal];
    }

    /** @return true for the operations that consume a receive WQE at the responder */
    public boolean consumesRecv() {
        return this == SEND || this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_INV;
    }

    /** @return true for operations whose responses carry data back (READ and atomics) */
    public boolean isReadOrAtomic() {
        return this == RDMA_READ || this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** @return true for the two atomics */
    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** @return true if the request carries immediate data */
    public boolean hasImm() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }
}

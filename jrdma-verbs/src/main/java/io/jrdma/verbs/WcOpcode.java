package io.jrdma.verbs;

/** Work completion opcodes ({@code ibv_wc_opcode}). */
public enum WcOpcode {
    /** A SEND (with or without immediate data or invalidate) completed at the requester. */
    SEND,
    /** An RDMA WRITE (with or without immediate data) completed at the requester. */
    RDMA_WRITE,
    /** An RDMA READ completed at the requester: the data is in its scatter list. */
    RDMA_READ,
    /** An atomic compare-and-swap completed: the original remote value is in its scatter list. */
    COMP_SWAP,
    /** An atomic fetch-and-add completed: the original remote value is in its scatter list. */
    FETCH_ADD,
    /** A memory window bind completed ({@link WrOpcode#BIND_MW} or {@link QueuePair#bindMw}): the window's new rkey works. */
    BIND_MW,
    /** A {@link WrOpcode#LOCAL_INV} completed: the key refuses every access. */
    LOCAL_INV,
    /** A receive took a SEND (with or without immediate data or invalidate). */
    RECV,
    /** A receive was consumed by an RDMA WRITE with immediate data; the data went to the WRITE's address. */
    RECV_RDMA_WITH_IMM,
    /**
     * A fast registration ({@link WrOpcode#REG_MR}) completed: the region's new key works ({@code IB_WC_REG_MR}
     * of the kernel verbs; appended last here so the values before it keep libibverbs' order).
     */
    REG_MR;

    /**
     * {@return the completion opcode a send work request of this opcode produces}
     *
     * @param op the send opcode
     */
    public static WcOpcode of(WrOpcode op) {
        return switch (op) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> RDMA_WRITE;
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> SEND;
            case RDMA_READ -> RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> COMP_SWAP;
            case ATOMIC_FETCH_AND_ADD -> FETCH_ADD;
            case LOCAL_INV -> LOCAL_INV;
            case BIND_MW -> BIND_MW;
            case REG_MR -> REG_MR;
        };
    }
}

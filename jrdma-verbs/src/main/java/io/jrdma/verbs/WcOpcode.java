package io.jrdma.verbs;

/** Work completion opcodes ({@code ibv_wc_opcode}). */
public enum WcOpcode {
    SEND, RDMA_WRITE, RDMA_READ, COMP_SWAP, FETCH_ADD, BIND_MW, LOCAL_INV, RECV, RECV_RDMA_WITH_IMM;

    /** @return the completion opcode a send work request of this opcode produces */
    public static WcOpcode of(WrOpcode op) {
        return switch (op) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> RDMA_WRITE;
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> SEND;
            case RDMA_READ -> RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> COMP_SWAP;
            case ATOMIC_FETCH_AND_ADD -> FETCH_ADD;
        };
    }
}

package io.jrdma.verbs;

/** Memory window types ({@code ibv_mw_type}), with libibverbs' values. */
public enum MwType {
    /**
     * Type 1: bound with {@link QueuePair#bindMw} (a bind work request on any QP of the window's PD); the
     * window stays bound until re-bound (to a zero length to unbind) or closed. Cannot be invalidated.
     */
    TYPE_1(1),
    /**
     * Type 2: bound with a {@link WrOpcode#BIND_MW} work request on a QP of the window's PD, to that QP
     * only (type 2B); invalidated by a peer's SEND_WITH_INV or a LOCAL_INV, after which it may be bound again.
     */
    TYPE_2(2);

    private final int value;

    MwType(int value) {
        this.value = value;
    }

    /** {@return libibverbs' value: {@code IBV_MW_TYPE_1} = 1, {@code IBV_MW_TYPE_2} = 2} */
    public int value() {
        return value;
    }
}

package io.jrdma.verbs;

/**
 * A work completion ({@code ibv_wc}). {@link CompletionQueue#poll} fills objects the caller
 * owns and reuses, so polling allocates nothing.
 */
public final class WorkCompletion {
    /** {@link #flags()} bit: the completion carries immediate data. */
    public static final int WITH_IMM = 1 << 1;
    /** {@link #flags()} bit: the incoming SEND invalidated a local key ({@link #invalidatedRkey()}), as {@code IBV_WC_WITH_INV}. */
    public static final int WITH_INV = 1 << 3;
    /** {@link #flags()} bit: the incoming SEND had the solicited event bit set. */
    public static final int SOLICITED = 1 << 8;

    private long wrId;
    private WcStatus status = WcStatus.SUCCESS;
    private WcOpcode opcode = WcOpcode.SEND;
    private int vendorErr;
    private int byteLen;
    private int imm;
    private int flags;
    private int qpNum;
    private int srcQp;

    /** An empty completion, to be filled by {@link CompletionQueue#poll(WorkCompletion)} and reused. */
    public WorkCompletion() {
    }

    /**
     * Fills every field; called by providers when they complete a work request.
     *
     * @param wrId      the work request's identifier
     * @param status    the outcome
     * @param opcode    what completed
     * @param vendorErr a provider-specific error detail, 0 if none
     * @param byteLen   the bytes received or read
     * @param imm       the immediate data or the invalidated key, host order
     * @param flags     a combination of {@link #WITH_IMM}, {@link #WITH_INV} and {@link #SOLICITED}
     * @param qpNum     the local QP's number
     * @param srcQp     the remote QP's number
     * @return this completion
     */
    public WorkCompletion set(long wrId, WcStatus status, WcOpcode opcode, int vendorErr, int byteLen, int imm,
                              int flags, int qpNum, int srcQp) {
        this.wrId = wrId;
        this.status = status;
        this.opcode = opcode;
        this.vendorErr = vendorErr;
        this.byteLen = byteLen;
        this.imm = imm;
        this.flags = flags;
        this.qpNum = qpNum;
        this.srcQp = srcQp;
        return this;
    }

    /** {@return the identifier of the work request this completes} */
    public long wrId() {
        return wrId;
    }

    /** {@return the outcome: SUCCESS or the IBA error status} */
    public WcStatus status() {
        return status;
    }

    /** {@return what completed; valid only when {@link #status()} is SUCCESS, as in libibverbs} */
    public WcOpcode opcode() {
        return opcode;
    }

    /** {@return a provider-specific detail of an error status, 0 if none} */
    public int vendorErr() {
        return vendorErr;
    }

    /** {@return the bytes received (receive completions) or read or fetched (READ and atomic completions)} */
    public int byteLen() {
        return byteLen;
    }

    /** {@return the immediate data (host order), when {@link #flags()} has {@link #WITH_IMM}} */
    public int imm() {
        return imm;
    }

    /**
     * {@return the local key a SEND_WITH_INV invalidated, when {@link #flags()} has {@link #WITH_INV} ({@code ibv_wc.invalidated_rkey})}
     */
    public int invalidatedRkey() {
        return imm;
    }

    /** {@return a combination of {@link #WITH_IMM}, {@link #WITH_INV} and {@link #SOLICITED}} */
    public int flags() {
        return flags;
    }

    /** {@return true if the completion carries immediate data} */
    public boolean hasImm() {
        return (flags & WITH_IMM) != 0;
    }

    /** {@return the number of the local QP the work request belonged to} */
    public int qpNum() {
        return qpNum;
    }

    /** {@return the number of the remote QP (receive completions)} */
    public int srcQp() {
        return srcQp;
    }

    @Override
    public String toString() {
        return "WorkCompletion{wrId=" + wrId + ", status=" + status + ", opcode=" + opcode + ", byteLen=" + byteLen
                + (hasImm() ? ", imm=0x" + Integer.toHexString(imm) : "")
                + ((flags & WITH_INV) != 0 ? ", invalidatedRkey=0x" + Integer.toHexString(imm) : "") + ", qpNum=0x" + Integer.toHexString(qpNum)
                + (vendorErr != 0 ? ", vendorErr=" + vendorErr : "") + '}';
    }
}

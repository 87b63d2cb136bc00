package io.jrdma.verbs;

/**
 * A work completion ({@code ibv_wc}). {@link CompletionQueue#poll} fills objects the caller
 * owns and reuses, so polling allocates nothing.
 */
public final class WorkCompletion {
    /**
     * {@link #flags()} bit: the receive buffer's first 40 bytes hold a GRH ({@code IBV_WC_GRH}); UD receives
     * only, always set on RoCE. Read it with {@link Grh#parse}; the message follows it at byte 40.
     */
    public static final int GRH = 1;
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
    private int pkeyIndex;
    private int slid;
    private int sl;
    private int dlidPathBits;

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
     * @param flags     a combination of {@link #GRH}, {@link #WITH_IMM}, {@link #WITH_INV} and {@link #SOLICITED}
     * @param qpNum     the local QP's number
     * @param srcQp     the remote QP's number
     * @return this completion, with the UD-only fields ({@link #pkeyIndex()}, {@link #slid()}, {@link #sl()},
     *         {@link #dlidPathBits()}) zero: a UD receive adds them with {@link #ud}
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
        this.pkeyIndex = 0;
        this.slid = 0;
        this.sl = 0;
        this.dlidPathBits = 0;
        return this;
    }

    /**
     * Adds what a UD receive reports, after {@link #set}; called by providers.
     *
     * @param pkeyIndex    the P_Key index the datagram matched (GSI QPs; 0 otherwise)
     * @param slid         the source LID (InfiniBand; 0 on RoCE, which has no LIDs)
     * @param sl           the service level the datagram came with
     * @param dlidPathBits the destination LID path bits (InfiniBand; 0 on RoCE)
     * @return this completion
     */
    public WorkCompletion ud(int pkeyIndex, int slid, int sl, int dlidPathBits) {
        this.pkeyIndex = pkeyIndex;
        this.slid = slid;
        this.sl = sl;
        this.dlidPathBits = dlidPathBits;
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

    /** {@return a combination of {@link #GRH}, {@link #WITH_IMM}, {@link #WITH_INV} and {@link #SOLICITED}} */
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

    /** {@return the number of the remote QP (receive completions): for UD, the QP that sent the datagram} */
    public int srcQp() {
        return srcQp;
    }

    /** {@return true if the receive buffer starts with a GRH ({@link #GRH} in {@link #flags()})} */
    public boolean hasGrh() {
        return (flags & GRH) != 0;
    }

    /** {@return the P_Key index (UD receives; 0 otherwise)} */
    public int pkeyIndex() {
        return pkeyIndex;
    }

    /** {@return the source LID (UD receives on InfiniBand; 0 on RoCE)} */
    public int slid() {
        return slid;
    }

    /** {@return the service level (UD receives)} */
    public int sl() {
        return sl;
    }

    /** {@return the destination LID path bits (UD receives on InfiniBand; 0 on RoCE)} */
    public int dlidPathBits() {
        return dlidPathBits;
    }

    @Override
    public String toString() {
        return "WorkCompletion{wrId=" + wrId + ", status=" + status + ", opcode=" + opcode + ", byteLen=" + byteLen
                + (hasImm() ? ", imm=0x" + Integer.toHexString(imm) : "")
                + ((flags & WITH_INV) != 0 ? ", invalidatedRkey=0x" + Integer.toHexString(imm) : "") + ", qpNum=0x" + Integer.toHexString(qpNum)
                + (hasGrh() ? ", grh, srcQp=0x" + Integer.toHexString(srcQp) : "")
                + (vendorErr != 0 ? ", vendorErr=" + vendorErr : "") + '}';
    }
}

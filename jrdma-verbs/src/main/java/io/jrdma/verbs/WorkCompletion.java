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

    /** Fills every field; used by providers. */
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

    public long wrId() {
        return wrId;
    }

    public WcStatus status() {
        return status;
    }

    /** Valid only when {@link #status()} is SUCCESS, as in libibverbs. */
    public WcOpcode opcode() {
        return opcode;
    }

    public int vendorErr() {
        return vendorErr;
    }

    /** Bytes received (receive completions) or read/atomic bytes (requester completions). */
    public int byteLen() {
        return byteLen;
    }

    /** Immediate data, when {@link #flags()} has {@link #WITH_IMM}. */
    public int imm() {
        return imm;
    }

    /** The local key a SEND_WITH_INV invalidated, when {@link #flags()} has {@link #WITH_INV} ({@code ibv_wc.invalidated_rkey}). */
    public int invalidatedRkey() {
        return imm;
    }

    public int flags() {
        return flags;
    }

    public boolean hasImm() {
        return (flags & WITH_IMM) != 0;
    }

    public int qpNum() {
        return qpNum;
    }

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

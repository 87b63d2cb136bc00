package io.jrdma.verbs;

/**
 * A send work request ({@code ibv_send_wr}), built once and reused: posting copies it into
 * the send queue, so the same object may be refilled and posted again at once. Setters
 * return {@code this} so a request reads as one expression. Nothing here allocates after
 * construction.
 *
 * <pre>{@code
 * wr.reset().wrId(7).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
 *   .sge(0, mr, 0, 4096).remote(peerAddr, peerRkey);
 * int rc = qp.postSend(wr);   // 0, or an errno such as ENOMEM when the queue is full
 * }</pre>
 */
public final class SendWorkRequest {
    private final SgeList sges;
    private long wrId;
    private WrOpcode opcode = WrOpcode.SEND;
    private int flags;
    private long remoteAddr;
    private int rkey;
    private int imm;
    private long compareAdd;
    private long swap;

    /** A request with room for up to 4 scatter/gather entries. */
    public SendWorkRequest() {
        this(4);
    }

    /** @param maxSge how many scatter/gather entries this object can hold */
    public SendWorkRequest(int maxSge) {
        sges = new SgeList(maxSge);
    }

    /** Clears every field (opcode back to SEND, no SGEs, no flags). */
    public SendWorkRequest reset() {
        wrId = 0;
        opcode = WrOpcode.SEND;
        flags = 0;
        sges.count = 0;
        remoteAddr = 0;
        rkey = 0;
        imm = 0;
        compareAdd = 0;
        swap = 0;
        return this;
    }

    public SendWorkRequest wrId(long wrId) {
        this.wrId = wrId;
        return this;
    }

    public SendWorkRequest opcode(WrOpcode opcode) {
        this.opcode = opcode;
        return this;
    }

    /** @param flags a combination of {@link SendFlags} */
    public SendWorkRequest flags(int flags) {
        this.flags = flags;
        return this;
    }

    /**
     * Sets scatter/gather entry {@code index} to a byte range of a registered region and makes
     * the list {@code index + 1} entries long.
     */
    public SendWorkRequest sge(int index, MemoryRegion mr, long offset, int length) {
        return sge(index, mr.address() + offset, length, mr.lkey());
    }

    /** Sets scatter/gather entry {@code index} from a virtual address, length and lkey. */
    public SendWorkRequest sge(int index, long addr, int length, int lkey) {
        sges.set(index, addr, length, lkey);
        return this;
    }

    /** Sets the number of SGEs in use (0 sends a zero-length message). */
    public SendWorkRequest numSge(int numSge) {
        sges.count(numSge);
        return this;
    }

    /** The remote virtual address and rkey, for RDMA WRITE, READ and atomics. */
    public SendWorkRequest remote(long remoteAddr, int rkey) {
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        return this;
    }

    /** Immediate data, for SEND_WITH_IMM and RDMA_WRITE_WITH_IMM (host-order int; sent big-endian). */
    public SendWorkRequest imm(int imm) {
        this.imm = imm;
        return this;
    }

    /**
     * The remote key a SEND_WITH_INV invalidates at the receiver ({@code ibv_send_wr.invalidate_rkey},
     * which shares its place with the immediate data, as here).
     */
    public SendWorkRequest invalidate(int rkey) {
        this.imm = rkey;
        return this;
    }

    /** Atomic operands: the compare value (CMP_AND_SWP) or the addend (FETCH_AND_ADD), and the swap value. */
    public SendWorkRequest atomic(long compareAdd, long swap) {
        this.compareAdd = compareAdd;
        this.swap = swap;
        return this;
    }

    public long wrId() {
        return wrId;
    }

    public WrOpcode opcode() {
        return opcode;
    }

    public int flags() {
        return flags;
    }

    public int numSge() {
        return sges.count;
    }

    public int maxSge() {
        return sges.addr.length;
    }

    public long sgeAddr(int i) {
        return sges.addr[i];
    }

    public int sgeLength(int i) {
        return sges.length[i];
    }

    public int sgeLkey(int i) {
        return sges.lkey[i];
    }

    public long remoteAddr() {
        return remoteAddr;
    }

    public int rkey() {
        return rkey;
    }

    public int imm() {
        return imm;
    }

    /** The remote key a SEND_WITH_INV invalidates (the same field as {@link #imm()}). */
    public int invalidateRkey() {
        return imm;
    }

    public long compareAdd() {
        return compareAdd;
    }

    public long swap() {
        return swap;
    }

    /** @return the sum of the SGE lengths */
    public long totalLength() {
        return sges.totalLength();
    }
}

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

    /**
     * A request with room for up to {@code maxSge} scatter/gather entries.
     *
     * @param maxSge how many scatter/gather entries this object can hold, at least 1
     * @throws RdmaException EINVAL if {@code maxSge} is less than 1
     */
    public SendWorkRequest(int maxSge) {
        sges = new SgeList(maxSge);
    }

    /**
     * Clears every field: opcode back to SEND, no SGEs, no flags, zero addresses, keys and operands.
     *
     * @return this request
     */
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

    /**
     * Sets the caller's identifier, returned unchanged in the request's {@link WorkCompletion#wrId()}.
     *
     * @param wrId any value; jrdma never interprets it
     * @return this request
     */
    public SendWorkRequest wrId(long wrId) {
        this.wrId = wrId;
        return this;
    }

    /**
     * Sets the operation.
     *
     * @param opcode SEND, RDMA_WRITE, RDMA_READ, an atomic, ... (default SEND)
     * @return this request
     */
    public SendWorkRequest opcode(WrOpcode opcode) {
        this.opcode = opcode;
        return this;
    }

    /**
     * Sets the send flags.
     *
     * @param flags a combination of {@link SendFlags} constants, such as {@link SendFlags#SIGNALED}
     * @return this request
     */
    public SendWorkRequest flags(int flags) {
        this.flags = flags;
        return this;
    }

    /**
     * Sets scatter/gather entry {@code index} to a byte range of a registered region and makes
     * the list {@code index + 1} entries long. The range is checked against the region when the
     * request is executed (a bad one completes with {@code LOC_PROT_ERR}), not here.
     *
     * @param index  the entry, 0 to {@link #maxSge()} - 1
     * @param mr     the region the bytes are in; its lkey is used
     * @param offset the first byte's offset in the region
     * @param length the number of bytes
     * @return this request
     * @throws IndexOutOfBoundsException if {@code index} is outside the list's capacity
     */
    public SendWorkRequest sge(int index, MemoryRegion mr, long offset, int length) {
        return sge(index, mr.address() + offset, length, mr.lkey());
    }

    /**
     * Sets scatter/gather entry {@code index} from a virtual address, a length and an lkey
     * (as {@code ibv_sge}) and makes the list {@code index + 1} entries long.
     *
     * @param index  the entry, 0 to {@link #maxSge()} - 1
     * @param addr   the native address of the first byte, inside the region of {@code lkey}
     * @param length the number of bytes
     * @param lkey   the local key of the region
     * @return this request
     * @throws IndexOutOfBoundsException if {@code index} is outside the list's capacity
     */
    public SendWorkRequest sge(int index, long addr, int length, int lkey) {
        sges.set(index, addr, length, lkey);
        return this;
    }

    /**
     * Sets the number of SGEs in use, keeping the first {@code numSge} entries.
     *
     * @param numSge 0 (a zero-length message) to {@link #maxSge()}
     * @return this request
     * @throws IndexOutOfBoundsException if {@code numSge} is outside 0..maxSge
     */
    public SendWorkRequest numSge(int numSge) {
        sges.count(numSge);
        return this;
    }

    /**
     * Sets the remote virtual address and rkey, for RDMA WRITE, READ and atomics.
     *
     * @param remoteAddr the peer's address, inside the peer's region of {@code rkey} (8-byte aligned for atomics)
     * @param rkey       the remote key the peer gave out for that region
     * @return this request
     */
    public SendWorkRequest remote(long remoteAddr, int rkey) {
        this.remoteAddr = remoteAddr;
        this.rkey = rkey;
        return this;
    }

    /**
     * Sets the immediate data, for SEND_WITH_IMM and RDMA_WRITE_WITH_IMM.
     *
     * @param imm 32 bits, in host order here; sent big-endian and delivered as the same int
     * @return this request
     */
    public SendWorkRequest imm(int imm) {
        this.imm = imm;
        return this;
    }

    /**
     * Sets the remote key a SEND_WITH_INV invalidates at the receiver
     * ({@code ibv_send_wr.invalidate_rkey}, which shares its place with the immediate data, as here).
     *
     * @param rkey the key to invalidate at the peer
     * @return this request
     */
    public SendWorkRequest invalidate(int rkey) {
        this.imm = rkey;
        return this;
    }

    /**
     * Sets the atomic operands.
     *
     * @param compareAdd the compare value (ATOMIC_CMP_AND_SWP) or the addend (ATOMIC_FETCH_AND_ADD)
     * @param swap       the value swapped in when the compare matches (ATOMIC_CMP_AND_SWP only)
     * @return this request
     */
    public SendWorkRequest atomic(long compareAdd, long swap) {
        this.compareAdd = compareAdd;
        this.swap = swap;
        return this;
    }

    /** {@return the caller's identifier} */
    public long wrId() {
        return wrId;
    }

    /** {@return the operation} */
    public WrOpcode opcode() {
        return opcode;
    }

    /** {@return the {@link SendFlags} combination} */
    public int flags() {
        return flags;
    }

    /** {@return the number of scatter/gather entries in use} */
    public int numSge() {
        return sges.count;
    }

    /** {@return how many scatter/gather entries this object can hold} */
    public int maxSge() {
        return sges.addr.length;
    }

    /**
     * {@return the native address of scatter/gather entry {@code i}}
     *
     * @param i the entry, 0 to {@link #numSge()} - 1
     */
    public long sgeAddr(int i) {
        return sges.addr[i];
    }

    /**
     * {@return the length in bytes of scatter/gather entry {@code i}}
     *
     * @param i the entry, 0 to {@link #numSge()} - 1
     */
    public int sgeLength(int i) {
        return sges.length[i];
    }

    /**
     * {@return the lkey of scatter/gather entry {@code i}}
     *
     * @param i the entry, 0 to {@link #numSge()} - 1
     */
    public int sgeLkey(int i) {
        return sges.lkey[i];
    }

    /** {@return the remote virtual address (RDMA and atomics)} */
    public long remoteAddr() {
        return remoteAddr;
    }

    /** {@return the remote key (RDMA and atomics)} */
    public int rkey() {
        return rkey;
    }

    /** {@return the immediate data (host order)} */
    public int imm() {
        return imm;
    }

    /** {@return the remote key a SEND_WITH_INV invalidates (the same field as {@link #imm()})} */
    public int invalidateRkey() {
        return imm;
    }

    /** {@return the atomic compare value or addend} */
    public long compareAdd() {
        return compareAdd;
    }

    /** {@return the atomic swap value} */
    public long swap() {
        return swap;
    }

    /** {@return the sum of the SGE lengths} */
    public long totalLength() {
        return sges.totalLength();
    }
}

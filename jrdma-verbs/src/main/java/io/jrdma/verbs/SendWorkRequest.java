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
    // UD (ibv_send_wr.wr.ud)
    private AddressHandle ah;
    private int remoteQpn;
    private int remoteQkey;
    // BIND_MW (ibv_send_wr.bind_mw)
    private MemoryWindow mw;
    private int mwRkey;
    private MemoryRegion bindMr;
    private long bindAddr;
    private long bindLength;
    private int bindAccess;
    // REG_MR (the kernel's ib_reg_wr)
    private MemoryRegion regMr;
    private java.lang.foreign.MemorySegment regSegment;
    private int regKey;
    private int regAccess;
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
     * Clears every field: opcode back to SEND, no SGEs, no flags, zero addresses, keys and operands, no
     * address handle, window or region.
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
        ah = null;
        remoteQpn = 0;
        remoteQkey = 0;
        mw = null;
        mwRkey = 0;
        bindMr = null;
        bindAddr = 0;
        bindLength = 0;
        bindAccess = 0;
        regMr = null;
        regSegment = null;
        regKey = 0;
        regAccess = 0;
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
     * Sets the remote key a SEND_WITH_INV invalidates at the receiver, or the local key a LOCAL_INV
     * invalidates ({@code ibv_send_wr.invalidate_rkey}, which shares its place with the immediate data, as here).
     *
     * @param rkey the key to invalidate
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

    /**
     * Sets where a UD SEND goes ({@code ibv_send_wr.wr.ud}): the address handle, the remote QP number and the
     * Q_Key the receiving QP must have. The message is at most one path MTU (a longer one returns EMSGSIZE at
     * post, or completes with LOC_LEN_ERR); the receiver gets it behind 40 bytes of GRH ({@link Grh}).
     *
     * @param ah         an address handle of the QP's PD
     * @param remoteQpn  the destination QP number (24 bits)
     * @param remoteQkey the destination QP's Q_Key; a value with the high bit set means "use this QP's own
     *                   Q_Key" (IBA 10.2.4)
     * @return this request
     */
    public SendWorkRequest ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
        this.ah = ah;
        this.remoteQpn = remoteQpn & 0xFFFFFF;
        this.remoteQkey = remoteQkey;
        return this;
    }

    /**
     * Makes this a {@link WrOpcode#LOCAL_INV} of {@code key} ({@code IBV_WR_LOCAL_INV} with
     * {@code invalidate_rkey}): after its completion the type 2 window or fast-registration region whose key
     * it is refuses every access.
     *
     * @param key the rkey of a type 2 window or the key of a region made by {@link ProtectionDomain#allocMr}
     * @return this request
     */
    public SendWorkRequest localInv(int key) {
        this.opcode = WrOpcode.LOCAL_INV;
        this.imm = key;
        return this;
    }

    /**
     * Makes this a {@link WrOpcode#BIND_MW} of a type 2 window ({@code ibv_send_wr.bind_mw}): once it completes,
     * {@code newRkey} grants {@code access} to {@code [addr, addr + length)} of {@code mr} (the address in the
     * region's own terms, as {@link MemoryRegion#address()}), to this QP's peer only. A bind of a region
     * without {@link Access#MW_BIND}, out of its range or of a window still bound completes with
     * {@link WcStatus#MW_BIND_ERR}.
     *
     * @param window  a type 2 window of the QP's PD
     * @param newRkey the window's next key: {@code MemoryWindow.incRkey(window.rkey())} (the upper 24 bits
     *                must be the window's)
     * @param mr      the region the window opens
     * @param addr    the first byte, inside the region
     * @param length  the bytes
     * @param access  a combination of {@link Access#REMOTE_READ}, {@link Access#REMOTE_WRITE} and
     *                {@link Access#REMOTE_ATOMIC}
     * @return this request
     */
    public SendWorkRequest bindMw(MemoryWindow window, int newRkey, MemoryRegion mr, long addr, long length,
                                  int access) {
        this.opcode = WrOpcode.BIND_MW;
        this.mw = window;
        this.mwRkey = newRkey;
        this.bindMr = mr;
        this.bindAddr = addr;
        this.bindLength = length;
        this.bindAccess = access;
        return this;
    }

    /**
     * Makes this a {@link WrOpcode#REG_MR}, a fast registration (the kernel verbs' {@code IB_WR_REG_MR}):
     * once it completes, the region {@code mr} (made by {@link ProtectionDomain#allocMr}) covers
     * {@code segment} with key {@code key} (lkey and rkey) and {@code access}. The region must be free: never
     * registered, or invalidated by LOCAL_INV or a peer's SEND_WITH_INV since.
     *
     * @param mr      a region from {@link ProtectionDomain#allocMr} of the QP's PD
     * @param segment the native memory to map, at most the region's maximum length
     * @param key     the region's next key: {@code MemoryWindow.incRkey(mr.rkey())} (the upper 24 bits must be the region's)
     * @param access  a combination of {@link Access} flags
     * @return this request
     */
    public SendWorkRequest regMr(MemoryRegion mr, java.lang.foreign.MemorySegment segment, int key, int access) {
        this.opcode = WrOpcode.REG_MR;
        this.regMr = mr;
        this.regSegment = segment;
        this.regKey = key;
        this.regAccess = access;
        return this;
    }

    /** {@return the address handle of a UD send, or null} */
    public AddressHandle ah() {
        return ah;
    }

    /** {@return the destination QP number of a UD send} */
    public int remoteQpn() {
        return remoteQpn;
    }

    /** {@return the destination Q_Key of a UD send} */
    public int remoteQkey() {
        return remoteQkey;
    }

    /** {@return the window a BIND_MW binds, or null} */
    public MemoryWindow mw() {
        return mw;
    }

    /** {@return the new rkey a BIND_MW gives its window} */
    public int mwRkey() {
        return mwRkey;
    }

    /** {@return the region a BIND_MW opens, or null} */
    public MemoryRegion bindMr() {
        return bindMr;
    }

    /** {@return the first address a BIND_MW opens} */
    public long bindAddr() {
        return bindAddr;
    }

    /** {@return the bytes a BIND_MW opens} */
    public long bindLength() {
        return bindLength;
    }

    /** {@return the access a BIND_MW grants, a combination of {@link Access} flags} */
    public int bindAccess() {
        return bindAccess;
    }

    /** {@return the region a REG_MR maps, or null} */
    public MemoryRegion regMr() {
        return regMr;
    }

    /** {@return the memory a REG_MR maps, or null} */
    public java.lang.foreign.MemorySegment regSegment() {
        return regSegment;
    }

    /** {@return the key a REG_MR gives its region} */
    public int regKey() {
        return regKey;
    }

    /** {@return the access a REG_MR grants, a combination of {@link Access} flags} */
    public int regAccess() {
        return regAccess;
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

    /** {@return the key a SEND_WITH_INV or LOCAL_INV invalidates (the same field as {@link #imm()})} */
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

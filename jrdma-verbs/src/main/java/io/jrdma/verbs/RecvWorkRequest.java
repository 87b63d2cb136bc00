package io.jrdma.verbs;

/** A receive work request ({@code ibv_recv_wr}): a wr_id and a scatter list. Reusable, like {@link SendWorkRequest}. */
public final class RecvWorkRequest {
    private final SgeList sges;
    private long wrId;

    /** A request with room for up to 4 scatter entries. */
    public RecvWorkRequest() {
        this(4);
    }

    /**
     * A request with room for up to {@code maxSge} scatter entries.
     *
     * @param maxSge how many scatter entries this object can hold, at least 1
     * @throws RdmaException EINVAL if {@code maxSge} is less than 1
     */
    public RecvWorkRequest(int maxSge) {
        sges = new SgeList(maxSge);
    }

    /**
     * Clears the wr_id and the scatter list.
     *
     * @return this request
     */
    public RecvWorkRequest reset() {
        wrId = 0;
        sges.count = 0;
        return this;
    }

    /**
     * Sets the caller's identifier, returned in the completion of the message this receive takes.
     *
     * @param wrId any value; jrdma never interprets it
     * @return this request
     */
    public RecvWorkRequest wrId(long wrId) {
        this.wrId = wrId;
        return this;
    }

    /**
     * Sets scatter entry {@code index} to a byte range of a registered region (which needs
     * {@link Access#LOCAL_WRITE}) and makes the list {@code index + 1} entries long. A message longer
     * than the list completes with {@code LOC_LEN_ERR}.
     *
     * @param index  the entry, 0 to maxSge - 1
     * @param mr     the region the bytes land in; its lkey is used
     * @param offset the first byte's offset in the region
     * @param length the number of bytes
     * @return this request
     * @throws IndexOutOfBoundsException if {@code index} is outside the list's capacity
     */
    public RecvWorkRequest sge(int index, MemoryRegion mr, long offset, int length) {
        return sge(index, mr.address() + offset, length, mr.lkey());
    }

    /**
     * Sets scatter entry {@code index} from a virtual address, a length and an lkey, and makes
     * the list {@code index + 1} entries long.
     *
     * @param index  the entry, 0 to maxSge - 1
     * @param addr   the native address of the first byte, inside the region of {@code lkey}
     * @param length the number of bytes
     * @param lkey   the local key of the region
     * @return this request
     * @throws IndexOutOfBoundsException if {@code index} is outside the list's capacity
     */
    public RecvWorkRequest sge(int index, long addr, int length, int lkey) {
        sges.set(index, addr, length, lkey);
        return this;
    }

    /**
     * Sets the number of scatter entries in use, keeping the first {@code numSge}.
     *
     * @param numSge 0 (takes only zero-length messages) to maxSge
     * @return this request
     * @throws IndexOutOfBoundsException if {@code numSge} is outside 0..maxSge
     */
    public RecvWorkRequest numSge(int numSge) {
        sges.count(numSge);
        return this;
    }

    /** {@return the caller's identifier} */
    public long wrId() {
        return wrId;
    }

    /** {@return the number of scatter entries in use} */
    public int numSge() {
        return sges.count;
    }

    /**
     * {@return the native address of scatter entry {@code i}}
     *
     * @param i the entry, 0 to {@link #numSge()} - 1
     */
    public long sgeAddr(int i) {
        return sges.addr[i];
    }

    /**
     * {@return the length in bytes of scatter entry {@code i}}
     *
     * @param i the entry, 0 to {@link #numSge()} - 1
     */
    public int sgeLength(int i) {
        return sges.length[i];
    }

    /**
     * {@return the lkey of scatter entry {@code i}}
     *
     * @param i the entry, 0 to {@link #numSge()} - 1
     */
    public int sgeLkey(int i) {
        return sges.lkey[i];
    }
}

package io.jrdma.verbs;

/** A receive work request ({@code ibv_recv_wr}): a wr_id and a scatter list. Reusable, like {@link SendWorkRequest}. */
public final class RecvWorkRequest {
    private final SgeList sges;
    private long wrId;

    public RecvWorkRequest() {
        this(4);
    }

    public RecvWorkRequest(int maxSge) {
        sges = new SgeList(maxSge);
    }

    public RecvWorkRequest reset() {
        wrId = 0;
        sges.count = 0;
        return this;
    }

    public RecvWorkRequest wrId(long wrId) {
        this.wrId = wrId;
        return this;
    }

    public RecvWorkRequest sge(int index, MemoryRegion mr, long offset, int length) {
        return sge(index, mr.address() + offset, length, mr.lkey());
    }

    public RecvWorkRequest sge(int index, long addr, int length, int lkey) {
        sges.set(index, addr, length, lkey);
        return this;
    }

    public RecvWorkRequest numSge(int numSge) {
        sges.count(numSge);
        return this;
    }

    public long wrId() {
        return wrId;
    }

    public int numSge() {
        return sges.count;
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
}

package io.jrdma.verbs;

/** A receive work request ({@code ibv_recv_wr}): a wr_id and a scatter list. Reusable, like {@link SendWorkRequest}. */
public final class RecvWorkRequest {
    private final long[] sgeAddr;
    private final int[] sgeLength;
    private final int[] sgeLkey;
    private long wrId;
    private int numSge;

    public RecvWorkRequest() {
        this(4);
    }

    public RecvWorkRequest(int maxSge) {
        if (maxSge < 1) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "maxSge must be at least 1, not " + maxSge);
        }
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
    }

    public RecvWorkRequest reset() {
        wrId = 0;
        numSge = 0;
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
        if (index < 0 || index >= sgeAddr.length) {
            throw new IndexOutOfBoundsException("SGE index " + index + " outside 0.." + (sgeAddr.length - 1)
                    + "; construct the request with a larger maxSge");
        }
        sgeAddr[index] = addr;
        sgeLength[index] = length;
        sgeLkey[index] = lkey;
        numSge = index + 1;
        return this;
    }

    public RecvWorkRequest numSge(int numSge) {
        if (numSge < 0 || numSge > sgeAddr.length) {
            throw new IndexOutOfBoundsException("numSge " + numSge + " outside 0.." + sgeAddr.length);
        }
        this.numSge = numSge;
        return this;
    }

    public long wrId() {
        return wrId;
    }

    public int numSge() {
        return numSge;
    }

    public long sgeAddr(int i) {
        return sgeAddr[i];
    }

    public int sgeLength(int i) {
        return sgeLength[i];
    }

    public int sgeLkey(int i) {
        return sgeLkey[i];
    }
}

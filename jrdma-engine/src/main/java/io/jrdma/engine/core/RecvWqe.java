package io.jrdma.engine.core;

/** A receive work queue entry: preallocated, filled by postRecv, consumed by the responder. */
public final class RecvWqe {
    public long wrId;
    public int numSge;
    public final long[] sgeAddr;
    public final int[] sgeLength;
    public final int[] sgeLkey;
    public long capacity;

    public RecvWqe(int maxSge) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
    }

    /** Posting thread: takes {@code wr}'s id and scatter list (its SGE count already checked); allocation-free. */
    void fill(io.jrdma.verbs.RecvWorkRequest wr) {
        int n = wr.numSge();
        wrId = wr.wrId();
        numSge = n;
        long cap = 0;
        for (int i = 0; i < n; i++) {
            sgeAddr[i] = wr.sgeAddr(i);
            sgeLength[i] = wr.sgeLength(i);
            sgeLkey[i] = wr.sgeLkey(i);
            cap += wr.sgeLength(i);
        }
        capacity = cap;
    }
}

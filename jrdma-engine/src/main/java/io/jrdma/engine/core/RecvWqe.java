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
}

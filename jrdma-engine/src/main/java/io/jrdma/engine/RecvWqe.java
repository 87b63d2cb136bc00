package io.jrdma.engine;

/** A receive work queue entry: preallocated, filled by postRecv, consumed by the responder. */
final class RecvWqe {
    long wrId;
    int numSge;
    final long[] sgeAddr;
    final int[] sgeLength;
    final int[] sgeLkey;
    long capacity;

    RecvWqe(int maxSge) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
    }
}

package io.jrdma.engine;

import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.MemorySegment;

/**
 * A send work queue entry: the request as posted (copied from the caller's
 * {@link io.jrdma.verbs.SendWorkRequest}) and the requester's progress through it. Slots are
 * preallocated and reused; the posting thread writes the request part before publishing the
 * slot, the engine owns the rest.
 */
final class Wqe {
    // posted by the application
    long wrId;
    WrOpcode opcode;
    int flags;
    boolean signaled;
    int numSge;
    final long[] sgeAddr;
    final int[] sgeLength;
    final int[] sgeLkey;
    long remoteAddr;
    int rkey;
    int imm;
    long compareAdd;
    long swap;
    long length;
    /** inline data copied at post time (a slice of the QP's inline area), or null */
    final MemorySegment inlineArea;
    boolean inline;

    // engine state
    final Mr[] sgeMr;
    boolean validated;
    boolean started;
    int firstPsn;
    int lastPsn;
    int npkts;
    /** a local error found by the requester, completed in order by the completer; -1 = none */
    int localError = -1;
    /** iWARP: the READ/atomic response arrived in full (SEND/WRITE are done once handed to TCP) */
    boolean responded;

    Wqe(int maxSge, MemorySegment inlineArea) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
        sgeMr = new Mr[maxSge];
        this.inlineArea = inlineArea;
    }

    boolean isReadOrAtomic() {
        return opcode == WrOpcode.RDMA_READ || opcode == WrOpcode.ATOMIC_CMP_AND_SWP
                || opcode == WrOpcode.ATOMIC_FETCH_AND_ADD;
    }
}

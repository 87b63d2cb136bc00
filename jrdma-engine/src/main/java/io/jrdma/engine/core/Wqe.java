package io.jrdma.engine.core;

import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.MemorySegment;

/**
 * A send work queue entry: the request as posted (copied from the caller's
 * {@link io.jrdma.verbs.SendWorkRequest}) and the requester's progress through it. Slots are
 * preallocated and reused; the posting thread writes the request part before publishing the
 * slot, the engine owns the rest.
 */
public final class Wqe {
    // posted by the application
    public long wrId;
    public WrOpcode opcode;
    public int flags;
    public boolean signaled;
    public int numSge;
    public final long[] sgeAddr;
    public final int[] sgeLength;
    public final int[] sgeLkey;
    public long remoteAddr;
    public int rkey;
    public int imm;
    public long compareAdd;
    public long swap;
    public long length;
    /** UD: the address handle, remote QPN and remote Q_Key of {@code ibv_send_wr.wr.ud} */
    public Ah ah;
    public int remoteQpn;
    public int remoteQkey;
    /** inline data copied at post time (a slice of the QP's inline area), or null */
    public final MemorySegment inlineArea;
    public boolean inline;
    // a local operation (LocalOps): BIND_MW's window, region, key, range and access; REG_MR's region, key,
    // segment and access (LOCAL_INV's key is in imm)
    public Mw mw;
    public Mr localMr;
    public int localKey;
    public long localAddr;
    public long localLength;
    public int localAccess;
    public MemorySegment localSegment;

    // engine state
    public final Mr[] sgeMr;
    public boolean validated;
    public boolean started;
    public int firstPsn;
    public int lastPsn;
    public int npkts;
    /** a local error found by the requester, completed in order by the completer; -1 = none */
    public int localError = -1;
    /** iWARP: the READ/atomic response arrived in full (SEND/WRITE are done once handed to TCP) */
    public boolean responded;

    public Wqe(int maxSge, MemorySegment inlineArea) {
        sgeAddr = new long[maxSge];
        sgeLength = new int[maxSge];
        sgeLkey = new int[maxSge];
        sgeMr = new Mr[maxSge];
        this.inlineArea = inlineArea;
    }

    /** @return true for BIND_MW, REG_MR and LOCAL_INV, which the requester executes itself ({@link LocalOps}) */
    public boolean isLocalOp() {
        return LocalOps.isLocal(opcode);
    }

    public boolean isReadOrAtomic() {
        return opcode == WrOpcode.RDMA_READ || opcode == WrOpcode.ATOMIC_CMP_AND_SWP
                || opcode == WrOpcode.ATOMIC_FETCH_AND_ADD;
    }
}

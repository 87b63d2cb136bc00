package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Cq;
import io.jrdma.engine.core.Pd;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.RecvWqe;
import io.jrdma.verbs.QpInitAttr;

/** A QP of the shared-memory transport: the core's queues plus its peer, its inbound ring and its senders' state. */
final class ShmQp extends Qp {
    /** its entry in this context's control segment (QP directory and inbound ring) */
    final int slot;
    final long dir;
    final long ring;
    /** its response line (slots read, last result), written by this engine as it consumes the ring */
    final long resp;

    // ---- the connection (engine thread; set at RTR)
    /** a peer may have written its inbound ring since it was last cleared */
    boolean ringUsed;
    Peer peer;
    /** the peer QP's directory entry and inbound ring, offsets in the peer's control segment */
    long peerDir = -1;
    long peerRing;
    long peerResp;

    // ---- the key entry of the peer the last one-sided operation used, with its fields (engine thread): valid
    // while the entry's word of key, access and generation is still keyWord (0: none cached)
    long keyWord;
    long keyEntry;
    java.lang.foreign.MemorySegment keyBuf;
    /** the cached entry is memory that is not shared, reached by cross-memory attach ({@code keyBuf} null) */
    boolean keyAttached;
    /** while {@link #keyAttached}: the address here of the entry's word in the owner's attach table (read-only) */
    long keyTableWord;
    /** while {@link #keyAttached}: the publication's serial in that table ({@link Ctrl#A_SERIAL}) */
    long keySerial;
    /** the address here of the region's byte {@code va = 0} (wrapping): {@code keyBase + va} is where va lies */
    long keyBase;
    long keyVa;
    long keySpan;
    long keyOff;
    long keyPd;
    /** the entry's type 2 window QP + 1 (0: any QP) */
    int keyQpn;
    /**
     * the peer QP entry's generation ({@link Ctrl#Q_GEN}) at which every check of the peer QP and of the cached key
     * passed, with this QP as the peer's partner (own hold); valid while {@link #checked}
     */
    long checkedGen;
    /** the peer QP's access flags read at {@link #checkedGen} */
    int checkedAccess;
    /** {@link #checkedGen} and {@link #checkedAccess} hold: the next operation through the same key checks two words */
    boolean checked;
    /**
     * the address here of what a one-sided operation holds while it touches the peer's memory: the peer QP's
     * {@link Ctrl#Q_HELD} word ({@link #heldQp}) or else the key entry's in-use count
     */
    long heldAddr;
    boolean heldQp;
    /**
     * both ends hold by the initiator's own word ({@link Ctrl#H_OWN_HOLD}): a one-sided operation takes its own hold
     * word ({@link #ownHoldAddr}) while the peer QP's entry names this QP as its partner (set at RTR)
     */
    boolean ownHold;
    long ownHoldAddr;

    // ---- the send side: SENDs in flight (engine thread)
    /**
     * The send queue's WQEs from {@code sqConsumer} up to this one have every chunk in the peer's ring and wait for
     * their results (a request other than a SEND starts only when none is in flight).
     * Below {@code sqConsumer} after a flush or a reset: read through {@link #inFlight}.
     */
    long sqSent;
    /** the WQE at {@link #sqSent} has its message number and is being written: some or none of its chunks are in the ring */
    boolean sending;
    /** the message number of the WQE at {@code sqConsumer} while any is numbered: the k-th after it has {@code firstMsg + k} */
    int firstMsg;
    /** the last message number given: each message written takes the next (a message sent again after an RNR too) */
    int msg;
    /** the bytes of the WQE at {@link #sqSent} already in the ring */
    long sendOffset;
    /** UC: when its send hold first failed with the receiver live (another's word), 0 when it did not */
    long ucHoldSince;
    /**
     * the peer QP entry's generation at which {@link #ringWrite} was found from the peer's ring
     * ({@code ShmTransport.findPosition}: a QP's first chunk after it connected, RC or UC, and UC's after every change
     * of that entry); -1 after a reset, which no entry's generation is
     */
    long ringGen = -1;
    /** the receiver's R_READ when {@link #ringWrite} was found: R_READ never goes below it in one connection */
    long ringStart;
    /** RC: the receiver's R_READ left this connection's positions (it connected again alone): nothing in flight is answered */
    boolean ringLost;
    /** the next message written is the first after an RNR, or RC's first since it connected: it carries {@link Ctrl#F_RETRY} */
    boolean retry;
    /** ring positions in the peer's ring: the next slot to write, and the receiver's R_READ as last read */
    long ringWrite;
    long ringReadSeen;
    /** RNR: when the refused SEND may be sent again (0: no timer), and the retries left (7: no limit) */
    long rnrUntil;
    int rnrLeft;
    /** the head request found no peer QP to take it: when its retries run out (0: not waiting) */
    long unansweredUntil;

    /** @return the messages numbered and not yet answered: the whole ones in the ring, and the one being written */
    int inFlight() {
        long whole = sqSent - sqConsumer;
        return (whole > 0 ? (int) whole : 0) + (sending ? 1 : 0);
    }

    // ---- the receive side (engine thread)
    /** the position this QP's ring started at in its connection (a random base: connect); tests read it */
    long ringBase;
    long ringRead;
    /** the ring position up to which R_READ was published */
    long ringReadPublished;
    boolean receiving;
    int recvMsg;
    /** the message in progress's opcode and flags but FIRST, LAST and RETRY: every chunk of it carries the same */
    int recvFlagsOp;
    RecvWqe recv;
    long recvOffset;
    /**
     * a message was refused (RNR): every slot is dropped until the first chunk of a message the sender marked
     * {@link Ctrl#F_RETRY} (the refused one sent again); the messages after the refused one are sent again behind it
     */
    boolean refused;
    /** on the engine's watched list: its ring is polled in every duty cycle */
    boolean watched;

    /**
     * UC: a message completes at its sender once it is in the peer's ring, and the receiver drops what it cannot take
     * (no receive, too long, a refused WRITE) instead of answering; no RNR, no NAK (docs/shm-design.md, "UC")
     */
    final boolean uc;
    final boolean ud;

    // ---- UD, the send side (engine thread): where the last datagrams went, by address handle and QPN, so that a
    // send finds its receiver's QP entry without a scan of the peer's directory; and the peers this QP maps. Filled
    // from entry 0 on, so a QP that sends to k receivers looks at k entries at most
    static final int UD_TARGETS = 64;
    final io.jrdma.engine.core.Ah[] udAh;
    final int[] udQpn;
    final Peer[] udPeer;
    final int[] udIndex;
    int udNextTarget;
    Peer[] udPeers;
    int udPeerCount;
    /** the head datagram waits for its receiving QP's held word or for room in its ring: since when (0: it does not) */
    long udWaitSince;
    /** when the holder of a busy word was last asked whether its process lives (at most once a millisecond) */
    long udHolderChecked;

    ShmQp(Context context, Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq, int slot) {
        super(context, pd, qpn, init, sendCq, recvCq);
        this.uc = init.type() == io.jrdma.verbs.QpType.UC;
        this.ud = init.type() == io.jrdma.verbs.QpType.UD;
        this.udAh = ud ? new io.jrdma.engine.core.Ah[UD_TARGETS] : null;
        this.udQpn = ud ? new int[UD_TARGETS] : null;
        this.udPeer = ud ? new Peer[UD_TARGETS] : null;
        this.udIndex = ud ? new int[UD_TARGETS] : null;
        this.udPeers = ud ? new Peer[4] : null;
        this.slot = slot;
        this.dir = Ctrl.qp(slot);
        this.ring = Ctrl.ring(slot);
        this.resp = Ctrl.resp(slot);
        // INVOKER: a post runs the send queue at once (docs/shm-performance.md, "What changed, and why"): WRITE, READ and
        // atomics complete inside the post; DEDICATED: the engine thread runs it (the doorbell)
        executeAtPost(context.invoker);
    }

    /** Forgets the cached key entry and its mapping: the peer is about to unmap buffers ({@link Peer#sweep}). */
    void dropKeyCache() {
        keyWord = 0;
        checked = false;
        keyBuf = null;
    }

    /** Engine thread: forgets the send and receive progress (RESET, destroy, and each connection: RTR). */
    void resetProgress() {
        keyWord = 0; // a new connection: the peer (and its mappings) may be another
        checked = false;
        keyBuf = null;
        sending = false;
        sendOffset = 0;
        retry = false;
        sqSent = sqConsumer;
        ringWrite = 0;
        ringReadSeen = 0;
        ringGen = -1;
        ringLost = false;
        ringRead = 0;
        ringReadPublished = 0;
        receiving = false;
        recvOffset = 0;
        recv = null;
        refused = false;
        rnrUntil = 0;
        unansweredUntil = 0;
        udWaitSince = 0;
    }
}

package io.jrdma.engine.shm;

/**
 * The layout of a context's control segment (a memfd its peers map at connect time; all fields
 * in native byte order, see docs/shm-design.md):
 * <pre>
 * header   @0          magic u64 | version u32 | pid u32 | max keys u32 | max QPs u32 | @24 own holds u32 |
 *                      @32 sleeping u32 | @36 futex u32 | @40 QP entries used u32 (only grows) |
 *                      @44 engine may sleep u32 (written once: a DEDICATED context) | @48 attach table's descriptor + 1 u32
 *          @64         input pending u32 (a line of its own: peers write it, the engine clears it)
 * keys     @KEYS       MAX_KEYS entries of 128 B, indexed by rkey >>> 8:
 *                      key u32 (0 = invalid) | access u16 and generation u16 (one u64 word with the key) |
 *                      pd u64 | inode u64 | fd u32 | in-use u32 |
 *                      va u64 | length u64 | offset in the buffer u64 | buffer size u64 |
 *                      a type 2 window's QPN + 1 u32 (0: any QP)
 * QPs      @QPS        MAX_QPS entries of 64 B: qpn u32 (0 = free) | state u32 | pd u64 | access u32 |
 *                      error request u32 (a peer's NAK syndrome + 1) | ring u64 (offset of its inbound ring) |
 *                      min RNR timer u32 | watched u32 (1: the engine polls the ring itself, no pending word needed) |
 *                      held u32 (the key index a one-sided operation of the QP's initiator holds, 0: none) |
 *                      partner's QPN u32 | partner's context id u64 (the QP's own hold may be used by that one) |
 *                      @56 generation u64 (raised after every change of the fields above that an initiator checks)
 * responses @RESPS     MAX_QPS lines of RESP_BYTES, one per QP, written by the QP's engine as it consumes its ring,
 *                      read by the sender: slots read u64 | result u64 (message number u32, status u32)
 * rings    @RINGS      MAX_QPS inbound rings of RING_SLOTS slots of SLOT bytes: a 64-byte header line
 *                      (sequence u32 | destination QPN u32 (one u64, stored last) | flags u32 (opcode in bits 8-15) | length u32 | imm u32 |
 *                      message u32 | 40 bytes of payload, or a WRITE with immediate data's length u64) and
 *                      CHUNK bytes of payload for a chunk longer than INLINE
 * holds    @HOLDS      MAX_QPS words of 8 B: the key index of its partner's context each QP touches now, 0: none
 * </pre>
 */
final class Ctrl {
    // offsets are longs: a VarHandle of a segment takes a long offset, and an int one at its call site would
    // make every access adapt its type at run time (MethodHandle.asType), many times slower than the access
    static final long MAGIC = 0x4D48534D4452444AL; // a constant that says "a jrdma control segment"
    static final int VERSION = 15; // 15: H_QP_ENTRIES; 14: UD QPs (R_TAIL, UD_MARK, the slot's U_ fields); 13: a ring's positions start at a random base at each connection, which senders read (12: ATTACHED keys)
    static final long H_MAGIC = 0;
    static final long H_VERSION = 8;
    static final long H_PID = 12;
    /**
     * 1 when this context withdraws keys with {@link Native#membarrier} and reads its partners' own holds
     * ({@link #HOLDS}): an initiator toward it may hold by its own word; written once, before any peer maps it
     */
    static final long H_OWN_HOLD = 24;
    /** 1 while the context's engine thread sleeps on {@link #H_FUTEX}: a peer that gives it work wakes it */
    static final long H_SLEEPING = 32;
    /** the futex word: bumped by each wake */
    static final long H_FUTEX = 36;
    /**
     * One past the highest QP directory entry this context has used (it only grows), stored by the owner (release)
     * before the QPN of each QP it makes (so a word a peer changed is put right by the next): a peer that looks for a
     * QP by its number searches the entries below it (clamped to {@link #MAX_QPS}), not all of them
     */
    static final long H_QP_ENTRIES = 40;
    /**
     * 1 when a peer wrote one of the context's inbound rings or error requests since the engine last looked:
     * the engine scans its rings only then (it clears the word first); peers store it after what they wrote
     */
    static final long H_PENDING = 64;
    /**
     * The descriptor + 1 of this context's attach table (0: none yet), a memfd only the owner writes (sealed
     * F_SEAL_FUTURE_WRITE: peers map it read-only): for each key index of memory reached by cross-memory attach
     * ({@link #ATTACHED}), the entry an initiator believes instead of the key entry here, which any peer can write
     */
    static final long H_ATTACH_FD = 48;
    /** the attach table: an entry of {@link #A_BYTES} per key index */
    static final int A_BYTES = 64;
    /** the key entry's word of key and access ({@link #K_KEY}, {@link #K_ACCESS}), stored last (release); 0: none */
    static final int A_WORD = 0;
    static final int A_PD = 8;
    static final int A_VA = 16;
    static final int A_LEN = 24;
    /** the region's address in the owner */
    static final int A_ADDR = 32;
    static final int A_QPN = 40;
    /**
     * the publication's serial in its owner (never 0, never repeated; 0 once withdrawn): an initiator's cached range is
     * that publication's while this is still the serial it cached (a key's word, whose generation has 15 bits that a
     * peer can also write, repeats)
     */
    static final int A_SERIAL = 48;
    /** in entry 0 (key index 0 is never used): the inode of the owner's control segment, whose table this is */
    static final int A_CTRL_INODE = 0;
    static final long ATTACH_SIZE = (long) 1 << 14 << 6; // MAX_KEYS * A_BYTES
    /**
     * 1 when the context's engine may sleep on {@link #H_FUTEX} (a DEDICATED context), written before any peer maps
     * the segment: a peer of a context that never sleeps (INVOKER) needs no fence and no look at the sleeping flag
     * after its stores
     */
    static final long H_MAY_SLEEP = 44;

    static final int MAX_KEYS = 1 << 14;
    static final int KEY_BYTES = 128;
    static final long KEYS = 4096;
    static final int K_KEY = 0;
    static final int K_ACCESS = 4;
    static final int K_PD = 8;
    static final int K_INODE = 16;
    static final int K_FD = 24;
    /**
     * {@link #K_FD} of a region of memory that is not shared (the application allocated it), with inode 0: peers reach
     * it by cross-memory attach ({@code process_vm_readv}/{@code process_vm_writev}) at the address its owner's attach
     * table ({@link #H_ATTACH_FD}) gives; no atomics (docs/shm-design.md, "Cross-memory attach")
     */
    static final int ATTACHED = -1;
    static final int K_IN_USE = 28;
    static final int K_VA = 32;
    static final int K_LEN = 40;
    static final int K_OFF = 48;
    static final int K_BUFSIZE = 56;
    /** a type 2 memory window's QP + 1, the only QP its key serves (IBA 10.6.7.2.2); 0: any QP (a region, a type 1 window) */
    static final int K_QPN = 64;
    /** the buffer's serial in its owner's process (SharedBuffers): with the inode, the buffer's identity */
    static final int K_SERIAL = 72;

    static final int MAX_QPS = 4096;
    static final int QP_BYTES = 64;
    static final long QPS = KEYS + (long) MAX_KEYS * KEY_BYTES;
    static final int Q_QPN = 0;
    static final int Q_STATE = 4;
    static final int Q_PD = 8;
    static final int Q_ACCESS = 16;
    static final int Q_ERROR = 20;
    /** the QP's inbound ring (u64), for a reader of the segment: senders take it from {@link #ring} of the entry's index */
    static final int Q_RING = 24;
    static final int Q_MIN_RNR = 32;
    /**
     * 1 while the QP is on its engine's watched list (it has a receive posted): the engine loads its ring's next
     * slot in every duty cycle, so a sender need not store the pending word for it
     */
    static final int Q_WATCHED = 36;
    /**
     * The index of the key entry whose memory a one-sided operation toward this QP is touching now, or 0: taken
     * from 0 with a CAS by the initiator (the first half of the Dekker pair with a withdrawing owner, as the key
     * entry's in-use count), given back with a release store of 0 after its copy. Written by initiators only,
     * never by the QP's own context (not even when it makes the QP: an initiator may still hold it); an initiator
     * that finds it taken (another QP that names this one as its destination) raises the key's in-use count.
     */
    static final int Q_HELD = 40;
    /**
     * A sender's hold (in its own hold word, or else in the destination QP's {@link #Q_HELD} taken with a CAS) from
     * before its check that the destination QP names it as partner to after its slot's sequence store: the QP
     * letting it go waits while it is set before it clears its ring, so no slot of a check passed before the
     * partner's name was cleared lands after (docs/shm-design.md, "Connections, peers and liveness"). Never a key
     * entry's index, so a withdrawal never waits for it.
     */
    static final int SEND_HOLD = -1;
    /**
     * The QP this one is connected to (its partner): its QPN (0: none) and its context's id ({@code pid << 32 | fd}
     * of its GID), published by this context at every connection (modify to RTR) and cleared when the QP lets it go
     * (reset, destroy, another connection; before a membarrier when the partner's own hold word was on its list of
     * partners). A QP takes requests and messages only from the QP these name: a sender or initiator that finds
     * another identity here stops as for a QP that is gone (its requests fail with RETRY_EXC_ERR). An initiator
     * whose identity these name, both contexts registered for membarrier, may hold this QP's keys by its own word
     * ({@link #HOLDS}).
     */
    static final int Q_DEST_QPN = 44;
    static final int Q_DEST_ID = 48;
    /**
     * The entry's generation: raised by one (a volatile store, after the fields it covers) whenever its state,
     * access, partner or QPN changes (modify, ERROR, reset, destroy, a partner let go: before that one's
     * membarrier), never lowered, not even when another QP takes the entry. An initiator whose checks of this QP
     * and of one key entry passed at generation {@code g} repeats none of them while this word is still {@code g}
     * and the key's word unchanged (docs/shm-performance.md, "The initiator's checks, once per generation").
     */
    static final int Q_GEN = 56;

    /** a line per QP, written by the receiving engine only, read by the sender (docs/shm-design.md) */
    static final int RESP_BYTES = 128; // two lines: the adjacent-line prefetcher pairs lines, so no neighbour shares it
    static final long RESPS = QPS + (long) MAX_QPS * QP_BYTES;
    /**
     * the ring position the receiver has read up to (u64), counted from its connection's random base (published with
     * it before the partner's name at each connection): the sender may write up to RING_SLOTS past it
     */
    static final int R_READ = 0;
    /** the last message's result (u64): its message number in the low int, a status (DONE, RNR | code << 8, ERROR + syndrome) in the high */
    static final int R_RESULT = 8;
    /**
     * UD: the ring position the next datagram goes to (u64), in the entry's second line: written by senders, each
     * while it holds the receiving QP's held word ({@link #Q_HELD}), and set to the ring's base by the receiver at
     * RTR before the QP takes datagrams (docs/shm-design.md, "UD")
     */
    static final int R_TAIL = 64;
    /** UD: {@link #Q_DEST_ID} of a UD QP, which has no partner: no RC or UC sender names it, and UD senders ask for it */
    static final long UD_MARK = -1L;

    static final int RING_SLOTS = 16;
    static final int SLOT_HEADER = 64;
    static final int CHUNK = 8192;
    static final int SLOT = SLOT_HEADER + CHUNK;
    static final long RING_BYTES = (long) RING_SLOTS * SLOT;
    static final long RINGS = RESPS + (long) MAX_QPS * RESP_BYTES;
    /**
     * MAX_QPS words of 8 bytes, one per QP: as an initiator, the index of the key entry of its partner's context
     * whose memory it touches now (0: none). Written by this context's driving thread only (a plain store before it
     * reads the key, a release store of 0 after its copy), read by the partner's context when it withdraws a key
     * or lets the QP go, after a membarrier (docs/shm-design.md, "The initiator's own hold"). As a sender, {@link
     * #SEND_HOLD} from before its check of the partner's words to after its slot's sequence store.
     */
    static final long HOLDS = RINGS + MAX_QPS * RING_BYTES;
    static final long SIZE = HOLDS + MAX_QPS * 8L;

    // slot header: one line, stored by the sender with the sequence last (a release store)
    /**
     * the slot's sequence, (int) (ring position + 1) once written for that position, in the low int, and the QPN the
     * sender meant in the high int (a slot written for a QP since destroyed is dropped by the one now in its place):
     * one u64, stored last with a release store; the receiver never writes it
     */
    static final int S_SEQ = 0;
    /** flags (low byte) and opcode (bits 8-15) in the low int, the chunk's length in the high int: one u64 */
    static final int S_FLAGS_LEN = 8;
    /** immediate data (or SEND_WITH_INV's key) in the low int, the message number in the high: one u64 */
    static final int S_IMM_MSG = 16;
    /** a chunk of up to INLINE bytes is here, in the header's own line */
    static final int S_INLINE = 24;
    static final int INLINE = SLOT_HEADER - S_INLINE;
    // a UD datagram's slot: its payload after the header line (never inline), and in the line's inline area what the
    // receiver's GRH and completion need (the message number's place, S_IMM_MSG's high int, holds the source QPN)
    /** UD: the datagram's Q_Key (the request's, or the sending QP's own when the request's has its high bit set) */
    static final int U_QKEY = 24;
    /** UD: the sending context's process and control segment descriptor: its GID ({@code ShmTransport.gid}) */
    static final int U_SRC_PID = 28;
    static final int U_SRC_FD = 32;
    /** UD: the address handle's traffic class (bits 8-15) and hop limit (bits 0-7) */
    static final int U_TCLASS_HOP = 36;
    /** UD: the address handle's flow label (20 bits) */
    static final int U_FLOW = 40;
    /** a WRITE with immediate data carries no payload: its WRITE's length (u64) is here */
    static final int S_TOTAL = S_INLINE;

    // results (the high int of R_RESULT; a slot itself has none: the receiver never writes its ring)
    static final int DONE = 2;
    static final int RNR = 3;
    /** the RNR result carries the receiver's timer code in bits 8-15 */
    static final int RNR_CODE_SHIFT = 8;
    /** a result at or above this is a NAK: {@code ERROR + syndrome} */
    static final int ERROR = 16;
    /** what the receiver did with a slot (counters only) */
    static final int DISCARDED = 4;

    // NAK syndromes (a QP entry's error request is one of these + 1)
    static final int NAK_INVALID_REQUEST = 1;
    static final int NAK_REMOTE_ACCESS = 2;
    static final int NAK_REMOTE_OP = 3;

    // slot flags
    static final int F_FIRST = 1;
    static final int F_LAST = 2;
    static final int F_IMM = 4;
    static final int F_INV = 8;
    static final int F_SOLICITED = 16;
    /**
     * on a message's first chunk: the first message the sender wrote after it read an RNR result (it sends the refused
     * message again, and every one after it), or an RC sender's first since it connected (a receiver still refusing a
     * message of its QP from before that QP was reset alone takes it); a receiver that refused a message drops every
     * slot until one carries it, and only a refusing receiver reads it
     */
    static final int F_RETRY = 32;

    private Ctrl() {
    }

    /** @return the offset in an attach table ({@link #H_ATTACH_FD}) of key index {@code index}'s entry */
    static long attach(int index) {
        return (long) index * A_BYTES;
    }

    static long key(int index) {
        return KEYS + (long) index * KEY_BYTES;
    }

    static long qp(int slot) {
        return QPS + (long) slot * QP_BYTES;
    }

    static long resp(int slot) {
        return RESPS + (long) slot * RESP_BYTES;
    }

    static long ring(int slot) {
        return RINGS + slot * RING_BYTES;
    }

    static long hold(int slot) {
        return HOLDS + slot * 8L;
    }
}

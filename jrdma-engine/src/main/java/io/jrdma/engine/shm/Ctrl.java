package io.jrdma.engine.shm;

/**
 * The layout of a context's control segment (a memfd its peers map at connect time; all fields
 * in native byte order, see docs/shm-design.md):
 * <pre>
 * header   @0          magic u64 | version u32 | pid u32 | max keys u32 | max QPs u32 | ... |
 *                      @32 sleeping u32 | @36 futex u32 | @40 input pending u32
 * keys     @KEYS       MAX_KEYS entries of 64 B, indexed by rkey >>> 8:
 *                      key u32 (0 = invalid) | access u16 and generation u16 (one u64 word with the key) |
 *                      pd u64 | inode u64 | fd u32 | in-use u32 |
 *                      va u64 | length u64 | offset in the buffer u64 | buffer size u64
 * QPs      @QPS        MAX_QPS entries of 64 B: qpn u32 (0 = free) | state u32 | pd u64 | access u32 |
 *                      error request u32 (a peer's NAK syndrome + 1) | ring u64 (offset of its inbound ring)
 * rings    @RINGS      MAX_QPS inbound rings of RING_SLOTS slots of SLOT bytes: a 64-byte header
 *                      (state u32 | flags u32 | length u32 | imm u32 | message u64 | total u64 |
 *                      rnr timer u32 | opcode u32 | destination QPN u32) and CHUNK bytes of payload
 * </pre>
 */
final class Ctrl {
    // offsets are longs: a VarHandle of a segment takes a long offset, and an int one at its call site would
    // make every access adapt its type at run time (MethodHandle.asType), many times slower than the access
    static final long MAGIC = 0x4D48534D4452444AL; // a constant that says "a jrdma control segment"
    static final int VERSION = 2;
    static final long H_MAGIC = 0;
    static final long H_VERSION = 8;
    static final long H_PID = 12;
    /** 1 while the context's engine thread sleeps on {@link #H_FUTEX}: a peer that gives it work wakes it */
    static final long H_SLEEPING = 32;
    /** the futex word: bumped by each wake */
    static final long H_FUTEX = 36;
    /**
     * 1 when a peer wrote one of the context's inbound rings or error requests since the engine last looked:
     * the engine scans its rings only then (it clears the word first); peers store it after what they wrote
     */
    static final long H_PENDING = 40;

    static final int MAX_KEYS = 1 << 14;
    static final int KEY_BYTES = 64;
    static final long KEYS = 4096;
    static final int K_KEY = 0;
    static final int K_ACCESS = 4;
    static final int K_PD = 8;
    static final int K_INODE = 16;
    static final int K_FD = 24;
    static final int K_IN_USE = 28;
    static final int K_VA = 32;
    static final int K_LEN = 40;
    static final int K_OFF = 48;
    static final int K_BUFSIZE = 56;

    static final int MAX_QPS = 4096;
    static final int QP_BYTES = 64;
    static final long QPS = KEYS + (long) MAX_KEYS * KEY_BYTES;
    static final int Q_QPN = 0;
    static final int Q_STATE = 4;
    static final int Q_PD = 8;
    static final int Q_ACCESS = 16;
    static final int Q_ERROR = 20;
    static final int Q_RING = 24;
    static final int Q_MIN_RNR = 32;

    static final int RING_SLOTS = 16;
    static final int SLOT_HEADER = 64;
    static final int CHUNK = 8192;
    static final int SLOT = SLOT_HEADER + CHUNK;
    static final long RING_BYTES = (long) RING_SLOTS * SLOT;
    static final long RINGS = QPS + (long) MAX_QPS * QP_BYTES;
    static final long SIZE = RINGS + MAX_QPS * RING_BYTES;

    // slot header
    static final int S_STATE = 0;
    static final int S_FLAGS = 4;
    static final int S_LEN = 8;
    static final int S_IMM = 12;
    static final int S_MSG = 16;
    static final int S_TOTAL = 24;
    static final int S_RNR = 32;
    static final int S_OPCODE = 36;
    /** the QPN the sender meant: a slot written for a QP since destroyed is dropped by the one now in its place */
    static final int S_QPN = 40;

    // slot states: written by the sender (FREE -> FULL), by the receiver (FULL -> a result), by the sender (-> FREE)
    static final int FREE = 0;
    static final int FULL = 1;
    static final int DONE = 2;
    static final int RNR = 3;
    static final int DISCARDED = 4;
    /** a result at or above this is a NAK: {@code ERROR + syndrome} */
    static final int ERROR = 16;

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

    private Ctrl() {
    }

    static long key(int index) {
        return KEYS + (long) index * KEY_BYTES;
    }

    static long qp(int slot) {
        return QPS + (long) slot * QP_BYTES;
    }

    static long ring(int slot) {
        return RINGS + slot * RING_BYTES;
    }
}

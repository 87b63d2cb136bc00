package io.jrdma.rdmacore;

/**
 * The type 2 binds of one context that were posted and whose completion has not been seen: a ring of
 * {@value #SIZE} entries (QPN, wr_id, window, old key, new key), so that a bind completing in error gives its
 * window its old key back ({@link RdmaCoreMw#restoreKey}). A CQ poll looks here only while an entry is
 * pending (one volatile read otherwise); adding and completing take this object's lock, so only programs that
 * bind type 2 windows pay for it. A successful bind that is not signaled completes nothing: its entry stays
 * until the ring wraps over it.
 */
final class PendingBinds {
    static final int SIZE = 64;
    private final int[] qpn = new int[SIZE];
    private final long[] wrId = new long[SIZE];
    private final RdmaCoreMw[] mw = new RdmaCoreMw[SIZE];
    private final int[] prev = new int[SIZE];
    private final int[] next = new int[SIZE];
    private int head;
    private volatile int pending;

    /** {@return true while a bind is pending} */
    boolean any() {
        return pending != 0;
    }

    synchronized void add(int qpNum, long id, RdmaCoreMw window, int oldKey, int newKey) {
        int i = head;
        head = (head + 1) % SIZE;
        if (mw[i] == null) {
            pending++;
        }
        qpn[i] = qpNum;
        wrId[i] = id;
        mw[i] = window;
        prev[i] = oldKey;
        next[i] = newKey;
    }

    /**
     * A completion of QP {@code qpNum} with {@code id}: the oldest pending bind it matches is done, and its
     * window's key is restored unless {@code ok}.
     */
    synchronized void completed(int qpNum, long id, boolean ok) {
        for (int n = 0; n < SIZE; n++) {
            int i = (head + n) % SIZE;
            if (mw[i] != null && qpn[i] == qpNum && wrId[i] == id) {
                if (!ok) {
                    mw[i].restoreKey(next[i], prev[i]);
                }
                mw[i] = null;
                pending--;
                return;
            }
        }
    }
}

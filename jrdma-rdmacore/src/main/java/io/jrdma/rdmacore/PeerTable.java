package io.jrdma.rdmacore;

/**
 * QPN to destination QPN, for the {@code src_qp} of RC and UC receive completions (rdma-core reports it for
 * UD only): an open-addressing table of {@code (qpn + 1) << 32 | destQpn}, replaced whole on the control path
 * ({@link #set}, under a lock, allocating) and read on the data path without lock or allocation ({@link #get}).
 */
final class PeerTable {
    private volatile long[] table = new long[64];

    /**
     * Sets (or, with a negative {@code destQpn}, removes) the entry of {@code qpn}.
     *
     * @param qpn     a QP number
     * @param destQpn its destination QPN, or -1 to remove it
     */
    synchronized void set(int qpn, int destQpn) {
        long[] t = table;
        int used = 0;
        for (long e : t) {
            used += e != 0 ? 1 : 0;
        }
        long[] n = new long[(used + 1) * 2 > t.length ? t.length * 2 : t.length];
        for (long e : t) {
            int q = (int) (e >>> 32) - 1;
            if (e != 0 && q != qpn) {
                put(n, q, (int) e);
            }
        }
        if (destQpn >= 0) {
            put(n, qpn, destQpn);
        }
        table = n;
    }

    private static int slot(int qpn, int mask) {
        return (qpn * 0x9E3779B9 >>> 7) & mask;
    }

    private static void put(long[] t, int qpn, int dest) {
        int mask = t.length - 1;
        int i = slot(qpn, mask);
        while (t[i] != 0) {
            i = (i + 1) & mask;
        }
        t[i] = ((long) (qpn + 1) << 32) | (dest & 0xFFFFFFFFL);
    }

    /**
     * @param qpn a QP number
     * @return its destination QPN, or -1 when it has none
     */
    int get(int qpn) {
        long[] t = table;
        int mask = t.length - 1;
        int i = slot(qpn, mask);
        long key = (long) (qpn + 1) << 32;
        for (int n = 0; n < t.length; n++) {
            long e = t[i];
            if (e == 0) {
                return -1;
            }
            if ((e & 0xFFFFFFFF00000000L) == key) {
                return (int) e;
            }
            i = (i + 1) & mask;
        }
        return -1;
    }
}

package io.jrdma.verbs;

/** The scatter/gather list of a work request: parallel arrays of address, length and lkey. */
final class SgeList {
    final long[] addr;
    final int[] length;
    final int[] lkey;
    int count;

    SgeList(int maxSge) {
        if (maxSge < 1) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "maxSge must be at least 1, not " + maxSge);
        }
        addr = new long[maxSge];
        length = new int[maxSge];
        lkey = new int[maxSge];
    }

    void set(int index, long a, int len, int key) {
        if (index < 0 || index >= addr.length) {
            throw new IndexOutOfBoundsException("SGE index " + index + " outside 0.." + (addr.length - 1)
                    + "; construct the request with a larger maxSge");
        }
        addr[index] = a;
        length[index] = len;
        lkey[index] = key;
        count = index + 1;
    }

    void count(int n) {
        if (n < 0 || n > addr.length) {
            throw new IndexOutOfBoundsException("numSge " + n + " outside 0.." + addr.length);
        }
        count = n;
    }

    long totalLength() {
        long sum = 0;
        for (int i = 0; i < count; i++) {
            sum += Integer.toUnsignedLong(length[i]);
        }
        return sum;
    }
}

package io.jrdma.wire;

/**
 * Finds the IPv4 Identification a peer's ICRC was computed with. The ICRC covers the 16-bit
 * ID, which a user-space receiver cannot see, and Linux senders fill it with non-zero
 * counters. CRC-32 is affine over GF(2): flipping ID bit {@code i} changes the CRC by a fixed
 * 32-bit column that depends only on how many bytes follow the ID. So with {@code c0} the ICRC
 * computed with ID 0 and {@code c} the received one, the ID is the x with
 * {@code XOR of col_i over the set bits of x == c0 ^ c}: 32 equations, 16 unknowns, solved by
 * elimination. A solution exists for a genuine packet; a corrupted one has one only with
 * probability 2^-16, which is how much weaker the check becomes (see docs/wire.md).
 *
 * <p>Not thread-safe; columns are cached per packet length. Allocation-free once a length's
 * columns are cached.
 */
public final class Ipv4IdSolver {
    /** Bytes of the pseudo header before the ID's first byte: 8 (masked LRH) + 4 (IPv4 header). */
    private static final int ID_OFFSET = 8 + 4;
    private static final int[] TABLE = new int[256];
    private static final int CACHE = 8;

    static {
        for (int n = 0; n < 256; n++) {
            int c = n;
            for (int k = 0; k < 8; k++) {
                c = (c & 1) != 0 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
            }
            TABLE[n] = c;
        }
    }

    private final int[] cachedLength = new int[CACHE];
    private final int[][] cachedColumns = new int[CACHE][16];
    private int next;
    private final int[] basis = new int[32];
    private final int[] combo = new int[32];
    private final int[] square = new int[32];
    private final int[] power = new int[32];
    private final int[] tmp = new int[32];

    public Ipv4IdSolver() {
        java.util.Arrays.fill(cachedLength, -1);
    }

    /**
     * @param icrcWithIdZero the ICRC computed with the ID taken as 0 ({@link Icrc#computeIpv4} with ipId 0)
     * @param received       the ICRC the packet carries
     * @param roceLen        the RoCE packet's length without its ICRC (BTH through pad)
     * @return the ID (0..65535) that explains the received ICRC, or -1 if none does
     */
    public int solve(int icrcWithIdZero, int received, int roceLen) {
        int diff = icrcWithIdZero ^ received;
        if (diff == 0) {
            return 0;
        }
        int[] cols = columns(roceLen);
        // Gaussian elimination over GF(2): basis[p] has its lowest set bit at p; combo[p] records
        // which ID bits it is made of
        java.util.Arrays.fill(basis, 0);
        for (int i = 0; i < 16; i++) {
            int v = cols[i];
            int mask = 1 << i;
            while (v != 0) {
                int p = Integer.numberOfTrailingZeros(v);
                if (basis[p] == 0) {
                    basis[p] = v;
                    combo[p] = mask;
                    break;
                }
                v ^= basis[p];
                mask ^= combo[p];
            }
        }
        int id = 0;
        while (diff != 0) {
            int p = Integer.numberOfTrailingZeros(diff);
            if (basis[p] == 0) {
                return -1;
            }
            diff ^= basis[p];
            id ^= combo[p];
        }
        return id;
    }

    /** @return the CRC change caused by each of the 16 ID bits (bit 0 = the ID's least significant bit) */
    private int[] columns(int roceLen) {
        for (int i = 0; i < CACHE; i++) {
            if (cachedLength[i] == roceLen) {
                return cachedColumns[i];
            }
        }
        int slot = next;
        next = (next + 1) % CACHE;
        int total = ID_OFFSET + 20 - 4 + 8 + roceLen; // masked LRH + IPv4 + UDP + RoCE
        int trailing = total - ID_OFFSET - 2;
        zeroBytesOperator(trailing);
        int[] cols = cachedColumns[slot];
        for (int bit = 0; bit < 16; bit++) {
            int id = 1 << bit;
            int reg = 0;
            reg = (reg >>> 8) ^ TABLE[(reg ^ (id >>> 8)) & 0xFF]; // the ID is big-endian: high byte first
            reg = (reg >>> 8) ^ TABLE[(reg ^ id) & 0xFF];
            cols[bit] = apply(power, reg);
        }
        cachedLength[slot] = roceLen;
        return cols;
    }

    /** Leaves in {@link #power} the matrix of "process {@code bytes} zero bytes" on the CRC register. */
    private void zeroBytesOperator(int bytes) {
        // one zero bit: shift right, feeding the polynomial back from bit 0 (reflected CRC-32)
        square[0] = 0xEDB88320;
        for (int k = 1; k < 32; k++) {
            square[k] = 1 << (k - 1);
        }
        multiply(square, square, tmp);   // 2 bits
        multiply(tmp, tmp, square);      // 4 bits
        multiply(square, square, tmp);   // 8 bits = one byte
        System.arraycopy(tmp, 0, square, 0, 32);
        for (int k = 0; k < 32; k++) {
            power[k] = 1 << k;           // identity
        }
        int n = bytes;
        while (n != 0) {
            if ((n & 1) != 0) {
                multiply(square, power, tmp);
                System.arraycopy(tmp, 0, power, 0, 32);
            }
            n >>>= 1;
            if (n != 0) {
                multiply(square, square, tmp);
                System.arraycopy(tmp, 0, square, 0, 32);
            }
        }
    }

    /** out = a · b, matrices as the images of the 32 unit vectors (column k = image of bit k). */
    private static void multiply(int[] a, int[] b, int[] out) {
        for (int k = 0; k < 32; k++) {
            out[k] = apply(a, b[k]);
        }
    }

    private static int apply(int[] m, int v) {
        int r = 0;
        for (int k = 0; v != 0; k++, v >>>= 1) {
            if ((v & 1) != 0) {
                r ^= m[k];
            }
        }
        return r;
    }
}

package io.jrdma.wire;

/**
 * 24-bit packet sequence number arithmetic (modulo 2^24).
 *
 * <p>{@link #compare} follows rxe's {@code psn_compare(a, b) = (s32)((a - b) << 8)}
 * ({@code rxe_verbs.h}): PSNs less than 2^23 ahead count as "after". jrdma spec D7.
 * Pure functions, no allocation.
 */
public final class Psn {
    private Psn() {
    }

    /** Mask of a PSN. */
    public static final int MASK = 0x00FF_FFFF;
    /** Half the PSN space, the window for before/after decisions. */
    public static final int HALF = 0x0080_0000;

    /** {@code (psn + n) mod 2^24}. */
    public static int add(int psn, int n) {
        return (psn + n) & MASK;
    }

    /** {@code (psn + 1) mod 2^24}. */
    public static int next(int psn) {
        return (psn + 1) & MASK;
    }

    /**
     * Signed distance {@code a - b} in [-2^23, 2^23): positive if {@code a} is after
     * {@code b}, zero if equal, negative if before.
     */
    public static int diff(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    /** Same sign as {@link #diff}; the exact rxe expression. */
    public static int compare(int a, int b) {
        return (a - b) << 8;
    }

    /** True if {@code a} is strictly after {@code b}. */
    public static boolean after(int a, int b) {
        return compare(a, b) > 0;
    }

    /** True if {@code a} is strictly before {@code b}. */
    public static boolean before(int a, int b) {
        return compare(a, b) < 0;
    }
}

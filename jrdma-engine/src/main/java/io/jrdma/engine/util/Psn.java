package io.jrdma.engine.util;

/** 24-bit packet sequence number arithmetic (IBA 9.7.1; rxe's {@code psn_compare}). */
public final class Psn {
    public static final int MASK = 0xFFFFFF;

    private Psn() {
    }

    /** @return a − b as a signed distance in the 24-bit circle: &gt;0 if a is after b */
    public static int diff(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    public static int add(int psn, int n) {
        return (psn + n) & MASK;
    }
}

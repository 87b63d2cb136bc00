package io.jrdma.tools.oob;

import java.math.BigDecimal;
import java.math.RoundingMode;

/**
 * The few C {@code printf} conversions the Linux tools print with, where Java's
 * {@link String#format} differs: {@code %#0Nx} (no {@code 0x} for zero, the width counts the
 * prefix), {@code %.Nf} (glibc rounds the exact binary value, ties to even), and
 * {@code inet_ntop(AF_INET6)} (glibc's text form of an IPv6 address).
 */
public final class CFormat {
    private CFormat() {
    }

    /**
     * C's {@code %#0<width>x}: "0x" and lowercase hex digits padded with zeros so that the
     * whole is {@code width} characters; zero prints without the prefix ({@code %#04x} of 0 is
     * {@code 0000}, of 0x15 {@code 0x15}, of 0x4e98c with {@code %#06x} {@code 0x4e98c}).
     */
    public static String hashHex(long value, int width) {
        String digits = Long.toHexString(value);
        if (value == 0) {
            return "0".repeat(Math.max(1, width));
        }
        int pad = width - 2 - digits.length();
        return "0x" + (pad > 0 ? "0".repeat(pad) : "") + digits;
    }

    /** C's {@code %0<width>x} of an unsigned value. */
    public static String hex(long value, int width) {
        String digits = Long.toHexString(value);
        return digits.length() >= width ? digits : "0".repeat(width - digits.length()) + digits;
    }

    /** C's {@code %.<precision>f} as glibc prints it: the exact binary value, rounded half to even. */
    public static String fixed(double value, int precision) {
        if (Double.isNaN(value)) {
            return "-nan";
        }
        if (Double.isInfinite(value)) {
            return value > 0 ? "inf" : "-inf";
        }
        String s = new BigDecimal(value).setScale(precision, RoundingMode.HALF_EVEN).toPlainString();
        if (value < 0 || (value == 0 && 1 / value < 0)) {
            return s.startsWith("-") ? s : "-" + s;
        }
        return s;
    }

    /** C's {@code %-<width>.<precision>f}: {@link #fixed}, left-aligned in {@code width}. */
    public static String fixedLeft(double value, int width, int precision) {
        return left(fixed(value, precision), width);
    }

    /** C's {@code %-<width>s}. */
    public static String left(String s, int width) {
        return s.length() >= width ? s : s + " ".repeat(width - s.length());
    }

    /**
     * {@code inet_ntop(AF_INET6, ...)} as glibc writes it: groups in lowercase hex without
     * leading zeros, the first longest run of two or more zero groups as {@code ::}, and the
     * last 32 bits in dotted decimal for {@code ::a.b.c.d} and {@code ::ffff:a.b.c.d}.
     */
    public static String inetNtop6(byte[] a) {
        if (a.length != 16) {
            throw new IllegalArgumentException("an IPv6 address has 16 bytes, not " + a.length);
        }
        int[] w = new int[8];
        for (int i = 0; i < 8; i++) {
            w[i] = (a[2 * i] & 0xff) << 8 | (a[2 * i + 1] & 0xff);
        }
        int bestBase = -1;
        int bestLen = 0;
        int curBase = -1;
        int curLen = 0;
        for (int i = 0; i < 8; i++) {
            if (w[i] == 0) {
                if (curBase == -1) {
                    curBase = i;
                    curLen = 1;
                } else {
                    curLen++;
                }
            } else if (curBase != -1) {
                if (bestBase == -1 || curLen > bestLen) {
                    bestBase = curBase;
                    bestLen = curLen;
                }
                curBase = -1;
            }
        }
        if (curBase != -1 && (bestBase == -1 || curLen > bestLen)) {
            bestBase = curBase;
            bestLen = curLen;
        }
        if (bestBase != -1 && bestLen < 2) {
            bestBase = -1;
        }
        StringBuilder sb = new StringBuilder(46);
        for (int i = 0; i < 8; i++) {
            if (bestBase != -1 && i >= bestBase && i < bestBase + bestLen) {
                if (i == bestBase) {
                    sb.append(':');
                }
                continue;
            }
            if (i != 0) {
                sb.append(':');
            }
            if (i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff))) {
                sb.append(a[12] & 0xff).append('.').append(a[13] & 0xff).append('.').append(a[14] & 0xff).append('.')
                        .append(a[15] & 0xff);
                return sb.toString();
            }
            sb.append(Integer.toHexString(w[i]));
        }
        if (bestBase != -1 && bestBase + bestLen == 8) {
            sb.append(':');
        }
        return sb.toString();
    }
}

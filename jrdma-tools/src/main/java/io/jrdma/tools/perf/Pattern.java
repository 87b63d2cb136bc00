package io.jrdma.tools.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The data pattern senders write and receivers check under {@code --verify}: byte {@code o} of
 * an area is a function of {@code o} and a seed only, so any prefix of an area is the pattern of
 * that shorter area, and both sides can produce the expected image independently.
 */
final class Pattern {
    private static final ValueLayout.OfLong LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** The seed of the server's buffer for the READ tests (it does not depend on the size). */
    static final long READ_SEED = 0x5EED_0F_12EAD_0L;

    private Pattern() {
    }

    /** @return the seed of the data sent at {@code size} bytes, so stale data of another size never passes */
    static long seed(int size) {
        return size * 0x2545F4914F6CDD1DL + 0x1234567L;
    }

    private static long word(long index, long seed) {
        long z = index * 0x9E3779B97F4A7C15L + seed;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** @return byte {@code o} of the pattern */
    static byte at(long o, long seed) {
        return (byte) (word(o >>> 3, seed) >>> ((o & 7) << 3));
    }

    /** Fills {@code seg} with the pattern, offsets relative to the segment's start. */
    static void fill(MemorySegment seg, long seed) {
        long n = seg.byteSize();
        long o = 0;
        for (; o + 8 <= n; o += 8) {
            seg.set(LE, o, word(o >>> 3, seed));
        }
        for (; o < n; o++) {
            seg.set(ValueLayout.JAVA_BYTE, o, at(o, seed));
        }
    }

    /**
     * Compares {@code actual} with the pattern image {@code expected} (same length).
     *
     * @return null when equal, else a sentence naming the first differing byte
     */
    static String compare(MemorySegment actual, MemorySegment expected, String what) {
        long at = actual.mismatch(expected);
        if (at < 0) {
            return null;
        }
        if (at >= actual.byteSize() || at >= expected.byteSize()) {
            return what + ": length " + actual.byteSize() + " differs from the expected " + expected.byteSize();
        }
        return String.format("%s: byte %d is 0x%02x, expected 0x%02x", what, at,
                actual.get(ValueLayout.JAVA_BYTE, at) & 0xff, expected.get(ValueLayout.JAVA_BYTE, at) & 0xff);
    }
}

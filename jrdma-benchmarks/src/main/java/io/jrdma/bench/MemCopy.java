package io.jrdma.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The memory-copy ceiling: {@link MemorySegment#copy} between two native buffers, one thread.
 * For each size, copies for {@code secs} seconds after a warm-up, cycling through as many
 * slots as {@code jrdma perf}'s bandwidth tests use ({@code min(64 * size, max(size, 8 MiB))}
 * bytes), so the working set matches theirs; with {@code span=size} it copies one buffer into one
 * other again and again (the working set of {@code ucx_perftest}'s bandwidth tests: caches stay warm).
 *
 * <pre>MemCopy sizes=4096,65536,1048576 [secs=1] [warm=0.3] [span=perf|size]</pre>
 * prints one {@code RESULT memcopy size=S gbps=... ns_per_copy=... span=B} per size
 * ({@code RESULT memcopy_hot ...} with {@code span=size}).
 */
public final class MemCopy {
    private MemCopy() {
    }

    public static void main(String[] argv) {
        Args a = new Args(argv);
        String[] sizes = a.str("sizes", "4096,65536,1048576").split(",");
        double secs = a.dbl("secs", 1);
        double warm = a.dbl("warm", 0.3);
        String spanMode = a.str("span", "perf");
        if (!spanMode.equals("perf") && !spanMode.equals("size")) {
            Result.fail("span must be perf (perf's working set) or size (one buffer), not " + spanMode);
        }
        boolean hot = spanMode.equals("size");
        try (Arena arena = Arena.ofConfined()) {
            for (String s : sizes) {
                int size = Integer.parseInt(s.trim());
                long span = hot ? size : Math.min(64L * size, Math.max(size, 8L << 20));
                MemorySegment src = arena.allocate(span, 4096);
                MemorySegment dst = arena.allocate(span, 4096);
                src.fill((byte) 1);
                dst.fill((byte) 2);
                int slots = (int) (span / size);
                run(src, dst, size, slots, (long) (warm * 1e9)); // warm-up
                long[] r = run(src, dst, size, slots, (long) (secs * 1e9));
                long copies = r[0];
                long nanos = r[1];
                Result.rate(hot ? "memcopy_hot" : "memcopy", size, copies * size, copies, nanos,
                        String.format(java.util.Locale.ROOT, "ns_per_copy=%.1f span=%d", (double) nanos / copies, span));
            }
        }
    }

    private static long[] run(MemorySegment src, MemorySegment dst, int size, int slots, long nanos) {
        long start = System.nanoTime();
        long end = start + nanos;
        long copies = 0;
        long now;
        int batch = Math.max(1, (1 << 20) / size);
        int slot = 0;
        do {
            for (int i = 0; i < batch; i++) {
                long off = (long) slot * size;
                MemorySegment.copy(src, off, dst, off, size);
                if (++slot == slots) {
                    slot = 0;
                }
            }
            copies += batch;
            now = System.nanoTime();
        } while (now - end < 0);
        return new long[] {copies, now - start};
    }
}

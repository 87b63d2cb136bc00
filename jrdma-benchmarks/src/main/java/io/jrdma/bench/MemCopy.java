package io.jrdma.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The memory-copy ceiling: {@link MemorySegment#copy} between two native buffers, one thread.
 * For each size, copies for {@code secs} seconds after a warm-up, cycling through as many
 * slots as {@code jrdma perf}'s bandwidth tests use ({@code min(64 * size, max(size, 8 MiB))}
 * bytes), so the working set matches theirs; with {@code span=size} it copies one buffer into one
 * other again and again (the working set of {@code ucx_perftest}'s bandwidth tests: caches stay warm).
 *
 * The warm-up lasts {@code warm} seconds and then goes on (at most {@value #WARM_MAX_NANOS} ns more) until the JVM's
 * JIT compiler threads ran less than 2% of a core over the last 0.1 s (Linux: their time on a CPU from
 * {@code /proc/self/task}), as {@code jrdma perf}'s bandwidth warm-up does, so that neither side of a comparison is
 * measured while its JIT works (docs/shm-performance.md, "Bandwidth against the copy").
 *
 * With {@code via=memmove} each copy is the C library's {@code memmove} called through the FFM linker (raw
 * addresses, no arena check) instead of {@link MemorySegment#copy}: what a copy by libc would give the shared-memory
 * provider's bulk WRITE and READ (docs/shm-performance.md, "MemorySegment.copy against libc's memmove"). Either way the
 * run fails unless the first slot's copy holds the source's bytes.
 *
 * <pre>MemCopy sizes=4096,65536,1048576 [secs=1] [warm=0.3] [span=perf|size] [via=segment|memmove]</pre>
 * prints one {@code RESULT memcopy size=S gbps=... ns_per_copy=... span=B jit_ms=J via=V} per size
 * ({@code RESULT memcopy_hot ...} with {@code span=size}), J the compiler threads' time on a CPU during the measured
 * copies (-1 where it cannot be read).
 */
public final class MemCopy {
    /** {@code via=memmove}: copies go through {@link Libc#MEMMOVE}. */
    private static boolean viaMemmove;

    /** libc's {@code memmove(dst, src, n)}, its result ignored; a constant, looked up when first used. */
    private static final class Libc {
        static final MethodHandle MEMMOVE = Linker.nativeLinker().downcallHandle(
                Linker.nativeLinker().defaultLookup().find("memmove").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    }

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
        String via = a.str("via", "segment");
        viaMemmove = via.equals("memmove");
        if (!viaMemmove && !via.equals("segment")) {
            Result.fail("via must be segment (MemorySegment.copy) or memmove (libc's, through FFM), not " + via);
        }
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
                long warmEnd = System.nanoTime() + WARM_MAX_NANOS;
                long jit = compilerNanos();
                while (jit >= 0 && System.nanoTime() - warmEnd < 0) { // until the JIT is quiet
                    run(src, dst, size, slots, 100_000_000L);
                    long j = compilerNanos();
                    boolean quiet = j >= 0 && j - jit < 2_000_000L;
                    jit = j;
                    if (quiet) {
                        break;
                    }
                }
                long jit0 = compilerNanos();
                long[] r = run(src, dst, size, slots, (long) (secs * 1e9));
                long jit1 = compilerNanos();
                long copies = r[0];
                long nanos = r[1];
                if (dst.get(ValueLayout.JAVA_BYTE, 0) != 1 || dst.asSlice(0, size).mismatch(src.asSlice(0, size)) != -1
                        || src.get(ValueLayout.JAVA_BYTE, 0) != 1) {
                    Result.fail("memcopy (" + via + "): the first slot's copy does not hold the source's bytes");
                }
                Result.rate(hot ? "memcopy_hot" : "memcopy", size, copies * size, copies, nanos,
                        String.format(java.util.Locale.ROOT, "ns_per_copy=%.1f span=%d jit_ms=%.1f via=%s", (double) nanos / copies,
                                span, jit0 < 0 || jit1 < 0 ? -1.0 : (jit1 - jit0) / 1e6, via));
            }
        }
    }

    /** The longest the warm-up goes on after {@code warm} while the JIT still works. */
    static final long WARM_MAX_NANOS = 2_000_000_000L;

    /** @return the ns this JVM's C1 and C2 compiler threads ran so far, or -1 where /proc cannot be read */
    static long compilerNanos() {
        long sum = 0;
        try (java.util.stream.Stream<java.nio.file.Path> tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
            for (java.nio.file.Path t : (Iterable<java.nio.file.Path>) tasks::iterator) {
                try {
                    String name = java.nio.file.Files.readString(t.resolve("comm"));
                    if (name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler")) {
                        sum += Long.parseLong(java.nio.file.Files.readString(t.resolve("schedstat")).trim().split("\\s+")[0]);
                    }
                } catch (java.io.IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            return -1;
        }
        return sum;
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
                if (!viaMemmove) {
                    MemorySegment.copy(src, off, dst, off, size);
                } else {
                    move(dst.address() + off, src.address() + off, size);
                }
                if (++slot == slots) {
                    slot = 0;
                }
            }
            copies += batch;
            now = System.nanoTime();
        } while (now - end < 0);
        return new long[] {copies, now - start};
    }

    private static void move(long dst, long src, long n) {
        try {
            Libc.MEMMOVE.invokeExact(dst, src, n);
        } catch (Throwable t) {
            throw new IllegalStateException("memmove failed", t);
        }
    }
}

package io.jrdma.tools.perf;

/**
 * Whether this JVM's JIT compiler threads have gone quiet: they ran less than {@value #MAX_BUSY_NANOS} ns in the
 * last sample of at least {@value #SAMPLE_NANOS} ns (their time on a CPU from {@code /proc/self/task/<tid>/schedstat},
 * threads named {@code C1 CompilerThread*} and {@code C2 CompilerThread*}). A bandwidth run's warm-up goes on until
 * then: on a 2-core host a compiler thread still at work takes the other core, and the measured run lost 10-15% with
 * it (docs/shm-performance.md, "Bandwidth against the copy"). Where {@code /proc} cannot be read it is always quiet (the
 * warm-up keeps its fixed length). Not for the data path: each sample lists the process's threads.
 */
final class JitQuiet {
    static final long SAMPLE_NANOS = 100_000_000L;
    /** 2% of a core over a sample */
    static final long MAX_BUSY_NANOS = 2_000_000L;

    /** when the warm-up that asks began */
    private final long start;
    private long at;
    private long busy;
    private boolean quiet;

    JitQuiet(long now) {
        start = now;
        at = now;
        busy = compilerNanos();
    }

    /**
     * @return true while a warm-up that began at construction should go on: for at least {@link Perftest#WARMUP_NANOS},
     *         then while the compiler threads work ({@link #quiet}), at most {@link Perftest#WARMUP_MAX_NANOS} in all
     */
    boolean warming(long now) {
        long t = now - start;
        return t < Perftest.WARMUP_NANOS || !quiet(now) && t < Perftest.WARMUP_MAX_NANOS;
    }

    /** @return true when the last whole sample, ending at or before {@code now}, found the compiler threads quiet */
    boolean quiet(long now) {
        if (busy < 0) {
            return true;
        }
        if (now - at >= SAMPLE_NANOS) {
            long b = compilerNanos();
            quiet = b >= 0 && b - busy < MAX_BUSY_NANOS * ((now - at) / (double) SAMPLE_NANOS);
            busy = b;
            at = now;
        }
        return quiet;
    }

    /** @return the ns the JIT's compiler threads ran so far (the live ones), or -1 where /proc cannot be read */
    static long compilerNanos() {
        java.util.Map<String, Long> threads = WindowCpu.onCpu();
        if (threads == null) {
            return -1;
        }
        long sum = 0;
        for (java.util.Map.Entry<String, Long> e : threads.entrySet()) {
            String name = e.getKey().substring(e.getKey().indexOf(' ') + 1);
            if (name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler")) {
                sum += e.getValue(); // a thread that ended meanwhile leaves the sum, which only makes a sample look quieter
            }
        }
        return sum;
    }
}

package io.jrdma.bench;

import java.time.Duration;
import java.util.Locale;

/**
 * CPU time of this process (user + system, all threads) over a measured interval, printed as
 * {@code CPU <name> side=<side> cores=<CPU seconds per wall second>}; bench/compare.sh adds the
 * two sides of a pair and divides by the pair's rate: CPU seconds per GB moved, or per message.
 */
final class Cpu {
    private Cpu() {
    }

    /** @return this process's CPU time so far in ns, or -1 where the platform does not say */
    static long nanos() {
        return ProcessHandle.current().info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
    }

    /** Prints the CPU used since {@code cpu0} (from {@link #nanos()}) over the wall time since {@code wall0}. */
    static void print(String name, String side, long cpu0, long wall0, long wall1) {
        long cpu1 = nanos();
        if (cpu0 < 0 || cpu1 < 0 || wall1 - wall0 <= 0) {
            return;
        }
        System.out.println(String.format(Locale.ROOT, "CPU %s side=%s cores=%.4f cpu_ms=%.1f wall_ms=%.1f", name, side,
                (cpu1 - cpu0) / (double) (wall1 - wall0), (cpu1 - cpu0) / 1e6, (wall1 - wall0) / 1e6));
        System.out.flush();
    }
}

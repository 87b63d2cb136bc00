package io.jrdma.tools.perf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * With {@code -Djrdma.perf.cpu=true}: what the measuring thread and its process did during one measured run of
 * perftest's exchange, read before and after it (nothing in between): the thread's CPU time against the wall
 * clock (below 1 when it lost its core), the whole process's CPU time (its other threads: the JIT, the GC, an
 * engine thread), and the thread's involuntary context switches and migrations between CPUs from
 * {@code /proc/thread-self} (Linux; -1 where it cannot be read). Printed on stderr as
 * {@code CPU window side=S thread_cores=.. process_cores=.. wall_ms=.. uptime_ms=<the JVM's uptime at its start>-<at its end> nvcsw=..
 * migrations=.. others=name:ms,..}
 * (the other threads that ran in the window, by their time on a CPU: a JIT compiler thread still at work, say)
 * (docs/shm-performance.md, "Bandwidth against the copy").
 */
final class WindowCpu {
    static final boolean ON = Boolean.getBoolean("jrdma.perf.cpu");
    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();

    private final long wall0;
    private final long uptime0;
    private final long thread0;
    private final long process0;
    private final long nvcsw0;
    private final long migrations0;
    private final java.util.Map<String, Long> threads0;

    private WindowCpu() {
        threads0 = threadTimes();
        nvcsw0 = procField("status", "nonvoluntary_ctxt_switches:");
        migrations0 = procField("sched", "se.nr_migrations");
        process0 = io.jrdma.tools.oob.Roce.cpuNanos();
        thread0 = THREADS.getCurrentThreadCpuTime();
        wall0 = System.nanoTime();
        uptime0 = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime();
    }

    /** @return a window starting now, or null unless {@code -Djrdma.perf.cpu=true} */
    static WindowCpu start() {
        return ON ? new WindowCpu() : null;
    }

    /** Ends the window and prints its line on {@code err}. */
    void print(String side, java.io.PrintStream err) {
        long wall1 = System.nanoTime();
        long uptime1 = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime();
        long thread1 = THREADS.getCurrentThreadCpuTime();
        long process1 = io.jrdma.tools.oob.Roce.cpuNanos();
        long nvcsw1 = procField("status", "nonvoluntary_ctxt_switches:");
        long migrations1 = procField("sched", "se.nr_migrations");
        java.util.Map<String, Long> threads1 = threadTimes();
        double wall = wall1 - wall0;
        err.println(String.format(Locale.ROOT,
                "CPU window side=%s thread_cores=%.4f process_cores=%.4f wall_ms=%.1f uptime_ms=%d-%d nvcsw=%d migrations=%d",
                side,
                (thread1 - thread0) / wall, process0 < 0 || process1 < 0 ? -1.0 : (process1 - process0) / wall,
                wall / 1e6, uptime0, uptime1, nvcsw0 < 0 || nvcsw1 < 0 ? -1 : nvcsw1 - nvcsw0,
                migrations0 < 0 || migrations1 < 0 ? -1 : migrations1 - migrations0) + others(threads0, threads1));
        err.flush();
    }

    /**
     * {@return " others=name:ms,..."}: the process's other threads that ran at least 1 ms in the window, by their
     * time on a CPU ({@code /proc/self/task/<tid>/schedstat}), most first, at most six; empty when none or unreadable
     */
    private static String others(java.util.Map<String, Long> t0, java.util.Map<String, Long> t1) {
        String self = selfTid();
        java.util.List<java.util.Map.Entry<String, Long>> ran = new java.util.ArrayList<>();
        for (java.util.Map.Entry<String, Long> e : t1.entrySet()) {
            if (e.getKey().startsWith(self + " ")) {
                continue;
            }
            long d = e.getValue() - t0.getOrDefault(e.getKey(), 0L);
            if (d >= 1_000_000L) {
                ran.add(java.util.Map.entry(e.getKey().substring(e.getKey().indexOf(' ') + 1), d));
            }
        }
        if (ran.isEmpty()) {
            return "";
        }
        ran.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
        StringBuilder sb = new StringBuilder(" others=");
        for (int i = 0; i < Math.min(6, ran.size()); i++) {
            sb.append(i == 0 ? "" : ",").append(ran.get(i).getKey().replace(' ', '_')).append(':')
                    .append(String.format(Locale.ROOT, "%.1f", ran.get(i).getValue() / 1e6));
        }
        return sb.toString();
    }

    private static String selfTid() {
        try {
            return Path.of("/proc/thread-self").toRealPath().getFileName().toString();
        } catch (IOException e) {
            return "?";
        }
    }

    /** @return "tid name" to ns on a CPU, for every thread of this process (empty where /proc cannot be read) */
    private static java.util.Map<String, Long> threadTimes() {
        java.util.Map<String, Long> m = onCpu();
        return m == null ? new java.util.HashMap<>() : m;
    }

    /**
     * {@return "tid name" to the ns each live thread of this process ran on a CPU ({@code /proc/self/task/<tid>/comm}
     * and {@code schedstat}), or null where /proc cannot be read}; a thread that ends meanwhile is left out
     */
    static java.util.Map<String, Long> onCpu() {
        java.util.Map<String, Long> m = new java.util.HashMap<>();
        try (java.util.stream.Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                try {
                    String name = Files.readString(t.resolve("comm")).trim();
                    long ns = Long.parseLong(Files.readString(t.resolve("schedstat")).trim().split("\\s+")[0]);
                    m.put(t.getFileName() + " " + name, ns);
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile, or no schedstat: left out
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return m;
    }

    /** @return the number after {@code key} in {@code /proc/thread-self/<file>}, or -1 */
    private static long procField(String file, String key) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/thread-self", file))) {
                if (line.startsWith(key)) {
                    String v = line.substring(key.length()).replace(':', ' ').trim();
                    return Long.parseLong(v.split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}

package io.jrdma.bench;

import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * What an open device context with nothing to do costs: its engine thread's CPU time (user and system, {@link
 * ThreadMXBean#getThreadCpuTime}) over {@code secs} seconds after {@code warm} seconds, as a share of one core. The
 * context is opened with the defaults (DEDICATED, BACKOFF): the engine thread parks between idle duty cycles
 * ({@code Idler}); how often it wakes is most of what it costs. Its JIT compiles the idle loop late (the loop runs
 * tens of times a second), so the first seconds cost more than the later ones: {@code warm} leaves them out.
 *
 * <pre>
 * IdleCost [dev=shm0] [warm=20] [secs=10]
 * </pre>
 * Prints {@code RESULT idle_cost dev=D warm_s=W secs=S engine_core_pct=P}.
 */
public final class IdleCost {
    private IdleCost() {
    }

    public static void main(String[] argv) throws InterruptedException {
        Args a = new Args(argv);
        String dev = a.str("dev", "shm0");
        long warm = a.num("warm", 20);
        long secs = a.num("secs", 10);
        if (warm < 0 || secs <= 0) {
            Result.fail("warm must be 0 or more and secs more than 0 (got warm=" + warm + " secs=" + secs + ")");
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (!mx.isCurrentThreadCpuTimeSupported()) {
            Result.fail("this JVM measures no thread CPU time");
        }
        java.util.Set<Thread> before = Thread.getAllStackTraces().keySet();
        try (DeviceContext ctx = Rdma.device(dev).open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED))) {
            Thread engine = null;
            for (Thread t : Thread.getAllStackTraces().keySet()) { // the engine thread this open started
                if (!before.contains(t) && t.getName().equals("jrdma-" + dev + "-engine")) {
                    engine = t;
                }
            }
            if (engine == null) {
                Result.fail("opening " + dev + " started no engine thread named jrdma-" + dev + "-engine");
                return;
            }
            Thread.sleep(warm * 1000);
            long c0 = mx.getThreadCpuTime(engine.threadId());
            long t0 = System.nanoTime();
            Thread.sleep(secs * 1000);
            long c1 = mx.getThreadCpuTime(engine.threadId());
            long t1 = System.nanoTime();
            System.out.println(String.format(java.util.Locale.ROOT, "RESULT idle_cost dev=%s warm_s=%d secs=%d engine_core_pct=%.3f",
                    dev, warm, secs, (c1 - c0) * 100.0 / (t1 - t0)));
        }
    }
}

package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.verbs.Rdma;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/** An idle shm0 context's engine thread, measured: one machine-readable line, a share of one core. */
class IdleCostTest {
    private static final Pattern RESULT = Pattern.compile("RESULT idle_cost dev=shm0 warm_s=0 secs=1 engine_core_pct=([0-9.]+)");

    @Test
    void anIdleContextsEngineThreadIsMeasuredOverTheWindow() throws Exception {
        String printed = BenchProcesses.printedBy(() -> IdleCost.main(new String[] {"warm=0", "secs=1"}));
        Matcher m = RESULT.matcher(printed);
        assertTrue(m.find(), printed);
        double pct = Double.parseDouble(m.group(1));
        assertTrue(pct > 0 && pct < 100, "an engine thread that ran and did not spin: " + printed);
    }

    @Test
    void aWindowOfNoSecondsIsRefused() throws Exception {
        try (BenchProcesses jvms = new BenchProcesses(IdleCost.class, Rdma.class)) {
            String out = jvms.failing("secs=0");
            assertTrue(out.contains("secs more than 0"), out);
        }
    }
}

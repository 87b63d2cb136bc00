package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.verbs.Rdma;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/** An idle shm0 context's engine thread, measured: one machine-readable line, a share of one core. */
class IdleCostTest {
    private static final Pattern RESULT = Pattern.compile("RESULT idle_cost dev=shm0 warm_s=0 secs=1 engine_core_pct=([0-9.]+)");

    @Test
    void anIdleContextsEngineThreadIsMeasuredOverTheWindow() throws Exception {
        PrintStream was = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            IdleCost.main(new String[] {"warm=0", "secs=1"});
        } finally {
            System.setOut(was);
        }
        String printed = out.toString(StandardCharsets.UTF_8);
        Matcher m = RESULT.matcher(printed);
        assertTrue(m.find(), printed);
        double pct = Double.parseDouble(m.group(1));
        assertTrue(pct > 0 && pct < 100, "an engine thread that ran and did not spin: " + printed);
    }

    @Test
    void aWindowOfNoSecondsIsRefused() throws Exception {
        try (BenchProcesses jvms = new BenchProcesses(IdleCost.class, Rdma.class)) {
            Process p = jvms.start("secs=0");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(1, p.exitValue(), out);
            assertTrue(out.contains("secs more than 0"), out);
        }
    }
}

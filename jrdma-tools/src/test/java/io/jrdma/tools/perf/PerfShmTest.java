package io.jrdma.tools.perf;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each benchmark on the shared-memory device: {@code jrdma perf <test> -d shm0 --loopback --verify}. */
class PerfShmTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @ParameterizedTest
    @EnumSource(PerfTest.class)
    void everyTestPassesOnShm0WithVerify(PerfTest test) throws Exception {
        PerfOptions o = PerfCommand.parse(test.cliName(), "-d", "shm0", "--loopback", "--verify", "-n", "200",
                "--no-warmup", "--timeout", "20");
        if (!test.isAtomic()) {
            o = o.withSizes(List.of(64, 65536));
        }
        int rc = PerfCommand.execute(o, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, () -> text + err.toString(StandardCharsets.UTF_8));
        assertTrue(text.contains(test.title), text);
        assertTrue(text.contains(" Verify         : ON"), text);
        for (int size : o.sizes()) {
            assertTrue(text.lines().anyMatch(l -> l.startsWith(" " + size + " ") && l.contains(" 200 ")),
                    "no row for " + size + " B in\n" + text);
        }
    }
}

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

    /** UD's two tests on shm0 (-c UD): address handles to each other's context, 40 bytes of GRH in each receive. */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"send_lat", "send_bw"})
    void udRunsOnShm0(String test) throws Exception {
        // perftest's exchange (-c belongs to it), a server and a client on 127.0.0.1: every datagram arrives, the
        // server's count included (send_bw's client sends faster than the receiver reads: held back, not dropped)
        PerftestLoopbackTest.Pair r = PerftestLoopbackTest.runBoth(List.of(test, "-d", "shm0", "--timeout", "20",
                "-c", "UD", "-n", "2000", "-s", "1024"));
        assertEquals(0, r.serverRc(), r.all());
        assertEquals(0, r.clientRc(), r.all());
        assertTrue(r.clientOut().contains(" Connection type : UD"), r.all());
        assertTrue(r.clientOut().lines().anyMatch(l -> l.startsWith(" 1024 ") && l.contains(" 2000 ")),
                "no row in\n" + r.all());
    }
}

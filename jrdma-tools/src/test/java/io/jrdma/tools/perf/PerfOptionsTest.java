package io.jrdma.tools.perf;

import io.jrdma.tools.ArgParser;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfOptionsTest {
    @Test
    void perftestDefaults() throws Exception {
        PerfOptions bw = PerfCommand.parse("write_bw");
        assertEquals(List.of(65536), bw.sizes());
        assertEquals(5000, bw.iterations());
        assertEquals(128, bw.txDepth());
        assertEquals(18515, bw.port());
        assertEquals(0, bw.mtu());
        assertNull(bw.host());
        assertFalse(bw.verify());
        PerfOptions lat = PerfCommand.parse("write_lat", "server.example");
        assertEquals(List.of(2), lat.sizes());
        assertEquals(1000, lat.iterations());
        assertEquals(1, lat.txDepth());
        assertEquals("server.example", lat.host());
        PerfOptions atomic = PerfCommand.parse("atomic_bw");
        assertEquals(List.of(8), atomic.sizes());
        assertEquals(16, atomic.txDepth());
        assertEquals(0, PerfCommand.parse("read_bw", "--loopback").port(), "loopback picks a free port");
    }

    @Test
    void flagsAreApplied() throws Exception {
        PerfOptions o = PerfCommand.parse("read_bw", "-s", "4096", "-n", "77", "-t", "32", "-m", "1024", "-p", "9999",
                "-d", "roce_lo", "-x", "1", "--verify", "--timeout", "5", "::1");
        assertEquals(List.of(4096), o.sizes());
        assertEquals(77, o.iterations());
        assertEquals(32, o.txDepth());
        assertEquals(1024, o.mtu());
        assertEquals(9999, o.port());
        assertEquals("roce_lo", o.device());
        assertEquals(1, o.gidIndex());
        assertTrue(o.verify());
        assertEquals(5, o.timeoutSec());
        assertEquals("::1", o.host());
        PerfOptions all = PerfCommand.parse("send_bw", "-a", "-D", "3");
        assertEquals(2, all.sizes().getFirst());
        assertEquals(8 << 20, all.sizes().getLast());
        assertEquals(3, all.durationSec());
    }

    @Test
    void badFlagsAreRefusedWithAReason() {
        assertEquals("missing test name (one of " + PerfTest.names() + ")", message());
        assertEquals("unknown test 'write_bandwidth' (one of " + PerfTest.names() + ")", message("write_bandwidth"));
        assertEquals("option --qp belongs to perftest's exchange: drop --jrdma-cm to use it",
                message("write_bw", "--jrdma-cm", "-q", "2"));
        assertEquals("option -s/--size: 'big' is not a number", message("write_bw", "-s", "big"));
        assertEquals("option -s/--size: 0 is outside 1..8388608", message("write_bw", "-s", "0"));
        assertEquals("option -s/--size: 9000000 is outside 1..8388608", message("write_bw", "-s", "9000000"));
        assertEquals("option -n/--iters: 2 is outside 5..1000000000", message("write_bw", "-n", "2"));
        assertEquals("option -m/--mtu: must be 256, 512, 1024, 2048 or 4096, not 1500", message("write_bw", "-m", "1500"));
        assertEquals("option -m/--mtu: 128 is outside 256..4096", message("write_bw", "-m", "128"));
        assertEquals("option -t/--tx-depth: 17 is outside 1..16", message("atomic_bw", "-t", "17"));
        assertEquals("latency tests run one request at a time: -t must be 1", message("read_lat", "-t", "2"));
        assertEquals("atomic tests always use 8-byte operations: -s must be 8", message("atomic_lat", "-s", "16"));
        assertEquals("atomic tests always use 8-byte operations: -a does not apply", message("atomic_bw", "-a"));
        assertEquals("-a runs every size: do not combine it with -s", message("write_bw", "-a", "-s", "8"));
        assertEquals("-D (duration) and -n (iterations) are exclusive", message("write_bw", "-D", "2", "-n", "9"));
        assertEquals("--loopback runs both sides here: do not give a host ('h')", message("write_bw", "--loopback", "h"));
        assertEquals("unexpected argument 'h2' (give at most one host)", message("write_bw", "h1", "h2"));
        assertEquals("option -p/--port: a client needs the server's port, not 0", message("write_bw", "-p", "0", "h"));
        assertEquals("option -p/--port: 70000 is outside 0..65535", message("write_bw", "-p", "70000"));
        assertEquals("option -D/--duration needs a value (SEC)", message("write_bw", "-D"));
    }

    @Test
    void commandLineErrorsExitWithTwoAndPrintUsage() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = PerfCommand.run(List.of("write_bw", "--bogus"), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, rc);
        String e = err.toString(StandardCharsets.UTF_8);
        assertTrue(e.startsWith("jrdma perf: unknown option --bogus\nusage: jrdma perf <test>"), e);
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        rc = PerfCommand.run(List.of("write_bw", "--help"), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, rc);
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("-D, --duration SEC"));
    }

    private static String message(String... args) {
        return assertThrows(ArgParser.UsageException.class, () -> PerfCommand.parse(args)).getMessage();
    }
}

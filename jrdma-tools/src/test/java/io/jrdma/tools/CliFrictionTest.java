package io.jrdma.tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A server on a taken port fails before it announces anything; a host name that does not resolve is one line everywhere. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CliFrictionTest {
    private record Result(int rc, String out, String err) {
    }

    private static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aServerOnATakenPortFailsAtOnceAndSaysWhatToDo() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress(0)); // all addresses, as the servers listen
            String port = Integer.toString(taken.getLocalPort());
            for (List<String> cmd : List.of(
                    List.of("perf", "write_bw", "-d", "roce_lo", "-p", port),
                    List.of("perf", "write_bw", "-d", "iwarp_lo", "-R", "-p", port),
                    List.of("perf", "write_bw", "-d", "roce_lo", "--jrdma-cm", "-p", port),
                    List.of("pingpong", "-d", "roce_lo", "-p", port),
                    List.of("pingpong", "-d", "iwarp_lo", "-p", port),
                    List.of("rping", "-s", "-a", "127.0.0.1", "-p", port))) {
                Result r = run(cmd.toArray(String[]::new));
                assertEquals(1, r.rc(), cmd + ": " + r.out() + r.err());
                assertFalse(r.out().contains("Waiting for client"), cmd + ": " + r.out());
                assertTrue(r.err().contains(port), cmd + ": " + r.err());
                assertTrue(r.err().contains("is another server running there? Stop it, or give both sides another port"
                        + " with -p"), cmd + ": " + r.err());
            }
        }
    }

    @Test
    void aHostThatDoesNotResolveIsOneLineInEveryCommand() {
        String host = "no-such-host.invalid";
        for (List<String> cmd : List.of(
                List.of("perf", "write_bw", host),
                List.of("perf", "write_bw", "--jrdma-cm", host),
                List.of("pingpong", host),
                List.of("rping", "-c", "-a", host))) {
            Result r = run(cmd.toArray(String[]::new));
            assertEquals(1, r.rc(), cmd + ": " + r.err());
            String tool = "jrdma " + cmd.getFirst() + ": ";
            assertTrue(r.err().equals(tool + "cannot resolve host '" + host + "'\n")
                    || r.err().equals(tool + "FAILED: cannot resolve host '" + host + "'\n"), cmd + ": " + r.err());
        }
    }
}

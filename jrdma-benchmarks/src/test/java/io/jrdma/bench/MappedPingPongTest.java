package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The mapped-file ping-pong as bench/compare.sh runs it: two JVMs, one file. */
class MappedPingPongTest {
    private static final Pattern RESULT = Pattern.compile(
            "^RESULT mapped_pingpong size=(\\d+) iters=(\\d+) median_us=([0-9.]+) min_us=([0-9.]+) p99_us=([0-9.]+)");

    @TempDir
    Path dir;

    private final List<Process> started = new ArrayList<>();

    private Process start(String... args) throws IOException, URISyntaxException {
        Path classes = Path.of(MappedPingPong.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classes.toString(), MappedPingPong.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        started.add(p);
        return p;
    }

    /** Reads lines until one starts with {@code prefix}; fails at the end of the output (every process here ends by its own timeout). */
    private static String awaitLine(BufferedReader r, String prefix, StringBuilder seen) throws IOException {
        String line;
        while ((line = r.readLine()) != null) {
            seen.append(line).append('\n');
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("no line starting with '" + prefix + "'; output: " + seen);
    }

    private void stopAll() {
        for (Process p : started) {
            p.destroyForcibly();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {8, 4096})
    void twoProcessesPingPongThroughOneFileWhichTheServerRemoves(int size) throws Exception {
        Path file = dir.resolve("pp-" + size);
        try {
            Process server = start("role=server", "size=" + size, "iters=20000", "warmup=5000", "timeout=30",
                    "file=" + file);
            BufferedReader so = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            awaitLine(so, "LISTENING mapped_pingpong", new StringBuilder());
            assertTrue(Files.exists(file), "the server creates the file before it says LISTENING");
            Process client = start("role=client", "size=" + size, "iters=20000", "warmup=5000", "timeout=30",
                    "file=" + file);
            BufferedReader co = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder seen = new StringBuilder();
            String result = awaitLine(co, "RESULT", seen);
            assertTrue(client.waitFor(30, TimeUnit.SECONDS), "the client ends after its result");
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server ends after the last pong");
            assertEquals(0, client.exitValue(), seen.toString());
            assertEquals(0, server.exitValue());
            Matcher m = RESULT.matcher(result);
            assertTrue(m.find(), result);
            assertEquals(size, Integer.parseInt(m.group(1)));
            assertEquals(20000, Integer.parseInt(m.group(2)));
            double min = Double.parseDouble(m.group(4));
            double median = Double.parseDouble(m.group(3));
            assertTrue(min > 0 && min <= median && median <= Double.parseDouble(m.group(5)), result);
            assertFalse(Files.exists(file), "the server deletes the file when it ends");
        } finally {
            stopAll();
        }
    }

    @Test
    void aClientWithoutAServerSaysToStartTheServer() throws Exception {
        try {
            Process client = start("role=client", "file=" + dir.resolve("nothing"), "timeout=5");
            String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(client.waitFor(30, TimeUnit.SECONDS));
            assertEquals(1, client.exitValue(), out);
            assertTrue(out.contains("does not exist: start the server first"), out);
        } finally {
            stopAll();
        }
    }

    @Test
    void aServerNobodyJoinsGivesUpAfterItsTimeoutAndLeavesNoFile() throws Exception {
        Path file = dir.resolve("lonely");
        try {
            Process server = start("role=server", "file=" + file, "timeout=1");
            String out = new String(server.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(server.waitFor(30, TimeUnit.SECONDS));
            assertEquals(1, server.exitValue(), out);
            assertTrue(out.contains("no client mapped"), out);
            assertFalse(Files.exists(file), "a failing server removes its file too");
        } finally {
            stopAll();
        }
    }

    @Test
    void aSizeThatIsNotWholeWordsIsRefused() throws Exception {
        try {
            Process p = start("role=server", "file=" + dir.resolve("odd"), "size=12");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertEquals(1, p.exitValue(), out);
            assertTrue(out.contains("size must be a multiple of 8 bytes"), out);
        } finally {
            stopAll();
        }
    }
}

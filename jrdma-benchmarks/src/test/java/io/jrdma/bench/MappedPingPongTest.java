package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The mapped-file ping-pong as bench/compare.sh runs it: two JVMs, one file. */
class MappedPingPongTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(ints = {8, 4096})
    void twoProcessesPingPongThroughOneFileWhichTheServerRemoves(int size) throws Exception {
        Path file = dir.resolve("pp-" + size);
        try (BenchProcesses jvms = new BenchProcesses(MappedPingPong.class)) {
            Process server = jvms.start("role=server", "size=" + size, "iters=20000", "warmup=5000", "timeout=30",
                    "file=" + file);
            BufferedReader so = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            BenchProcesses.awaitLine(so, "LISTENING mapped_pingpong", new StringBuilder());
            assertTrue(Files.exists(file), "the server creates the file before it says LISTENING");
            Process client = jvms.start("role=client", "size=" + size, "iters=20000", "warmup=5000", "timeout=30",
                    "file=" + file, "blocks=4");
            BufferedReader co = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder seen = new StringBuilder();
            String blocks = BenchProcesses.awaitLine(co, "BLOCKS", seen);
            assertTrue(blocks.matches("BLOCKS mapped_pingpong us=(0\\.\\d*[1-9]\\d*|[1-9][0-9.]*)(,(0\\.\\d*[1-9]\\d*|[1-9][0-9.]*)){3}"), blocks);
            String result = BenchProcesses.awaitLine(co, "RESULT", seen);
            assertTrue(client.waitFor(30, TimeUnit.SECONDS), "the client ends after its result");
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server ends after the last pong");
            assertEquals(0, client.exitValue(), seen.toString());
            assertEquals(0, server.exitValue());
            BenchProcesses.assertLatency(result, "mapped_pingpong", size, 20000);
            assertFalse(Files.exists(file), "the server deletes the file when it ends");
        }
    }

    @Test
    void aClientWithoutAServerSaysToStartTheServer() throws Exception {
        try (BenchProcesses jvms = new BenchProcesses(MappedPingPong.class)) {
            String out = jvms.failing("role=client", "file=" + dir.resolve("nothing"), "timeout=5");
            assertTrue(out.contains("does not exist: start the server first"), out);
        }
    }

    @Test
    void aServerNobodyJoinsGivesUpAfterItsTimeoutAndLeavesNoFile() throws Exception {
        Path file = dir.resolve("lonely");
        try (BenchProcesses jvms = new BenchProcesses(MappedPingPong.class)) {
            String out = jvms.failing("role=server", "file=" + file, "timeout=1");
            assertTrue(out.contains("no client mapped"), out);
            assertFalse(Files.exists(file), "a failing server removes its file too");
        }
    }

    @Test
    void aSizeThatIsNotWholeWordsIsRefused() throws Exception {
        try (BenchProcesses jvms = new BenchProcesses(MappedPingPong.class)) {
            String out = jvms.failing("role=server", "file=" + dir.resolve("odd"), "size=12");
            assertTrue(out.contains("size must be a multiple of 8 bytes"), out);
        }
    }
}

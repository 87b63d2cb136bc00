package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.verbs.WorkCompletion;

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
import org.junit.jupiter.params.provider.CsvSource;

/** The SEND ping-pong's shapes as bench/compare.sh runs them: two JVMs, one file, every message's payload checked. */
class SendShapeTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"bare,false,1,early", "verbs,false,1,early", "staged,false,1,early", "staged,true,1,early",
            "staged,false,1,late", "verbs,false,100,early", "staged,false,100,late"})
    void eachShapePingPongsCheckedMessagesBetweenTwoProcesses(String shape, boolean pause, int cqMod, String resultAt)
            throws Exception {
        Path file = dir.resolve("ss-" + shape + pause + cqMod + resultAt);
        try (BenchProcesses jvms = new BenchProcesses(SendShape.class, WorkCompletion.class)) {
            Process server = jvms.start("role=server", "shape=" + shape, "iters=20000", "warmup=5000", "timeout=30", "file=" + file,
                    "pause=" + pause, "cqmod=" + cqMod, "result=" + resultAt);
            BufferedReader so = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            BenchProcesses.awaitLine(so, "LISTENING send_shape", new StringBuilder());
            Process client = jvms.start("role=client", "shape=" + shape, "iters=20000", "warmup=5000", "timeout=30", "file=" + file,
                    "pause=" + pause, "cqmod=" + cqMod, "result=" + resultAt);
            BufferedReader co = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder seen = new StringBuilder();
            String result = BenchProcesses.awaitLine(co, "RESULT", seen);
            String stats = BenchProcesses.awaitLine(co, "STATS send_shape role=client post_retires=", seen);
            // each signaled SEND's completion waited for: one in cqmod of the 25,001 (none for the bare ring)
            long signaled = shape.equals("bare") ? 0 : 25_001 / cqMod;
            assertTrue(stats.matches("STATS send_shape role=client post_retires=\\d+ send_completions=" + signaled
                    + " send_retired=" + signaled), stats);
            assertTrue(client.waitFor(30, TimeUnit.SECONDS), "the client ends after its result");
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server ends after the last message");
            assertEquals(0, client.exitValue(), seen.toString());
            assertEquals(0, server.exitValue(), new String(server.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            BenchProcesses.assertLatency(result, "send_shape_" + shape, 8, 20000);
            assertFalse(Files.exists(file), "the server deletes the file when it ends");
        }
    }

    @Test
    void blocksAndADelayOnTheTurnAreTakenAndPrinted() throws Exception {
        Path file = dir.resolve("ss-delay");
        try (BenchProcesses jvms = new BenchProcesses(SendShape.class, WorkCompletion.class)) {
            Process server = jvms.start("role=server", "shape=staged", "iters=20000", "warmup=5000", "timeout=30", "file=" + file,
                    "delay=50");
            BufferedReader so = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            BenchProcesses.awaitLine(so, "LISTENING send_shape", new StringBuilder());
            Process client = jvms.start("role=client", "shape=staged", "iters=20000", "warmup=5000", "timeout=30", "file=" + file,
                    "delay=50", "blocks=5");
            BufferedReader co = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder seen = new StringBuilder();
            String blocks = BenchProcesses.awaitLine(co, "BLOCKS", seen);
            assertTrue(blocks.matches("BLOCKS send_shape_staged us=[0-9.]+(,[0-9.]+){4}"), blocks);
            BenchProcesses.awaitLine(co, "RESULT", seen);
            String stats = BenchProcesses.awaitLine(co, "STATS", seen);
            assertTrue(stats.matches(".* delay_sink=-?[1-9]\\d*"), "the delay's work ran: " + stats);
            assertTrue(client.waitFor(30, TimeUnit.SECONDS), "the client ends after its result");
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server ends after the last message");
            assertEquals(0, client.exitValue(), seen.toString());
            String so2 = new String(server.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, server.exitValue(), so2);
            assertTrue(so2.contains("delay_sink="), so2);
        }
    }

    @Test
    void aNegativeDelayMoreBlocksThanSamplesOrACqmodUnderOneAreRefused() throws Exception {
        try (BenchProcesses jvms = new BenchProcesses(SendShape.class, WorkCompletion.class)) {
            for (String bad : new String[] {"delay=-1", "blocks=300000", "cqmod=0"}) {
                String out = jvms.failing("role=server", "shape=bare", bad, "file=" + dir.resolve("y"));
                assertTrue(out.contains("delay must be 0 or more, blocks 0 to iters, cqmod 1 or more"), out);
            }
        }
    }

    @Test
    void anUnknownShapeIsRefusedWithTheShapesThereAre() throws Exception {
        try (BenchProcesses jvms = new BenchProcesses(SendShape.class, WorkCompletion.class)) {
            String out = jvms.failing("role=server", "shape=ring", "file=" + dir.resolve("x"));
            assertTrue(out.contains("shape must be bare, verbs or staged"), out);
            out = jvms.failing("role=server", "shape=staged", "result=soon", "file=" + dir.resolve("x"));
            assertTrue(out.contains("result must be late or early (got soon)"), out);
        }
    }
}

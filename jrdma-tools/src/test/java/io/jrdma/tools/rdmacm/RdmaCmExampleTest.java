package io.jrdma.tools.rdmacm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** jrdma rdma_server against jrdma rdma_client, over RoCE (the InfiniBand CM) and iWARP (MPA). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RdmaCmExampleTest {
    @Test
    void oneMessageEachWayThenADisconnect() throws Exception {
        for (String dev : List.of("roce_lo", "iwarp_lo")) {
            ByteArrayOutputStream so = new ByteArrayOutputStream();
            ByteArrayOutputStream se = new ByteArrayOutputStream();
            CompletableFuture<Integer> port = new CompletableFuture<>();
            CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> RdmaCmExampleCommand.run(true,
                    List.of("-s", "127.0.0.1", "-p", "0", "-D", dev, "--timeout", "20"),
                    new PrintStream(so, true, StandardCharsets.UTF_8), new PrintStream(se, true, StandardCharsets.UTF_8),
                    port::complete));
            server.thenRun(() -> port.completeExceptionally(new AssertionError(se.toString(StandardCharsets.UTF_8))));
            int p = port.get(20, TimeUnit.SECONDS);
            ByteArrayOutputStream co = new ByteArrayOutputStream();
            ByteArrayOutputStream ce = new ByteArrayOutputStream();
            int crc = RdmaCmExampleCommand.run(false, List.of("-s", "127.0.0.1", "-p", String.valueOf(p), "-D", dev,
                    "--timeout", "20"), new PrintStream(co, true, StandardCharsets.UTF_8),
                    new PrintStream(ce, true, StandardCharsets.UTF_8));
            assertEquals(0, crc, dev + ": " + co + ce);
            assertEquals(0, server.get(30, TimeUnit.SECONDS), dev + ": " + so + se);
            assertEquals("rdma_client: start\nrdma_client: end 0\n", co.toString(StandardCharsets.UTF_8));
            assertEquals("rdma_server: start\nrdma_server: end 0\n", so.toString(StandardCharsets.UTF_8));
            assertEquals("", se.toString(StandardCharsets.UTF_8) + ce.toString(StandardCharsets.UTF_8));
        }
    }

    @Test
    void usageErrorsSayWhy() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertEquals(2, RdmaCmExampleCommand.run(false, List.of("-D", "nosuch"), o, e));
        assertEquals(2, RdmaCmExampleCommand.run(false, List.of("-p", "0"), o, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("rdma_client"), err.toString());
    }
}

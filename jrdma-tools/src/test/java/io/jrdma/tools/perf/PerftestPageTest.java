package io.jrdma.tools.perf;

import io.jrdma.tools.oob.RawPeer;
import io.jrdma.tools.pingpong.HostPage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The page size in perftest's exchange ({@code check_sys_data}'s {@code cycle_buffer}) is the host's, as perftest's
 * {@code sysconf(_SC_PAGESIZE)}: a raw peer in perftest's place reads what a jrdma perf client sends after the
 * versions. It sent 4096 whatever the host's page (found while fixing {@code pingpong -c}, which had the same
 * constant).
 */
class PerftestPageTest {

    /** @return the 4 bytes the client sends as its page size, with {@link Perftest#page} set to {@code page} */
    private static int pageSent(int page) throws Exception {
        int was = Perftest.page;
        Perftest.page = page;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            PerftestOptions o = PerfCommand.parsePerftest("write_bw", "-p", String.valueOf(ss.getLocalPort()),
                    "--timeout", "5", "127.0.0.1");
            PrintStream quiet = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
            CompletableFuture<Integer> client = CompletableFuture.supplyAsync(
                    () -> PerftestCommand.execute(o, quiet, quiet, p -> { }));
            int sent;
            try (RawPeer p = RawPeer.accept(ss)) {
                p.read(16); // its version
                p.write(Arrays.copyOf("6.06".getBytes(StandardCharsets.US_ASCII), 16));
                sent = PerftestWire.int32(p.read(4));
            }
            assertEquals(1, client.get(30, TimeUnit.SECONDS), "the client fails once the peer leaves");
            return sent;
        } finally {
            Perftest.page = was;
        }
    }

    @Test
    @Timeout(60)
    void theExchangeCarriesThePageSizeOfThisSide() throws Exception {
        assertEquals(16384, pageSent(16384), "a side of 16 KiB pages sends 16384 (it sent 4096)");
        assertEquals(HostPage.size(), Perftest.page, "by default the host's page");
        assertEquals(HostPage.size(), pageSent(Perftest.page));
    }
}

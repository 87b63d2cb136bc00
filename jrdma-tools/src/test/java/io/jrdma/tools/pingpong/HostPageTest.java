package io.jrdma.tools.pingpong;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * pingpong's page (ibv_rc_pingpong's {@code page_size = sysconf(_SC_PAGESIZE)}): the host's, where it was 4 KiB
 * whatever the host's (found in review: a host of 16 or 64 KiB pages marks and checks one byte per page of its size).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HostPageTest {
    /** The page size glibc's sysconf gives another process: {@code getconf PAGESIZE}. */
    private static int getconf() throws Exception {
        Process p;
        try {
            p = new ProcessBuilder("getconf", "PAGESIZE").redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            Assumptions.abort("no getconf here: " + e.getMessage());
            throw e;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return Integer.parseInt(out);
    }

    @Test
    void thePageIsTheHosts() throws Exception {
        int host = getconf();
        assertEquals(host, HostPage.sysconf(), "sysconf(_SC_PAGESIZE) through FFM");
        assertEquals(host, HostPage.auxv(), "AT_PAGESZ of /proc/self/auxv (the way without native access)");
        assertEquals(host, HostPage.size());
        Pingpong.Options o = PingpongCommand.parse("-d", "roce_lo", "-c", "127.0.0.1");
        PrintStream none = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertEquals(host, new Pingpong(o, none, none, port -> { }).page, "the page pingpong marks and checks");
    }

    /** Runs a -c pair on roce_lo of {@code size} bytes, the server and the client each with its own page size. */
    private static PingpongLoopbackTest.Pair pair(int serverPage, int clientPage, int size) throws Exception {
        ByteArrayOutputStream so = new ByteArrayOutputStream();
        ByteArrayOutputStream se = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        String s = String.valueOf(size);
        Pingpong.Options sopt = PingpongCommand.parse("-d", "roce_lo", "-s", s, "-n", "5", "-c", "-p", "0",
                "--timeout", "20");
        CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> new Pingpong(sopt,
                new PrintStream(so, true, StandardCharsets.UTF_8), new PrintStream(se, true, StandardCharsets.UTF_8),
                port::complete, serverPage).run());
        int p = port.get(20, TimeUnit.SECONDS);
        ByteArrayOutputStream co = new ByteArrayOutputStream();
        ByteArrayOutputStream ce = new ByteArrayOutputStream();
        int crc = new Pingpong(PingpongCommand.parse("-d", "roce_lo", "-s", s, "-n", "5", "-c", "-p", String.valueOf(p),
                "--timeout", "20", "127.0.0.1"), new PrintStream(co, true, StandardCharsets.UTF_8),
                new PrintStream(ce, true, StandardCharsets.UTF_8), q -> { }, clientPage).run();
        return new PingpongLoopbackTest.Pair(server.get(30, TimeUnit.SECONDS), so.toString(StandardCharsets.UTF_8),
                se.toString(StandardCharsets.UTF_8), crc, co.toString(StandardCharsets.UTF_8),
                ce.toString(StandardCharsets.UTF_8));
    }

    /**
     * Both ends mark and check one byte per page of the page size they were given: two hosts of 16 KiB pages agree;
     * a client of 4 KiB pages marks bytes a server of 16 KiB pages expects unmarked, in each of its pages.
     */
    @Test
    void checkMarksAndChecksOneBytePerPageOfThePageSize() throws Exception {
        PingpongLoopbackTest.Pair same = pair(16384, 16384, 40000);
        assertEquals(0, same.clientRc(), same.clientOut() + same.clientErr());
        assertEquals(0, same.serverRc(), same.serverOut() + same.serverErr());
        PingpongLoopbackTest.Pair mixed = pair(16384, 4096, 40000);
        assertEquals(0, mixed.clientRc(), mixed.clientOut() + mixed.clientErr());
        assertEquals(1, mixed.serverRc(), mixed.serverOut() + mixed.serverErr());
        assertTrue(mixed.serverOut().contains("invalid data in page 0\ninvalid data in page 1\ninvalid data in page 2\n"),
                mixed.serverOut());
        assertTrue(mixed.serverErr().contains("3 pages of the received data differ"), mixed.serverErr());
    }
}

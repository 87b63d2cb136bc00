package io.jrdma.tools.pingpong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma pingpong over the soft-iWARP device: both ends connect through the MPA connection manager. */
class PingpongIwarpTest {
    @ParameterizedTest
    @ValueSource(ints = {1, 4096, 65536})
    @Timeout(60)
    void pingPongsOverIwarp(int size) throws Exception {
        List<String> args = List.of("-d", "iwarp_lo", "-s", String.valueOf(size), "-n", "40", "-c");
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(args, args);
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        PingpongLoopbackTest.checkOutput(r, size, 40);
        assertTrue(r.clientOut().startsWith("  local address:  LID 0x0000, "), r.clientOut());
        assertEquals("", r.serverErr() + r.clientErr());
    }

    @Test
    @Timeout(60)
    void eventsAndAGidIndexWorkOverIwarp() throws Exception {
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(List.of("-d", "iwarp_lo", "-g", "0", "-e", "-n", "30",
                "-r", "4"), List.of("-d", "iwarp_lo", "-g", "0", "-n", "30", "-r", "4"));
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        PingpongLoopbackTest.checkOutput(r, 4096, 30);
    }

    @Test
    @Timeout(60)
    void checkFindsDataTheClientDidNotMarkOverIwarp() throws Exception {
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(List.of("-d", "iwarp_lo", "-s", "10000", "-n", "10",
                "-c"), List.of("-d", "iwarp_lo", "-s", "10000", "-n", "10"));
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        assertEquals(1, r.serverRc(), r.serverOut() + r.serverErr());
        int pages = (10000 + HostPage.size() - 1) / HostPage.size(); // 3 of 4 KiB
        assertTrue(r.serverErr().contains(pages + " page" + (pages == 1 ? "" : "s") + " of the received data differ"),
                r.serverErr());
    }
}

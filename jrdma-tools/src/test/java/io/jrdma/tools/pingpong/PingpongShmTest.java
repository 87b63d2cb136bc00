package io.jrdma.tools.pingpong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma pingpong over the shared-memory device: the GIDs exchanged name each end's process and control segment. */
class PingpongShmTest {
    @ParameterizedTest
    @ValueSource(ints = {1, 4096, 65536})
    @Timeout(60)
    void pingPongsOverShm(int size) throws Exception {
        List<String> args = List.of("-d", "shm0", "-s", String.valueOf(size), "-n", "40", "-c");
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(args, args);
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        check(r, size, 40);
        assertEquals("", r.serverErr() + r.clientErr());
    }

    /** As PingpongLoopbackTest.checkOutput, with the GIDs of shm contexts: each end's is the other's remote one. */
    private static void check(PingpongLoopbackTest.Pair r, int size, int iters) {
        String[] s = r.serverOut().split("\n");
        String[] c = r.clientOut().split("\n");
        assertEquals(4, s.length, r.serverOut());
        assertEquals(4, c.length, r.clientOut());
        assertEquals(s[0].replace("local address:  ", ""), c[1].replace("remote address: ", ""));
        assertEquals(c[0].replace("local address:  ", ""), s[1].replace("remote address: ", ""));
        assertTrue(c[0].contains("GID fd6a:7264:6d61:7368:"), c[0]);
        long bytes = (long) size * iters * 2;
        for (String[] out : List.of(s, c)) {
            assertTrue(out[2].matches(bytes + " bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec"), out[2]);
            assertTrue(out[3].matches(iters + " iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter"), out[3]);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1024})
    @Timeout(60)
    void udPingPongsOverShm(int size) throws Exception {
        List<String> args = List.of("-d", "shm0", "--ud", "-s", String.valueOf(size), "-n", "40");
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(args, args);
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        check(r, size, 40);
    }

    @Test
    @Timeout(60)
    void eventsWorkOverShm() throws Exception {
        PingpongLoopbackTest.Pair r = PingpongLoopbackTest.run(List.of("-d", "shm0", "-e", "-n", "30", "-r", "4"),
                List.of("-d", "shm0", "-e", "-n", "30", "-r", "4"));
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        check(r, 4096, 30);
    }
}

package io.jrdma.tools.rping;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jrdma rping against itself over iwarp_lo: the lines rping prints, its buffer text, its errors. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RpingTest {
    record Run(int serverRc, String serverOut, String serverErr, int clientRc, String clientOut, String clientErr) {
    }

    static Run run(List<String> server, List<String> client) throws Exception {
        ByteArrayOutputStream so = new ByteArrayOutputStream();
        ByteArrayOutputStream se = new ByteArrayOutputStream();
        CompletableFuture<Integer> port = new CompletableFuture<>();
        List<String> sargs = new ArrayList<>(server);
        sargs.addAll(List.of("-s", "-a", "127.0.0.1", "-p", "0", "--timeout", "20"));
        CompletableFuture<Integer> serverRc = CompletableFuture.supplyAsync(() -> RpingCommand.run(sargs,
                new PrintStream(so, true, StandardCharsets.UTF_8), new PrintStream(se, true, StandardCharsets.UTF_8),
                port::complete));
        serverRc.thenRun(() -> port.completeExceptionally(new AssertionError("the server ended before listening: "
                + se.toString(StandardCharsets.UTF_8))));
        int p = port.get(20, TimeUnit.SECONDS);
        List<String> cargs = new ArrayList<>(client);
        cargs.addAll(List.of("-c", "-a", "127.0.0.1", "-p", String.valueOf(p), "--timeout", "20"));
        ByteArrayOutputStream co = new ByteArrayOutputStream();
        ByteArrayOutputStream ce = new ByteArrayOutputStream();
        int crc = RpingCommand.run(cargs, new PrintStream(co, true, StandardCharsets.UTF_8),
                new PrintStream(ce, true, StandardCharsets.UTF_8));
        int src = serverRc.get(30, TimeUnit.SECONDS);
        return new Run(src, so.toString(StandardCharsets.UTF_8), se.toString(StandardCharsets.UTF_8), crc,
                co.toString(StandardCharsets.UTF_8), ce.toString(StandardCharsets.UTF_8));
    }

    /** What rping puts in the buffer of ping {@code ping}, {@code size} bytes, its letters starting at {@code start}. */
    static String text(int ping, int start, int size) {
        StringBuilder b = new StringBuilder(String.format("rdma-ping-%d: ", ping));
        for (int c = start; b.length() < size - 1; c = c + 1 > 122 ? 65 : c + 1) {
            b.append((char) c);
        }
        return b.substring(0, size - 1);
    }

    @Test
    void pingsAreReadAndWrittenBackAndPrinted() throws Exception {
        String dev = "iwarp_lo";
        Run r = run(List.of("-v", "-D", dev), List.of("-v", "-V", "-C", "3", "-D", dev));
        assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
        assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
        StringBuilder server = new StringBuilder();
        StringBuilder client = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            server.append("server ping data: ").append(text(i, 65 + i, 64)).append('\n');
            client.append("ping data: ").append(text(i, 65 + i, 64)).append('\n');
        }
        assertEquals(server.toString(), r.serverOut());
        assertEquals(client.toString(), r.clientOut());
        assertEquals("", r.serverErr() + r.clientErr());
    }

    /** rdma_cm over RoCE: the InfiniBand CM on roce_lo, with rping's sizes of the interop suite. */
    @Test
    void overRoceThroughTheInfinibandCm() throws Exception {
        String dev = "roce_lo";
        for (int size : new int[] {64, 4096, 65535}) {
            String s = String.valueOf(size);
            Run r = run(List.of("-v", "-S", s, "-D", dev), List.of("-v", "-V", "-C", "3", "-S", s, "-D", dev));
            assertEquals(0, r.clientRc(), r.clientOut() + r.clientErr());
            assertEquals(0, r.serverRc(), r.serverOut() + r.serverErr());
            String[] lines = r.clientOut().split("\n");
            assertEquals(3, lines.length, r.clientOut());
            assertEquals("ping data: " + text(2, 67, size), lines[2]);
            assertEquals("", r.serverErr() + r.clientErr());
        }
    }

    /** The client's disconnect reaches the server as rdma_cm's DISCONNECTED event (rping -d prints it, as rping does). */
    @Test
    void theServerSeesTheClientsDisconnectAsAnEvent() throws Exception {
        for (String dev : new String[] {"roce_lo", "iwarp_lo"}) {
            Run r = run(List.of("-d", "-D", dev), List.of("-C", "2", "-D", dev));
            assertEquals(0, r.clientRc(), r.clientErr());
            assertEquals(0, r.serverRc(), r.serverErr());
            assertTrue(r.serverErr().contains("server DISCONNECT EVENT..."), dev + ": " + r.serverErr());
        }
    }

    @Test
    void largestBufferAndManyPingsWrapTheLetters() throws Exception {
        Run r = run(List.of("-S", "65535"), List.of("-V", "-C", "60", "-S", "65535", "-v"));
        assertEquals(0, r.clientRc(), r.clientErr());
        assertEquals(0, r.serverRc(), r.serverErr());
        String[] lines = r.clientOut().split("\n");
        assertEquals(60, lines.length);
        assertEquals("ping data: " + text(58, 65, 65535), lines[58], "the first letter wraps from 'z' to 'A'");
        assertEquals("", r.serverOut(), "no -v on the server");
    }

    @Test
    void aClientBufferLargerThanTheServersFailsWithAMessage() throws Exception {
        Run r = run(List.of("-S", "64"), List.of("-C", "1", "-S", "128"));
        assertEquals(1, r.serverRc(), r.serverErr());
        assertTrue(r.serverErr().contains("use the same -S on both sides"), r.serverErr());
        assertEquals(1, r.clientRc(), r.clientErr());
    }

    @Test
    void theBufferTextIsRpings() {
        // ping 0 of a 64-byte buffer, as the READ Response in testdata/pcaps/iwarp-rping.pcap carries it
        byte[] captured = ("rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\0")
                .getBytes(StandardCharsets.US_ASCII);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(64);
            Rping.fill(buf, 0, 65);
            assertArrayEquals(captured, buf.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void usageErrors() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertEquals(2, RpingCommand.run(List.of("-c"), o, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("a client needs the server's address (-a)"));
        assertEquals(2, RpingCommand.run(List.of("-s", "-c"), o, e));
        assertEquals(2, RpingCommand.run(List.of("-s", "-S", "10"), o, e));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("outside 23..65535"), err.toString());
        assertEquals(2, RpingCommand.run(List.of("-c", "-a", "127.0.0.1", "-D", "nosuch"), o, e));
        if (io.jrdma.verbs.Rdma.devices().stream().anyMatch(d -> d.name().equals("shm0"))) {
            assertEquals(2, RpingCommand.run(List.of("-c", "-a", "127.0.0.1", "-D", "shm0"), o, e));
            assertTrue(err.toString(StandardCharsets.UTF_8).contains("rping runs over iWARP (iwarp_<interface>) and"
                    + " RoCE"), err.toString());
        }
    }
}

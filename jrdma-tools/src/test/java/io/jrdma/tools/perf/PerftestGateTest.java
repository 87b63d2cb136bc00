package io.jrdma.tools.perf;

import io.jrdma.tools.oob.SideChannel;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * {@link PerftestGate}: a connection it handed on is the server's, whatever the gate does next. {@code jrdma perf
 * --server --clients N --parallel P} closes the gate as soon as a worker takes the last client; the gate's thread
 * could then still hold that connection's cancelled selection key (a cancelled key leaves the selector's key set
 * only at its next select), and closing the gate closed the connection under the server (CI, 2026-11-27 00:18:
 * {@code PerfServerTest.withParallelTwoAPerftestClientIsServedWhileAnotherOneRuns}, whose second client read
 * "closed the connection after 0 of the 16 bytes of the perftest version").
 */
class PerftestGateTest {
    private static final long SECOND = 1_000_000_000L;

    @Test
    @Timeout(120)
    void aConnectionTakenJustBeforeTheGateClosesStaysOpen() throws Exception {
        byte[] version = PerftestWire.version(PerftestWire.VERSION);
        PrintStream log = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        for (int i = 0; i < 300; i++) {
            SideChannel sc;
            try (SocketChannel client = SocketChannel.open()) {
                PerftestGate gate = new PerftestGate(0, 5 * SECOND, 5 * SECOND, log);
                try {
                    client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), gate.port()));
                    client.write(ByteBuffer.wrap(version));
                    sc = gate.take();
                    assertNotNull(sc, "round " + i + ": the gate handed nothing on");
                } finally {
                    gate.close(); // as the worker that took the last client does, at once
                }
                try (sc) {
                    // the server side is still open: what it writes after the gate closed reaches the client
                    sc.write(version, "the server's version");
                    ByteBuffer got = ByteBuffer.allocate(version.length);
                    while (got.hasRemaining()) {
                        int n = client.read(got);
                        assertEquals(true, n >= 0, "round " + i + ": the gate closed the connection it had handed on");
                    }
                    assertArrayEquals(version, got.array(), "round " + i);
                }
            }
        }
    }
}

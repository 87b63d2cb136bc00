package io.jrdma.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;

/**
 * The raw-UDP latency baseline: a ping-pong over two non-blocking, connected
 * {@link DatagramChannel}s, each side one thread busy-polling (as {@code jrdma perf write_lat}:
 * client and server both INVOKER, spinning). A message larger than {@code chunk} bytes goes as
 * {@code ceil(size/chunk)} datagrams, as jrdma segments a message into MTU-sized packets.
 *
 * <pre>
 * server: UdpPingPong role=server port=P size=S iters=N warmup=W [chunk=4096] [timeout=30]
 * client: UdpPingPong role=client port=P size=S iters=N warmup=W [host=127.0.0.1]
 * </pre>
 * The client prints {@code RESULT udp_pingpong size=S ... median_us=...}: half the round trip, as perftest.
 */
public final class UdpPingPong {
    /** The socket buffers jrdma's UDP link uses. */
    static final int SOCKET_BUFFER = 4 << 20;

    private UdpPingPong() {
    }

    public static void main(String[] argv) throws IOException {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        int port = a.integer("port", 19001);
        int size = a.integer("size", 8);
        int iters = a.integer("iters", 100_000);
        int warmup = a.integer("warmup", 20_000);
        int chunk = a.integer("chunk", 4096);
        long timeoutNanos = a.num("timeout", 30) * 1_000_000_000L;
        String host = a.str("host", "127.0.0.1");
        int datagrams = (size + chunk - 1) / chunk;
        ByteBuffer buf = ByteBuffer.allocateDirect(Math.max(chunk, 64));
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.setOption(StandardSocketOptions.SO_RCVBUF, SOCKET_BUFFER);
            ch.setOption(StandardSocketOptions.SO_SNDBUF, SOCKET_BUFFER);
            ch.configureBlocking(false);
            if (role.equals("server")) {
                ch.bind(new InetSocketAddress(host, port));
                System.out.println("LISTENING udp_pingpong port=" + port);
                System.out.flush();
                // handshake: the client repeats a 1-byte hello until answered; then both sides are connected
                // (connecting drains the socket's queue, so no message may be in flight at that moment)
                SocketAddress peer;
                long deadline = System.nanoTime() + timeoutNanos;
                while ((peer = ch.receive(buf.clear())) == null) {
                    if (System.nanoTime() - deadline > 0) {
                        Result.fail("udp_pingpong server: no client within the timeout");
                    }
                    Thread.onSpinWait();
                }
                ch.connect(peer);
                ch.write(buf.clear().limit(1));
                long total = (long) warmup + iters;
                for (long i = 0; i < total; i++) {
                    receive(ch, buf, size, timeoutNanos);
                    send(ch, buf, size, chunk, datagrams);
                }
            } else {
                ch.connect(new InetSocketAddress(host, port));
                hello(ch, buf, timeoutNanos);
                long[] rtt = new long[iters];
                for (int i = 0; i < warmup; i++) {
                    send(ch, buf, size, chunk, datagrams);
                    receive(ch, buf, size, timeoutNanos);
                }
                for (int i = 0; i < iters; i++) {
                    long t0 = System.nanoTime();
                    send(ch, buf, size, chunk, datagrams);
                    receive(ch, buf, size, timeoutNanos);
                    rtt[i] = System.nanoTime() - t0;
                }
                Result.latency("udp_pingpong", size, rtt, iters, 2.0);
            }
        }
    }

    private static void send(DatagramChannel ch, ByteBuffer buf, int size, int chunk, int datagrams)
            throws IOException {
        int left = size;
        for (int d = 0; d < datagrams; d++) {
            int len = Math.min(chunk, left);
            left -= len;
            buf.clear().limit(len);
            while (ch.write(buf) == 0) {
                Thread.onSpinWait();
            }
        }
    }

    /** Client: sends 1-byte hellos every 10 ms until the server answers one. */
    static void hello(DatagramChannel ch, ByteBuffer buf, long timeoutNanos) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            try {
                ch.write(buf.clear().limit(1));
            } catch (java.net.PortUnreachableException e) {
                // the server is not bound yet
            }
            long resend = System.nanoTime() + 10_000_000L;
            while (System.nanoTime() - resend < 0) {
                try {
                    if (ch.read(buf.clear()) > 0) {
                        return;
                    }
                } catch (java.net.PortUnreachableException e) {
                    // the server is not bound yet
                }
                Thread.onSpinWait();
            }
            if (System.nanoTime() - deadline > 0) {
                Result.fail("no answer from the server within the timeout");
            }
        }
    }

    /**
     * Busy-polls until {@code size} bytes (all datagrams of one message) have arrived; 1-byte
     * datagrams are late hellos and do not count.
     */
    private static void receive(DatagramChannel ch, ByteBuffer buf, int size, long timeoutNanos)
            throws IOException {
        int got = 0;
        int spins = 0;
        long deadline = 0;
        while (got < size) {
            buf.clear();
            int n = ch.read(buf);
            if (n > 1) {
                got += n;
                spins = 0;
            } else if (++spins == 1 << 16) {
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + timeoutNanos;
                } else if (now - deadline > 0) {
                    Result.fail("udp_pingpong: no datagram within the timeout (lost on loopback?)");
                }
                spins = 0;
            }
        }
    }
}

package io.jrdma.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * The raw-TCP baselines over non-blocking {@link SocketChannel}s (TCP_NODELAY), each side one
 * busy-polling thread.
 *
 * <pre>
 * ping-pong: TcpPingPong role=server|client mode=pingpong port=P size=S iters=N warmup=W
 * streaming: TcpPingPong role=server|client mode=stream   port=P size=S secs=T [warm=0.5]
 * </pre>
 * Ping-pong: the client prints {@code RESULT tcp_pingpong size=S median_us=...} (half the round
 * trip). Streaming: the client writes {@code size}-byte buffers for {@code secs} seconds, the server
 * reads and counts and prints {@code RESULT tcp_stream size=S gbps=...} after the first {@code warm} s.
 */
public final class TcpPingPong {
    private TcpPingPong() {
    }

    public static void main(String[] argv) throws IOException {
        Args a = new Args(argv);
        String role = a.str("role", "client");
        String mode = a.str("mode", "pingpong");
        int port = a.integer("port", 19003);
        int size = a.integer("size", 8);
        String host = a.str("host", "127.0.0.1");
        long timeoutNanos = a.num("timeout", 30) * 1_000_000_000L;
        SocketChannel ch;
        if (role.equals("server")) {
            try (ServerSocketChannel ss = ServerSocketChannel.open()) {
                ss.bind(new InetSocketAddress(host, port));
                ss.configureBlocking(false);
                System.out.println("LISTENING tcp_" + mode + " port=" + port);
                System.out.flush();
                long deadline = System.nanoTime() + timeoutNanos;
                while ((ch = ss.accept()) == null) {
                    if (System.nanoTime() - deadline > 0) {
                        Result.fail("tcp server: no client within the timeout");
                    }
                    Thread.onSpinWait();
                }
            }
        } else {
            ch = SocketChannel.open(new InetSocketAddress(host, port));
        }
        try (SocketChannel c = ch) {
            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
            c.configureBlocking(false);
            ByteBuffer buf = ByteBuffer.allocateDirect(Math.max(size, 1 << 20));
            if (mode.equals("pingpong")) {
                int iters = a.integer("iters", 100_000);
                int warmup = a.integer("warmup", 20_000);
                if (role.equals("server")) {
                    for (long i = 0, n = (long) iters + warmup; i < n; i++) {
                        read(c, buf, size, timeoutNanos);
                        write(c, buf, size);
                    }
                } else {
                    for (int i = 0; i < warmup; i++) {
                        write(c, buf, size);
                        read(c, buf, size, timeoutNanos);
                    }
                    long[] rtt = new long[iters];
                    for (int i = 0; i < iters; i++) {
                        long t0 = System.nanoTime();
                        write(c, buf, size);
                        read(c, buf, size, timeoutNanos);
                        rtt[i] = System.nanoTime() - t0;
                    }
                    Result.latency("tcp_pingpong", size, rtt, iters, 2.0);
                }
            } else if (role.equals("server")) {
                countStream(c, buf, size, (long) (a.dbl("warm", 0.5) * 1e9), timeoutNanos);
            } else {
                long cpu0 = Cpu.nanos();
                long start = System.nanoTime();
                long end = start + (long) (a.dbl("secs", 3) * 1e9);
                long sent = 0;
                while (System.nanoTime() - end < 0) {
                    for (int i = 0; i < 16; i++) {
                        write(c, buf, size);
                        sent += size;
                    }
                }
                Cpu.print("tcp_stream", "send", cpu0, start, System.nanoTime());
                c.shutdownOutput();
                // wait for the server to close, so that all bytes are counted before the process ends
                buf.clear();
                long deadline = System.nanoTime() + timeoutNanos;
                while (c.read(buf.clear()) >= 0 && System.nanoTime() - deadline < 0) {
                    Thread.onSpinWait();
                }
                System.out.println("SENT tcp_stream bytes=" + sent);
            }
        }
    }

    private static void write(SocketChannel c, ByteBuffer buf, int size) throws IOException {
        buf.clear().limit(size);
        while (buf.hasRemaining()) {
            if (c.write(buf) == 0) {
                Thread.onSpinWait();
            }
        }
    }

    private static void read(SocketChannel c, ByteBuffer buf, int size, long timeoutNanos) throws IOException {
        buf.clear().limit(size);
        int spins = 0;
        long deadline = 0;
        while (buf.hasRemaining()) {
            int n = c.read(buf);
            if (n < 0) {
                Result.fail("tcp: the peer closed the connection");
            }
            if (n == 0 && ++spins == 1 << 16) {
                spins = 0;
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + timeoutNanos;
                } else if (now - deadline > 0) {
                    Result.fail("tcp: no data within the timeout");
                }
            }
        }
    }

    private static void countStream(SocketChannel c, ByteBuffer buf, int size, long warmNanos, long timeoutNanos)
            throws IOException {
        long bytes = 0;
        long first = 0;
        long warmAt = 0;
        long warmBytes = -1;
        long warmCpu = -1;
        long last = 0;
        long deadline = System.nanoTime() + timeoutNanos;
        while (true) {
            int n = c.read(buf.clear());
            if (n < 0) {
                break;
            }
            if (n > 0) {
                bytes += n;
                last = System.nanoTime();
                if (first == 0) {
                    first = last;
                } else if (warmBytes < 0 && last - first >= warmNanos) {
                    warmBytes = bytes;
                    warmAt = last;
                    warmCpu = Cpu.nanos();
                }
            } else if (first == 0 && System.nanoTime() - deadline > 0) {
                Result.fail("tcp_stream server: no data within the timeout");
            }
        }
        if (warmBytes < 0 || last - warmAt <= 0) {
            Result.fail("tcp_stream: the run was shorter than its warm-up");
        }
        Result.rate("tcp_stream", size, bytes - warmBytes, (bytes - warmBytes) / size, last - warmAt, "");
        Cpu.print("tcp_stream", "recv", warmCpu, warmAt, last);
    }
}

package io.jrdma.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;

/**
 * The raw-UDP bandwidth baseline: one thread blasts datagrams of {@code size} bytes as fast as a
 * non-blocking {@link DatagramChannel} takes them; the receiver busy-polls and counts the bytes
 * that arrive (datagrams the kernel drops are not counted). Both sockets have jrdma's 4 MiB
 * buffers. Threading as {@code jrdma perf write_bw}: one spinning sender (the INVOKER client),
 * one spinning receiver (the server's engine thread, which spins while packets flow).
 *
 * <pre>
 * receiver: UdpBlast role=recv port=P [warm=0.5] [timeout=30]
 * sender:   UdpBlast role=send port=P size=S [secs=3] [host=127.0.0.1] [connected=true] [gso=N]
 * </pre>
 * The receiver prints {@code RESULT udp_blast size=S gbps=... mpps=...} over the datagrams that
 * arrived after the first {@code warm} seconds; the sender prints what it sent ({@code udp_blast_send}).
 * The sender ends with a few 1-byte datagrams; the receiver also stops after 1 s without data.
 * {@code connected=false}: the sender uses {@code send(buffer, address)} on an unconnected socket, as
 * jrdma's engine does (a route lookup per datagram in the kernel). {@code gso=N} (N &gt; 1, Linux): the best
 * raw use of the socket, N datagrams per system call as one UDP GSO send ({@link GsoSender}). Both
 * sides also print their CPU use over the measured interval ({@link Cpu}).
 */
public final class UdpBlast {
    private UdpBlast() {
    }

    public static void main(String[] argv) throws Throwable {
        Args a = new Args(argv);
        String role = a.str("role", "send");
        int port = a.integer("port", 19002);
        String host = a.str("host", "127.0.0.1");
        long timeoutNanos = a.num("timeout", 30) * 1_000_000_000L;
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.setOption(StandardSocketOptions.SO_RCVBUF, UdpPingPong.SOCKET_BUFFER);
            ch.setOption(StandardSocketOptions.SO_SNDBUF, UdpPingPong.SOCKET_BUFFER);
            ch.configureBlocking(false);
            if (role.equals("recv")) {
                receive(ch, host, port, (long) (a.dbl("warm", 0.5) * 1e9), timeoutNanos);
            } else if (a.integer("gso", 0) > 1) {
                GsoSender.blast(host, port, a.integer("size", 4112), a.integer("gso", 0), (long) (a.dbl("secs", 3) * 1e9));
            } else {
                send(ch, host, port, a.integer("size", 4112), (long) (a.dbl("secs", 3) * 1e9),
                        !a.str("connected", "true").equals("false"));
            }
        }
    }

    private static void receive(DatagramChannel ch, String host, int port, long warmNanos, long timeoutNanos)
            throws IOException {
        ch.bind(new InetSocketAddress(host, port));
        System.out.println("LISTENING udp_blast port=" + port);
        System.out.flush();
        ByteBuffer buf = ByteBuffer.allocateDirect(65536);
        long deadline = System.nanoTime() + timeoutNanos;
        SocketAddress peer;
        while ((peer = ch.receive(buf.clear())) == null) {
            if (System.nanoTime() - deadline > 0) {
                Result.fail("udp_blast receiver: no sender within the timeout");
            }
            Thread.onSpinWait();
        }
        ch.connect(peer);
        int size = buf.position();
        long first = System.nanoTime();
        long warmEnd = first + warmNanos;
        long bytes = size;
        long msgs = 1;
        long warmBytes = -1;
        long warmMsgs = 0;
        long warmAt = 0;
        long warmCpu = -1;
        long last = first;
        long spins = 0;
        while (true) {
            int n = ch.read(buf.clear());
            if (n > 1) {
                bytes += n;
                msgs++;
                if ((msgs & 63) == 0 || warmBytes < 0) {
                    last = System.nanoTime();
                    if (warmBytes < 0 && last - warmEnd >= 0) {
                        warmBytes = bytes;
                        warmMsgs = msgs;
                        warmAt = last;
                        warmCpu = Cpu.nanos();
                    }
                }
                spins = 0;
            } else if (n == 1) {
                last = System.nanoTime();
                break;
            } else if (++spins == 1 << 14) {
                spins = 0;
                long now = System.nanoTime();
                if (now - last > 1_000_000_000L) {
                    break; // the end marker was lost, or the sender died: stop at the last datagram seen
                }
            }
        }
        if (warmBytes < 0 || last - warmAt <= 0) {
            Result.fail("udp_blast receiver: the run was shorter than its warm-up");
        }
        Result.rate("udp_blast", size, bytes - warmBytes, msgs - warmMsgs, last - warmAt,
                "total_msgs=" + msgs);
        Cpu.print("udp_blast", "recv", warmCpu, warmAt, last);
    }

    private static void send(DatagramChannel ch, String host, int port, int size, long nanos, boolean connected)
            throws IOException, InterruptedException {
        if (size < 2) {
            Result.fail("size must be at least 2 (1-byte datagrams end the run)");
        }
        InetSocketAddress to = new InetSocketAddress(host, port);
        if (connected) {
            ch.connect(to);
        } else {
            ch.bind(new InetSocketAddress(host, 0)); // as jrdma: an unconnected socket, send(buffer, address)
        }
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        long cpu0 = Cpu.nanos();
        long start = System.nanoTime();
        long end = start + nanos;
        long sent = 0;
        long full = 0;
        long now = start;
        while (now - end < 0) {
            for (int i = 0; i < 64; i++) {
                buf.clear();
                if ((connected ? ch.write(buf) : ch.send(buf, to)) == size) {
                    sent++;
                } else {
                    full++;
                    Thread.onSpinWait();
                }
            }
            now = System.nanoTime();
        }
        Cpu.print("udp_blast", "send", cpu0, start, now);
        ByteBuffer endMark = ByteBuffer.allocateDirect(1);
        for (int i = 0; i < 20; i++) {
            try {
                if (connected) {
                    ch.write(endMark.clear());
                } else {
                    ch.send(endMark.clear(), to);
                }
            } catch (IOException e) {
                break; // the receiver has stopped (port unreachable): it got an end marker
            }
            Thread.sleep(2);
        }
        Result.rate("udp_blast_send", size, sent * size, sent, now - start, "send_buffer_full=" + full);
    }
}

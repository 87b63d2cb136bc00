package io.jrdma.tools.oob;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.locks.LockSupport;

/**
 * The TCP side channel that {@code ibv_rc_pingpong} and perftest exchange queue pair numbers,
 * PSNs, GIDs and keys over before any RDMA traffic. Every wait has a deadline (no progress for
 * the timeout: no byte arrived and the engine moved no packet), and while it waits a
 * {@link Pump} keeps the RDMA engine turning, so an INVOKER context still acknowledges and
 * retransmits while this thread sits in the side channel.
 *
 * <p>Messages are written with one {@code write} each, as the C tools do (they read each
 * message with a single {@code read} and treat a short one as an error); reads here loop until
 * the whole message is in.
 */
public final class SideChannel implements AutoCloseable {
    /** What a side-channel wait does besides waiting. */
    public interface Pump {
        /** One turn: drive the engine (or look at its counters); @return the work done, 0 when idle. */
        int turn();

        /** @return true when {@link #turn()} drives the engine, so the wait should spin rather than block */
        boolean spins();
    }

    /** Waits only. */
    public static final Pump IDLE = new Pump() {
        @Override
        public int turn() {
            return 0;
        }

        @Override
        public boolean spins() {
            return false;
        }
    };

    private final SocketChannel ch;
    private final Selector selector;
    private final long timeoutNanos;
    private final String peer;
    /** bytes {@link #peerClosed} read ahead of the next read (a read takes them first) */
    private final ByteBuffer ahead = ByteBuffer.allocate(4096).flip();
    /** the peer closed its end ({@link #peerClosed} saw the end of the stream) */
    private boolean eof;
    /** {@link System#nanoTime()} by which the current exchange must be over; 0: none ({@link #deadline}) */
    private volatile long deadline;
    private long deadlineSpan;

    private SideChannel(SocketChannel ch, long timeoutNanos) throws IOException {
        this.ch = ch;
        this.timeoutNanos = timeoutNanos;
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        this.selector = Selector.open();
        ch.register(selector, SelectionKey.OP_READ);
        InetSocketAddress r = (InetSocketAddress) ch.getRemoteAddress();
        this.peer = r.getAddress().getHostAddress() + ":" + r.getPort();
    }

    /**
     * Wraps a connection a server accepted itself, of which it already read {@code readAhead} (the next read
     * returns those bytes first).
     */
    public static SideChannel accepted(SocketChannel ch, byte[] readAhead, long timeoutNanos) {
        try {
            SideChannel sc = new SideChannel(ch, timeoutNanos);
            sc.ahead.clear();
            sc.ahead.put(readAhead).flip();
            return sc;
        } catch (IOException | RuntimeException e) {
            closeQuietly(ch);
            throw new SideChannelException("the accepted connection failed: " + e.getMessage(), e);
        }
    }

    /**
     * Every read and write fails once {@code nanos} passed from now, whatever arrives meanwhile (a server's
     * per-client bound on an exchange, which a slow trickle of bytes does not extend); 0 lifts it.
     */
    public void deadline(long nanos) {
        deadlineSpan = nanos;
        deadline = nanos == 0 ? 0 : (System.nanoTime() + nanos) | 1;
    }

    private void checkDeadline(String what) {
        long d = deadline;
        if (d != 0 && System.nanoTime() - d > 0) {
            throw new SideChannelException("the exchange with " + peer + " did not finish within its "
                    + deadlineSpan / 1_000_000L + " ms (at " + what + ")");
        }
    }

    /**
     * The longest a blocking wait sleeps in {@code select} when nothing arrives: the peer's bytes and its close wake it
     * at once, so this only paces the deadline checks and the pump (which looks at packet counters twice a second). A
     * passive perf server waits here for a whole run, where a C server sleeps in {@code read}: at ten wake-ups a second
     * (100 ms) and two counter reads, its waiting thread still took 2.5% of an emulated guest's one CPU, which the
     * kernel's RDMA work for the run needs.
     */
    static final long BLOCK_MILLIS = 500;

    /** {@return how long a blocking wait may sleep: {@link #BLOCK_MILLIS}, less when a deadline comes sooner} */
    private long blockMillis(long lastProgress) {
        long now = System.nanoTime();
        long left = timeoutNanos - (now - lastProgress);
        long d = deadline;
        if (d != 0) {
            left = Math.min(left, d - now);
        }
        return Math.max(1, Math.min(BLOCK_MILLIS, left / 1_000_000L + 1));
    }

    /** Connects to a server (one attempt, as the C tools make). */
    public static SideChannel connect(InetSocketAddress server, long timeoutNanos) {
        SocketChannel ch = null;
        io.jrdma.tools.Progress.step("connecting to " + server.getAddress().getHostAddress() + ":" + server.getPort());
        try {
            ch = SocketChannel.open();
            ch.socket().connect(server, (int) Math.min(Integer.MAX_VALUE, Math.max(1, timeoutNanos / 1_000_000)));
            return new SideChannel(ch, timeoutNanos);
        } catch (IOException e) {
            closeQuietly(ch);
            throw new SideChannelException("couldn't connect to " + server.getAddress().getHostAddress() + ":"
                    + server.getPort() + " (" + reason(e) + ")", e);
        }
    }

    /** A listening socket, for the one client a server serves. */
    public static final class Listener implements AutoCloseable {
        private final ServerSocketChannel server;
        private final Selector selector;

        private Listener(ServerSocketChannel server) throws IOException {
            this.server = server;
            server.configureBlocking(false);
            this.selector = Selector.open();
            server.register(selector, SelectionKey.OP_ACCEPT);
        }

        /** @return the port it listens on */
        public int port() {
            return server.socket().getLocalPort();
        }

        /**
         * Waits for the client, up to {@code waitNanos} (0 = forever, as the C tools wait),
         * turning the pump meanwhile; the accepted connection's waits use {@code timeoutNanos}.
         */
        public SideChannel accept(long waitNanos, long timeoutNanos, Pump pump) {
            long deadline = System.nanoTime() + waitNanos;
            io.jrdma.tools.Progress.step("waiting for a client on TCP port " + port());
            try {
                while (true) {
                    SocketChannel c = server.accept();
                    if (c != null) {
                        return new SideChannel(c, timeoutNanos);
                    }
                    pump.turn();
                    if (waitNanos > 0 && System.nanoTime() - deadline > 0) {
                        throw new SideChannelException("no client connected to TCP port " + port() + " within "
                                + waitNanos / 1_000_000_000L + " s");
                    }
                    if (pump.spins()) {
                        LockSupport.parkNanos(200_000);
                    } else {
                        selector.select(100);
                        selector.selectedKeys().clear();
                    }
                }
            } catch (IOException e) {
                throw new SideChannelException("accepting a client on TCP port " + port() + " failed: " + reason(e), e);
            }
        }

        @Override
        public void close() {
            closeQuietly(selector);
            closeQuietly(server);
        }
    }

    /** What to do when a server's TCP port is taken. */
    public static final String PORT_BUSY = "is another server running there? Stop it, or give both sides another"
            + " port with -p";

    /** Listens on {@code address} (port 0: any free port) with SO_REUSEADDR, as the C servers do. */
    public static Listener listen(InetSocketAddress address) {
        ServerSocketChannel s = null;
        try {
            s = ServerSocketChannel.open();
            s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            s.bind(address, 1);
            Listener l = new Listener(s);
            // from here on, before any banner: a client may come any moment
            io.jrdma.tools.Progress.step("waiting for a client on TCP port " + l.port());
            return l;
        } catch (IOException e) {
            closeQuietly(s);
            throw new SideChannelException("couldn't listen to port " + address.getPort() + " (" + reason(e) + ")"
                    + (e instanceof java.net.BindException ? ": " + PORT_BUSY : ""), e);
        }
    }

    /** @return the peer as address:port */
    public String peer() {
        return peer;
    }

    /** @return the local address of the connection (the one the peer reached) */
    public InetAddress localAddress() {
        try {
            return ((InetSocketAddress) ch.getLocalAddress()).getAddress();
        } catch (IOException e) {
            throw new SideChannelException("the side channel is closed", e);
        }
    }

    /** @return the peer's address */
    public InetAddress remoteAddress() {
        try {
            return ((InetSocketAddress) ch.getRemoteAddress()).getAddress();
        } catch (IOException e) {
            throw new SideChannelException("the side channel is closed", e);
        }
    }

    /** Writes one message whole. */
    public void write(byte[] message, String what) {
        ByteBuffer b = ByteBuffer.wrap(message);
        long last = System.nanoTime();
        try {
            while (b.hasRemaining()) {
                checkDeadline(what);
                if (ch.write(b) > 0) {
                    last = System.nanoTime();
                } else {
                    if (System.nanoTime() - last > timeoutNanos) {
                        throw new SideChannelException("timed out sending " + what + " to " + peer);
                    }
                    LockSupport.parkNanos(100_000);
                }
            }
        } catch (IOException e) {
            throw new SideChannelException("couldn't send " + what + " to " + peer + " (" + reason(e) + ")", e);
        }
    }

    /** Reads exactly {@code n} bytes: the peer's message {@code what}. */
    public byte[] read(int n, String what, Pump pump) {
        byte[] out = new byte[n];
        int got = readSome(out, n, what, pump, true);
        if (got < n) {
            throw new SideChannelException("the peer " + peer + " closed the connection after " + got + " of the "
                    + n + " bytes of " + what + (got == 0 ? "" : ": " + printable(out, got)));
        }
        return out;
    }

    /**
     * Reads up to {@code max} bytes until {@code min} arrived or the peer closed.
     *
     * @return the bytes read (fewer than {@code min} only at end of stream)
     */
    public byte[] readAtLeast(int min, int max, String what, Pump pump) {
        byte[] out = new byte[max];
        int got = readSome(out, min, what, pump, true);
        byte[] r = new byte[got];
        System.arraycopy(out, 0, r, 0, got);
        return r;
    }

    /**
     * Whether the peer has closed its end (it stopped, or died: the kernel closes a dead process's
     * sockets). Never blocks and loses nothing: bytes that arrived are kept for the next read.
     */
    public boolean peerClosed() {
        if (eof) {
            return true;
        }
        try {
            if (ahead.hasRemaining() && ahead.limit() == ahead.capacity()) {
                return false; // the read-ahead is full: the peer is alive enough to send
            }
            ahead.compact();
            int n;
            try {
                n = ch.read(ahead);
            } finally {
                ahead.flip();
            }
            if (n < 0) {
                eof = true;
            }
        } catch (IOException e) {
            eof = true; // reset by the peer
        }
        return eof;
    }

    private int readSome(byte[] out, int min, String what, Pump pump, boolean failOnTimeout) {
        ByteBuffer b = ByteBuffer.wrap(out);
        if (ahead.hasRemaining()) {
            int k = Math.min(ahead.remaining(), b.remaining());
            b.put(b.position(), ahead, ahead.position(), k);
            b.position(b.position() + k);
            ahead.position(ahead.position() + k);
        }
        if (eof && b.position() < min) {
            return b.position();
        }
        io.jrdma.tools.Progress.step(() -> "waiting for " + what + " from " + peer + " (" + b.position() + " of " + min
                + " bytes arrived)");
        long last = System.nanoTime();
        int idle = 0;
        try {
            while (b.position() < min) {
                checkDeadline(what);
                int n = ch.read(b);
                if (n < 0) {
                    break;
                }
                if (n > 0) {
                    last = System.nanoTime();
                    idle = 0;
                    continue;
                }
                if (pump.turn() > 0) {
                    last = System.nanoTime();
                    idle = 0;
                    continue;
                }
                if (System.nanoTime() - last > timeoutNanos) {
                    if (!failOnTimeout) {
                        break;
                    }
                    throw new SideChannelException("timed out waiting for " + what + " from " + peer + ": "
                            + (b.position() == 0 ? "nothing arrived" : "only " + b.position() + " of " + min
                            + " bytes arrived (" + printable(out, b.position()) + ")") + " in "
                            + timeoutNanos / 1_000_000_000L + " s (is the peer running the same test? see --timeout)");
                }
                if (pump.spins()) {
                    if (++idle > 1000) {
                        LockSupport.parkNanos(50_000);
                    }
                } else {
                    selector.select(blockMillis(last));
                    selector.selectedKeys().clear();
                }
            }
        } catch (IOException e) {
            throw new SideChannelException("couldn't read " + what + " from " + peer + " (" + reason(e) + ")", e);
        }
        return b.position();
    }

    /** Reads what the peer still sends until it closes, for at most {@code nanos}; never fails. */
    public void drain(long nanos) {
        drain(Long.MAX_VALUE, nanos);
    }

    /**
     * Reads what the peer still sends until it closes or {@code enough} bytes came, for at most {@code nanos};
     * never fails.
     */
    public void drain(long enough, long nanos) {
        byte[] sink = new byte[64];
        long end = System.nanoTime() + nanos;
        long got = ahead.remaining();
        ahead.position(ahead.limit());
        if (eof || got >= enough) {
            return;
        }
        try {
            while (System.nanoTime() - end < 0) {
                int n = ch.read(ByteBuffer.wrap(sink));
                if (n < 0) {
                    return;
                }
                got += n;
                if (got >= enough) {
                    return;
                }
                if (n == 0) {
                    selector.select(Math.max(1, (end - System.nanoTime()) / 1_000_000));
                    selector.selectedKeys().clear();
                }
            }
        } catch (IOException ignored) {
            // the peer is gone: nothing left to drain
        }
    }

    @Override
    public void close() {
        closeQuietly(selector);
        closeQuietly(ch);
    }

    /** @return bytes as text where printable, escapes elsewhere (for error messages) */
    public static String printable(byte[] b, int n) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < Math.min(n, 120); i++) {
            int c = b[i] & 0xff;
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                sb.append((char) c);
            } else if (c == 0) {
                sb.append("\\0");
            } else {
                sb.append(String.format("\\x%02x", c));
            }
        }
        return sb.append(n > 120 ? "\"..." : "\"").toString();
    }

    private static String reason(IOException e) {
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // closing: nothing to add
        }
    }
}

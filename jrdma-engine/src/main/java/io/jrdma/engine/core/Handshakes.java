package io.jrdma.engine.core;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The passive side of a TCP-based connection manager, which no client can hold hostage: one selector
 * accepts every TCP connection and reads each one's first message (a connection request) without
 * blocking, so all handshakes run at once on the thread that polls the listener, however many
 * peers are slow or silent. Each accepted connection has a deadline ({@link Limits#timeout}, from
 * its accept) by which its whole request must have arrived, else it is closed; at most
 * {@link Limits#maxHalfOpen} connections may be waiting for their request, and the oldest is closed
 * when one more arrives (the newest, the likeliest to be a live client, gets its chance). Every
 * drop is counted ({@link #stats}). Completed requests wait for {@code poll} in a queue of at most
 * {@link #MAX_READY}; beyond it a completed request is closed and counted.
 *
 * <p>Only the bytes of the request are read (the protocol says how many from its header), never a
 * byte more: what follows belongs to the connection once it is accepted. A request that completes
 * leaves the selector and is handed to the protocol as a blocking channel.
 *
 * @param <T> what a complete request becomes (the listener's {@code ConnectRequest})
 */
public final class Handshakes<T> implements AutoCloseable {
    /** The deadline of a handshake, in milliseconds from its TCP accept. */
    public static final String TIMEOUT_PROPERTY = "jrdma.cm.handshakeTimeoutMs";
    /** The bound on connections waiting for their request, per listener. */
    public static final String MAX_HALF_OPEN_PROPERTY = "jrdma.cm.maxHalfOpen";
    public static final long DEFAULT_TIMEOUT_MS = 5_000;
    public static final int DEFAULT_MAX_HALF_OPEN = 128;
    /** Completed requests the application has not polled yet, per listener. */
    public static final int MAX_READY = 64;
    /** The listening socket's accept queue in the kernel (capped by net.core.somaxconn). */
    static final int BACKLOG = 1024;

    /** A listener's bounds: each handshake's deadline and the number of connections still in one. */
    public record Limits(Duration timeout, int maxHalfOpen) {
        public Limits {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("the handshake timeout must be positive, not " + timeout);
            }
            if (maxHalfOpen < 1) {
                throw new IllegalArgumentException("at least one half-open connection must be allowed, not " + maxHalfOpen);
            }
        }

        /** The defaults (5 s, 128), or {@code -Djrdma.cm.handshakeTimeoutMs} and {@code -Djrdma.cm.maxHalfOpen}. */
        public static Limits fromProperties() {
            long ms = Long.getLong(TIMEOUT_PROPERTY, DEFAULT_TIMEOUT_MS);
            int max = Integer.getInteger(MAX_HALF_OPEN_PROPERTY, DEFAULT_MAX_HALF_OPEN);
            if (ms <= 0) {
                throw new RdmaException(Errno.EINVAL, "-D" + TIMEOUT_PROPERTY + " must be a positive number of milliseconds, not " + ms);
            }
            if (max < 1) {
                throw new RdmaException(Errno.EINVAL, "-D" + MAX_HALF_OPEN_PROPERTY + " must be at least 1, not " + max);
            }
            return new Limits(Duration.ofMillis(ms), max);
        }
    }

    /** How a protocol's first message is framed and what it becomes. */
    public interface Protocol<T> {
        /** {@return how many bytes the header has: enough to know the whole message's length} */
        int headerLength();

        /**
         * @param header the first {@link #headerLength} bytes
         * @return the whole message's length, header included
         * @throws Exception when the header is not this protocol's, or announces too much
         */
        int messageLength(byte[] header) throws Exception;

        /**
         * The request is complete; {@code ch} is in blocking mode and out of the selector.
         *
         * @return the request for the application, or null when the protocol answered or dropped it itself
         * @throws Exception when the message is malformed (the connection is then closed)
         */
        T request(SocketChannel ch, byte[] message) throws Exception;

        /** The request was never polled (the listener closed, or the queue was full): let go of it. */
        void discard(T request);
    }

    /** A listener built on this class, as tests and tools see it. */
    public interface Bounded {
        /** {@return how many accepted connections are still waiting for their request} */
        int halfOpen();

        /** {@return its bounds} */
        Limits limits();
    }

    /**
     * The listener a connection manager hands out when its handshakes are these: every call is the
     * handshakes', and closing it also takes it out of its manager's set of open things ({@code open}).
     */
    public static final class Listening<R extends io.jrdma.verbs.ConnectionManager.ConnectRequest>
            implements io.jrdma.verbs.ConnectionManager.Listener, Bounded {
        /** the longest a poll runs between two turns of {@link #housekeeping} */
        private static final long SLICE_NANOS = 100_000_000L;

        private final Handshakes<R> handshakes;
        private final java.util.Set<AutoCloseable> open;
        private final Runnable housekeeping;

        /** @param open the manager's set of open listeners and connections, which the caller adds this to */
        public Listening(Handshakes<R> handshakes, java.util.Set<AutoCloseable> open) {
            this(handshakes, open, null);
        }

        /**
         * @param open         the manager's set of open listeners and connections, which the caller adds this to
         * @param housekeeping null, or what the manager runs while the application polls this listener, at least
         *                     every 100 ms of a poll (the TCP side channel: the deadlines of accepted connections
         *                     still waiting for their client's RTU)
         */
        public Listening(Handshakes<R> handshakes, java.util.Set<AutoCloseable> open, Runnable housekeeping) {
            this.handshakes = handshakes;
            this.open = open;
            this.housekeeping = housekeeping;
        }

        @Override
        public InetSocketAddress address() {
            return handshakes.address();
        }

        /** Runs every client's handshake at once until one request is complete (see {@link Handshakes}). */
        @Override
        public io.jrdma.verbs.ConnectionManager.ConnectRequest poll(Duration timeout) {
            if (housekeeping == null) {
                return handshakes.poll(timeout);
            }
            long end = System.nanoTime() + Math.max(0, timeout.toNanos());
            while (true) {
                housekeeping.run();
                long left = end - System.nanoTime();
                R r = handshakes.poll(Duration.ofNanos(Math.max(0, Math.min(left, SLICE_NANOS))));
                if (r != null || end - System.nanoTime() <= 0 || handshakes.closed) {
                    return r;
                }
            }
        }

        @Override
        public int halfOpen() {
            return handshakes.halfOpen();
        }

        @Override
        public Limits limits() {
            return handshakes.limits();
        }

        @Override
        public void close() {
            open.remove(this);
            handshakes.close();
        }
    }

    /** What a listener accepted and dropped; each counter only grows. */
    public static final class Stats {
        /** TCP connections accepted */
        public final AtomicLong accepted = new AtomicLong();
        /** complete requests handed to the application */
        public final AtomicLong requests = new AtomicLong();
        /** closed at their deadline, their request incomplete */
        public final AtomicLong timedOut = new AtomicLong();
        /** closed, the oldest, when one more half-open connection than the bound came */
        public final AtomicLong droppedFull = new AtomicLong();
        /** closed for a malformed request (or one the protocol refused) */
        public final AtomicLong malformed = new AtomicLong();
        /** closed by the peer before its request was complete */
        public final AtomicLong peerClosed = new AtomicLong();
        /** complete requests closed because {@link #MAX_READY} were waiting for the application */
        public final AtomicLong droppedReady = new AtomicLong();

        /** Puts the counters into a context's counter snapshot, as {@code cm_listen_*}. */
        public void addTo(java.util.Map<String, Long> m) {
            m.put("cm_listen_accepted", accepted.get());
            m.put("cm_listen_requests", requests.get());
            m.put("cm_listen_timed_out", timedOut.get());
            m.put("cm_listen_dropped_half_open", droppedFull.get());
            m.put("cm_listen_malformed", malformed.get());
            m.put("cm_listen_peer_closed", peerClosed.get());
            m.put("cm_listen_dropped_ready", droppedReady.get());
        }

        @Override
        public String toString() {
            return "accepted " + accepted + ", requests " + requests + ", timed out " + timedOut
                    + ", dropped (half-open bound) " + droppedFull + ", malformed " + malformed + ", closed by peer "
                    + peerClosed + ", dropped (ready queue full) " + droppedReady;
        }
    }

    private static final System.Logger LOG = System.getLogger(Handshakes.class.getName());

    private final ServerSocketChannel ssc;
    private final InetSocketAddress bound;
    private final Protocol<T> protocol;
    private final Limits limits;
    private final Stats stats;
    private final Selector selector;
    /** in accept order, which is deadline order */
    private final LinkedHashSet<Pending> pending = new LinkedHashSet<>();
    private final ArrayDeque<T> ready = new ArrayDeque<>();
    private final List<Pending> complete = new ArrayList<>();
    private volatile boolean closed;

    /** One accepted connection, reading its request. */
    private final class Pending {
        final SocketChannel ch;
        final long deadline;
        ByteBuffer buf;
        boolean sized;
        SelectionKey key;

        Pending(SocketChannel ch, long deadline) {
            this.ch = ch;
            this.deadline = deadline;
            this.buf = ByteBuffer.allocate(protocol.headerLength());
        }
    }

    /**
     * Listens on {@code address}.
     *
     * @param stats where to count (one per connection manager, shared by its listeners)
     * @throws IOException when the address cannot be bound
     */
    public Handshakes(InetSocketAddress address, Protocol<T> protocol, Limits limits, Stats stats) throws IOException {
        this.protocol = protocol;
        this.limits = limits;
        this.stats = stats;
        ServerSocketChannel s = ServerSocketChannel.open();
        Selector sel = null;
        try {
            s.socket().setReuseAddress(true);
            s.bind(address, BACKLOG);
            s.configureBlocking(false);
            sel = Selector.open();
            s.register(sel, SelectionKey.OP_ACCEPT);
        } catch (IOException | RuntimeException e) {
            s.close();
            if (sel != null) {
                sel.close();
            }
            throw e;
        }
        this.ssc = s;
        this.selector = sel;
        this.bound = (InetSocketAddress) s.getLocalAddress();
    }

    /** {@return the address listened on} */
    public InetSocketAddress address() {
        return bound;
    }

    /** {@return this listener's limits} */
    public Limits limits() {
        return limits;
    }

    /** {@return how many accepted connections are still waiting for their request} */
    public synchronized int halfOpen() {
        return pending.size();
    }

    /**
     * Runs every handshake until a request is complete or {@code timeout} passes.
     *
     * @return the next complete request, or null when none came in time (or the listener is closed, before or
     *         during this poll)
     */
    public synchronized T poll(Duration timeout) {
        long end = System.nanoTime() + Math.max(0, timeout.toNanos());
        boolean once = true;
        while (true) {
            T r = ready.poll();
            if (r != null) {
                return r;
            }
            if (closed) {
                return null;
            }
            long now = System.nanoTime();
            expire(now);
            long left = end - now;
            if (left <= 0 && !once) {
                return null;
            }
            once = false;
            long wait = left;
            Pending first = pending.isEmpty() ? null : pending.getFirst();
            if (first != null) {
                wait = Math.min(wait, first.deadline - now);
            }
            try {
                if (wait <= 0) {
                    selector.selectNow();
                } else {
                    selector.select(Math.max(1, (wait + 999_999) / 1_000_000));
                }
                if (closed) {
                    return null;
                }
                handle();
            } catch (ClosedSelectorException e) {
                return null;
            } catch (IOException e) {
                if (closed) {
                    // close() closes the listening socket before it waits for this monitor: an accept of this round
                    // then fails on it (before, that was an EIO out of a poll of a listener closed under it; found
                    // in review); close() lets go of the rest once this poll returns
                    return null;
                }
                throw new RdmaException(Errno.EIO, "listener on " + bound + " failed: " + e.getMessage(), e);
            }
        }
    }

    private void handle() throws IOException {
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
            SelectionKey k = it.next();
            it.remove();
            if (!k.isValid()) {
                continue;
            }
            if (k.channel() == ssc) {
                acceptAll();
            } else {
                Pending p = (Pending) k.attachment();
                read(p);
            }
        }
        if (!complete.isEmpty()) {
            selector.selectNow(); // deregisters the cancelled keys, so the channels may block again
            selector.selectedKeys().clear(); // anything else ready is seen in the next round
            for (Pending p : complete) {
                finish(p);
            }
            complete.clear();
        }
    }

    private void acceptAll() throws IOException {
        SocketChannel ch;
        while ((ch = acceptOne()) != null) {
            stats.accepted.incrementAndGet();
            try {
                ch.configureBlocking(false);
                Pending p = new Pending(ch, System.nanoTime() + limits.timeout().toNanos());
                p.key = ch.register(selector, SelectionKey.OP_READ, p);
                pending.add(p);
            } catch (IOException e) {
                stats.peerClosed.incrementAndGet();
                closeQuietly(ch);
                continue;
            }
            while (pending.size() > limits.maxHalfOpen()) {
                Pending oldest = pending.getFirst();
                drop(oldest, stats.droppedFull, "dropped (more than " + limits.maxHalfOpen() + " connections without a request)");
            }
        }
    }

    private SocketChannel acceptOne() throws IOException {
        try {
            return ssc.accept();
        } catch (IOException e) {
            String m = String.valueOf(e.getMessage());
            if (m.contains("Too many open files")) {
                // out of descriptors: leave the connection in the kernel's queue; the next round retries
                LOG.log(System.Logger.Level.DEBUG, () -> "listener on " + bound + " cannot accept: " + m);
                return null;
            }
            throw e;
        }
    }

    private void read(Pending p) {
        try {
            int n = p.ch.read(p.buf);
            if (n < 0) {
                drop(p, stats.peerClosed, "closed by the peer before its request was complete");
                return;
            }
            if (p.buf.hasRemaining()) {
                return;
            }
            if (!p.sized) {
                int len = protocol.messageLength(p.buf.array());
                if (len < p.buf.capacity()) {
                    throw new IOException("a message of " + len + " bytes is shorter than its header");
                }
                p.sized = true;
                if (len > p.buf.capacity()) {
                    ByteBuffer b = ByteBuffer.allocate(len);
                    b.put(p.buf.flip());
                    p.buf = b;
                    return; // the rest comes with the next readiness
                }
            }
            pending.remove(p);
            p.key.cancel();
            complete.add(p);
        } catch (Exception e) {
            drop(p, stats.malformed, "malformed request (" + e + ")");
        }
    }

    private void finish(Pending p) {
        T r;
        try {
            p.ch.configureBlocking(true);
            r = protocol.request(p.ch, p.buf.array());
        } catch (Exception e) {
            stats.malformed.incrementAndGet();
            closeQuietly(p.ch);
            LOG.log(System.Logger.Level.DEBUG, () -> "listener on " + bound + " dropped a malformed request: " + e);
            return;
        }
        if (r == null) {
            stats.malformed.incrementAndGet();
            closeQuietly(p.ch);
            return;
        }
        if (ready.size() >= MAX_READY) {
            stats.droppedReady.incrementAndGet();
            protocol.discard(r);
            return;
        }
        stats.requests.incrementAndGet();
        ready.add(r);
    }

    private void expire(long now) {
        while (!pending.isEmpty()) {
            Pending p = pending.getFirst();
            if (p.deadline - now > 0) {
                return;
            }
            drop(p, stats.timedOut, "no complete request within " + limits.timeout());
        }
    }

    /** Counts (first: whoever sees the connection close may read the counter at once), then closes. */
    private void drop(Pending p, AtomicLong counter, String why) {
        counter.incrementAndGet();
        pending.remove(p);
        if (p.key != null) {
            p.key.cancel();
        }
        Object from = remote(p.ch);
        closeQuietly(p.ch);
        LOG.log(System.Logger.Level.DEBUG, () -> "listener on " + bound + " closed " + from + ": " + why);
    }

    private static Object remote(SocketChannel ch) {
        try {
            return ch.getRemoteAddress();
        } catch (IOException e) {
            return "(a closed connection)";
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // closing anyway
        }
    }

    /** Stops listening: the listening socket, every half-open connection and every unpolled request are closed. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        selector.wakeup();
        closeQuietly(ssc);
        synchronized (this) {
            for (Pending p : pending) {
                closeQuietly(p.ch);
            }
            pending.clear();
            for (Pending p : complete) {
                closeQuietly(p.ch);
            }
            complete.clear();
            for (T r : ready) {
                protocol.discard(r);
            }
            ready.clear();
            closeQuietly(selector);
        }
    }
}

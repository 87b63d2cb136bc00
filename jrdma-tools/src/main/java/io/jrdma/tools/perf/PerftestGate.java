package io.jrdma.tools.perf;

import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The front door of {@code jrdma perf --server} (perftest's TCP exchange): one thread accepts every connection as
 * it comes and waits, for all of them at once, for each one's first message, perftest's 16-byte version string
 * (a perftest client writes it first and then waits for the server's). A connection is handed to the server only
 * once its whole version arrived; one that stays silent, sends part of it or closes is closed at its own deadline
 * ({@code min(5 s, --timeout)} from its accept) without ever holding a server slot, and at most
 * {@value #MAX_EXCHANGING} connections wait for their version at once (more are closed as they arrive). Nothing
 * is written before the server answers, so a C perftest client sees the same bytes as from one accept.
 */
final class PerftestGate implements AutoCloseable {
    /** The most connections still sending their version at once; more are closed at their accept. */
    static final int MAX_EXCHANGING = 32;
    /** The most connections with their version in, waiting for a free server slot; more are closed. */
    static final int MAX_WAITING = 64;

    private record Pending(SocketChannel ch, ByteBuffer version, long deadline) {
    }

    private final ServerSocketChannel server;
    private final Selector selector;
    private final long deadlineNanos;
    private final long timeoutNanos;
    private final PrintStream log;
    private final LinkedBlockingQueue<SideChannel> ready = new LinkedBlockingQueue<>();
    private final Thread thread;
    private volatile boolean closed;
    private final AtomicLong silent = new AtomicLong();
    private final AtomicLong closedEarly = new AtomicLong();
    private final AtomicLong overBound = new AtomicLong();

    /**
     * Listens on {@code port} (0: any) with SO_REUSEADDR and starts accepting.
     *
     * @param deadlineNanos how long a connection has to send its version, from its accept
     * @param timeoutNanos  the side channel's timeout once handed on ({@code --timeout})
     * @param log           where the first connection over the bound is reported (once)
     * @throws SideChannelException when the port cannot be listened on
     */
    PerftestGate(int port, long deadlineNanos, long timeoutNanos, PrintStream log) {
        this.deadlineNanos = deadlineNanos;
        this.timeoutNanos = timeoutNanos;
        this.log = log;
        ServerSocketChannel s = null;
        Selector sel = null;
        try {
            s = ServerSocketChannel.open();
            s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            s.bind(new InetSocketAddress(port), 128);
            s.configureBlocking(false);
            sel = Selector.open();
            s.register(sel, SelectionKey.OP_ACCEPT);
        } catch (IOException e) {
            close(sel);
            close(s);
            throw new SideChannelException("couldn't listen to port " + port + " (" + e.getMessage() + ")"
                    + (e instanceof java.net.BindException ? ": " + SideChannel.PORT_BUSY : ""), e);
        }
        this.server = s;
        this.selector = sel;
        this.thread = Thread.ofPlatform().name("jrdma-perf-gate").daemon().start(this::loop);
    }

    /** @return the TCP port it listens on */
    int port() {
        return server.socket().getLocalPort();
    }

    /**
     * @return the next connection whose version arrived (the version still to be read from it), waiting for one
     *         as long as it takes; null once closed
     */
    SideChannel take() {
        while (!closed) {
            try {
                SideChannel c = ready.poll(200, TimeUnit.MILLISECONDS);
                if (c != null) {
                    return c;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        return null;
    }

    /** @return the connections closed before their version arrived, by cause (empty when none) */
    String dropped() {
        long s = silent.get();
        long c = closedEarly.get();
        long b = overBound.get();
        if (s + c + b == 0) {
            return "";
        }
        return "connections closed before their version arrived: " + s + " silent or partial at their deadline, "
                + c + " closed by the peer, " + b + " over the bound";
    }

    private void loop() {
        try {
            while (!closed) {
                long now = System.nanoTime();
                selector.select(50);
                for (SelectionKey k : selector.selectedKeys()) {
                    if (!k.isValid()) {
                        continue;
                    }
                    if (k.isAcceptable()) {
                        acceptAll(now);
                    } else if (k.isReadable()) {
                        read(k);
                    }
                }
                selector.selectedKeys().clear();
                now = System.nanoTime();
                for (SelectionKey k : selector.keys()) {
                    if (k.attachment() instanceof Pending p && k.isValid() && now - p.deadline() > 0) {
                        k.cancel();
                        close(p.ch());
                        silent.incrementAndGet();
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                log.println("jrdma perf: the server stopped accepting: " + e);
                log.flush();
                closed = true;
            }
        }
    }

    private void acceptAll(long now) throws IOException {
        SocketChannel c;
        while ((c = server.accept()) != null) {
            int exchanging = selector.keys().size() - 1;
            if (exchanging >= MAX_EXCHANGING || ready.size() >= MAX_WAITING) {
                close(c);
                if (overBound.getAndIncrement() == 0) {
                    log.println(" jrdma perf server: " + MAX_EXCHANGING + " connections still sending their version ("
                            + "or " + MAX_WAITING + " waiting to be served): closing the excess at once (counted, shown"
                            + " after each client)");
                    log.flush();
                }
                continue;
            }
            c.configureBlocking(false);
            c.register(selector, SelectionKey.OP_READ,
                    new Pending(c, ByteBuffer.allocate(PerftestWire.VERSION_SIZE), now + deadlineNanos));
        }
    }

    private void read(SelectionKey k) {
        Pending p = (Pending) k.attachment();
        int n;
        try {
            n = p.ch().read(p.version());
        } catch (IOException e) {
            n = -1; // reset by the peer
        }
        if (n < 0) {
            k.cancel();
            close(p.ch());
            closedEarly.incrementAndGet();
            return;
        }
        if (p.version().hasRemaining()) {
            return;
        }
        // handed on: the key is cancelled but stays in the selector's key set until its next select, which may not
        // come (a worker that takes the last client closes the gate at once); detached, close() leaves it alone
        k.cancel();
        k.attach(null);
        try {
            ready.add(SideChannel.accepted(p.ch(), p.version().array(), timeoutNanos));
        } catch (SideChannelException e) {
            close(p.ch());
            closedEarly.incrementAndGet();
        }
    }

    /** Stops accepting; closes the listening socket and every connection not handed on. */
    @Override
    public synchronized void close() {
        if (!selector.isOpen()) {
            return; // closed already (by the worker that took the last client)
        }
        closed = true;
        try {
            thread.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (SelectionKey k : selector.keys()) {
            if (k.isValid() && k.attachment() instanceof Pending p) { // a cancelled key's channel was closed or handed on
                close(p.ch());
            }
        }
        close(selector);
        close(server);
        SideChannel c;
        while ((c = ready.poll()) != null) {
            c.close();
        }
    }

    private static void close(AutoCloseable c) {
        Perftest.close(c);
    }
}

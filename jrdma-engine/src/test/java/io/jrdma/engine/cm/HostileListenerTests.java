package io.jrdma.engine.cm;

import io.jrdma.engine.core.Handshakes;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A listener that cannot be held hostage, for every TCP-based connection manager (each subclass gives
 * its provider, its listener and a partial request): a server thread polls the listener as a real
 * service does, while the test holds hundreds of silent, stalled or malformed TCP connections to it
 * and a real client connects. Loopback only; every wait has a deadline; nothing sleeps.
 *
 * <p>Run with {@code -Djrdma.test.hostile.report=true} to print the figures (docs/connection-manager.md,
 * "Listeners").
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class HostileListenerTests {
    protected static final InetAddress LO = InetAddress.getLoopbackAddress();
    private static final boolean REPORT = Boolean.getBoolean("jrdma.test.hostile.report");
    private static final int SILENT = 200;
    private static final int BOUND = 64;

    /** {@return a fresh context of the provider under test, its engine on its own thread} */
    protected abstract DeviceContext open();

    /** {@return a listener of {@code ctx}'s connection manager with these limits} */
    protected abstract Listener listen(DeviceContext ctx, InetSocketAddress at, Handshakes.Limits limits);

    /** {@return the first part of a valid request, not all of it: what a client that stalls halfway sent} */
    protected abstract byte[] halfRequest();

    /** {@return a whole, valid request, as client number {@code i} that then goes silent sends it} */
    protected abstract byte[] fullRequest(int i);

    /**
     * {@return whether the protocol has the client confirm after the server's answer (the TCP side channel's
     * RTU): an accepted connection whose confirmation never comes must then end at its deadline}
     */
    protected boolean confirmsAfterAccept() {
        return false;
    }

    /** {@return the provider's name, for the report} */
    protected abstract String name();

    private DeviceContext server;
    private DeviceContext client;
    private ProtectionDomain spd;
    private ProtectionDomain cpd;
    private CompletionQueue scq;
    private CompletionQueue ccq;
    private Listener listener;
    private Thread serverThread;
    private volatile boolean stop;
    /** what the server thread gives {@code accept} */
    private volatile Duration acceptTimeout = Duration.ofSeconds(5);
    private final LinkedBlockingQueue<Connection> served = new LinkedBlockingQueue<>();
    private final List<QueuePair> serverQps = new ArrayList<>();
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void openContexts() {
        server = open();
        client = open();
        spd = server.allocPd();
        cpd = client.allocPd();
        scq = server.createCq(64);
        ccq = client.createCq(64);
    }

    /** Starts a server thread that polls the listener and accepts every request, as a service does. */
    private InetSocketAddress serve(Handshakes.Limits limits) {
        listener = listen(server, new InetSocketAddress(LO, 0), limits);
        serverThread = Thread.ofPlatform().daemon().name("hostile-listener-server").start(() -> {
            while (!stop) {
                ConnectionManager.ConnectRequest r = listener.poll(Duration.ofMillis(100));
                if (r != null) {
                    QueuePair qp = spd.createQp(QpInitAttr.rc(scq));
                    synchronized (serverQps) {
                        serverQps.add(qp);
                    }
                    try {
                        served.add(r.accept(qp, ConnParam.defaults(), acceptTimeout));
                    } catch (RuntimeException e) {
                        // a client that went away during accept: the service goes on
                    }
                }
            }
        });
        return new InetSocketAddress(LO, listener.address().getPort());
    }

    @AfterEach
    void closeAll() throws Exception {
        stop = true;
        if (serverThread != null) {
            serverThread.join(5_000);
        }
        for (AutoCloseable c : toClose) {
            c.close();
        }
        for (Connection c : served) {
            c.close();
        }
        if (listener != null) {
            listener.close();
        }
        for (QueuePair qp : serverQps) {
            qp.close();
        }
        for (AutoCloseable c : new AutoCloseable[] {scq, ccq, spd, cpd, server, client}) {
            if (c != null) { // a context that failed to open leaves the rest null
                c.close();
            }
        }
    }

    private List<SocketChannel> silentConnections(InetSocketAddress at, int n) throws IOException {
        List<SocketChannel> l = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            SocketChannel ch = SocketChannel.open(at);
            toClose.add(ch);
            l.add(ch);
        }
        return l;
    }

    /** Connects a real client; returns the time it took in nanoseconds. */
    private long realClient(InetSocketAddress at, List<Connection> into) {
        QueuePair qp = cpd.createQp(QpInitAttr.rc(ccq));
        toClose.add(qp);
        long t0 = System.nanoTime();
        Connection c = client.connectionManager().connect(qp, at, ConnParam.defaults(), Duration.ofSeconds(10));
        long took = System.nanoTime() - t0;
        toClose.addFirst(c);
        into.add(c);
        assertEquals(QpState.RTS, qp.state());
        return took;
    }

    private long counter(String name) {
        Map<String, Long> m = server.counters();
        Long v = m.get(name);
        assertNotNull(v, name + " is not among the counters " + m.keySet());
        return v;
    }

    private static long openFds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    /** Reads from a dropped client connection: the server must have closed it (end of stream) within 5 s. */
    private static boolean closedByServer(SocketChannel ch, long timeoutMs) throws IOException {
        ch.socket().setSoTimeout((int) timeoutMs);
        InputStream in = ch.socket().getInputStream();
        try {
            return in.read() < 0;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset: closed as well
        }
    }

    /** Reads what the server sent until the end of the stream: true when it came (closed) within the time. */
    private static boolean readToEnd(SocketChannel ch, long timeoutMs) throws IOException {
        long end = System.nanoTime() + timeoutMs * 1_000_000;
        InputStream in = ch.socket().getInputStream();
        byte[] b = new byte[512];
        try {
            while (true) {
                long left = (end - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return false;
                }
                ch.socket().setSoTimeout((int) left);
                if (in.read(b) < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset: closed as well
        }
    }

    private static boolean stillOpen(SocketChannel ch) throws IOException {
        ch.configureBlocking(false);
        try {
            return ch.read(ByteBuffer.allocate(1)) == 0;
        } catch (IOException e) {
            return false;
        } finally {
            ch.configureBlocking(true);
        }
    }

    @Test
    void twoHundredSilentConnectionsDoNotDelayARealClientAndTheBoundHolds() throws Exception {
        InetSocketAddress at = serve(new Handshakes.Limits(Duration.ofSeconds(30), BOUND));
        long fdsBefore = openFds();
        List<SocketChannel> silent = silentConnections(at, SILENT);
        List<Connection> real = new ArrayList<>();
        long took = realClient(at, real);
        Connection serverSide = served.poll(5, TimeUnit.SECONDS);
        assertNotNull(serverSide, "the server did not report the real client's connection");
        long fdsAfter = openFds();
        assertTrue(took < 1_000_000_000L, "the real client took " + took / 1_000_000 + " ms behind " + SILENT
                + " silent connections");

        // the server accepted every connection, kept the newest BOUND (the real one among them) and closed the oldest
        int dropped = SILENT + 1 - BOUND;
        assertEquals(SILENT + 1, counter("cm_listen_accepted"));
        assertEquals(dropped, counter("cm_listen_dropped_half_open"));
        assertEquals(1, counter("cm_listen_requests"));
        assertEquals(0, counter("cm_listen_timed_out"));
        assertEquals(BOUND - 1, ((Handshakes.Bounded) listener).halfOpen());
        for (int i = 0; i < dropped; i++) {
            assertTrue(closedByServer(silent.get(i), 5_000), "silent connection " + i + " (one of the oldest) is still open");
        }
        for (int i = dropped; i < SILENT; i++) {
            assertTrue(stillOpen(silent.get(i)), "silent connection " + i + " (one of the newest) was closed");
        }
        // this process holds both ends: SILENT client sockets, 2 for the real connection, and at most BOUND - 1
        // server sockets of silent clients (unbounded, it would be SILENT more); a few for the contexts' own use
        long grown = fdsAfter - fdsBefore;
        assertTrue(grown >= SILENT + BOUND - 1 && grown <= SILENT + 2 + BOUND - 1 + 16,
                "file descriptors grew by " + grown + " with " + SILENT + " silent clients and a bound of " + BOUND);
        report("%s: %d silent TCP connections, then a real client: connected in %.1f ms; %d oldest silent"
                        + " connections closed at the bound of %d half-open, %d still open; descriptors +%d",
                name(), SILENT, took / 1e6, dropped, BOUND, BOUND - 1, grown);
    }

    @Test
    void aClientThatStallsHalfwayIsDroppedAtItsDeadlineWhileOthersAreServed() throws Exception {
        Duration deadline = Duration.ofMillis(1_000);
        InetSocketAddress at = serve(new Handshakes.Limits(deadline, BOUND));
        SocketChannel staller = SocketChannel.open(at);
        toClose.add(staller);
        long t0 = System.nanoTime();
        staller.write(ByteBuffer.wrap(halfRequest()));
        List<Connection> real = new ArrayList<>();
        long took = realClient(at, real); // served while the staller waits
        assertNotNull(served.poll(5, TimeUnit.SECONDS));
        assertTrue(took < 1_000_000_000L, "the real client took " + took / 1_000_000 + " ms behind a stalled one");
        assertTrue(closedByServer(staller, 10_000), "the stalled client was never dropped");
        long droppedAfter = System.nanoTime() - t0;
        assertTrue(droppedAfter >= deadline.toNanos() - 50_000_000L && droppedAfter < deadline.toNanos() + 2_000_000_000L,
                "the stalled client was dropped after " + droppedAfter / 1_000_000 + " ms, its deadline is " + deadline);
        assertEquals(1, counter("cm_listen_timed_out"));
        assertEquals(0, ((Handshakes.Bounded) listener).halfOpen());
        report("%s: a client that sent %d bytes of its request and stalled: closed after %d ms (deadline %d ms);"
                        + " a real client meanwhile connected in %.1f ms",
                name(), halfRequest().length, droppedAfter / 1_000_000, deadline.toMillis(), took / 1e6);
    }

    @Test
    void halfRequestsAndGarbageBeyondTheBoundAreDroppedAndARealClientIsServed() throws Exception {
        InetSocketAddress at = serve(new Handshakes.Limits(Duration.ofSeconds(30), BOUND));
        List<SocketChannel> stallers = silentConnections(at, SILENT);
        for (SocketChannel s : stallers) {
            s.write(ByteBuffer.wrap(halfRequest()));
        }
        SocketChannel garbage = SocketChannel.open(at);
        toClose.add(garbage);
        byte[] junk = new byte[64];
        java.util.Arrays.fill(junk, (byte) 0x5A);
        garbage.write(ByteBuffer.wrap(junk));
        assertTrue(closedByServer(garbage, 5_000), "a connection that sent garbage is still open");
        List<Connection> real = new ArrayList<>();
        long took = realClient(at, real);
        assertNotNull(served.poll(5, TimeUnit.SECONDS));
        assertTrue(took < 1_000_000_000L, "the real client took " + took / 1_000_000 + " ms behind "
                + SILENT + " half requests");
        assertEquals(1, counter("cm_listen_malformed"));
        // SILENT + garbage + real accepted; the garbage left by itself; the bound closed the rest of the oldest
        assertEquals(SILENT + 2, counter("cm_listen_accepted"));
        assertEquals(SILENT + 1 - BOUND, counter("cm_listen_dropped_half_open"));
        assertTrue(((Handshakes.Bounded) listener).halfOpen() <= BOUND);
        report("%s: %d clients that sent half a request and 1 that sent garbage, then a real client: connected in"
                + " %.1f ms; garbage closed as malformed, %d half requests closed at the bound of %d",
                name(), SILENT, took / 1e6, SILENT + 1 - BOUND, BOUND);
    }

    @Test
    void aPeersDepartureIsSeenWithinASecondUnderHostileLoad() throws Exception {
        InetSocketAddress at = serve(new Handshakes.Limits(Duration.ofSeconds(30), BOUND));
        List<SocketChannel> stallers = silentConnections(at, SILENT);
        for (int i = 0; i < SILENT; i += 2) {
            stallers.get(i).write(ByteBuffer.wrap(halfRequest()));
        }
        List<Connection> real = new ArrayList<>();
        realClient(at, real);
        Connection serverSide = served.poll(5, TimeUnit.SECONDS);
        assertNotNull(serverSide);
        Connection clientSide = real.getFirst();
        long t0 = System.nanoTime();
        clientSide.close();
        ConnectionManager.Event e = serverSide.pollEvent(Duration.ofSeconds(1));
        long seen = System.nanoTime() - t0;
        assertEquals(ConnectionManager.Event.DISCONNECTED, e, "the server did not see its peer leave within a second");
        assertEquals(QpState.ERROR, serverSide.qp().state());
        assertEquals(ConnectionManager.Event.TIMEWAIT_EXIT, serverSide.pollEvent(Duration.ofSeconds(1)));
        // and the listener still serves
        long took = realClient(at, real);
        assertNotNull(served.poll(5, TimeUnit.SECONDS));
        assertTrue(took < 1_000_000_000L, "a later client took " + took / 1_000_000 + " ms");
        report("%s: with %d silent and half-request connections held, the server saw its peer leave after %.1f ms;"
                + " a next client connected in %.1f ms", name(), SILENT, seen / 1e6, took / 1e6);
    }

    @Test
    void clientsSilentAfterTheirRequestDoNotHoldUpTheNextAccept() throws Exception {
        int n = 20;
        Duration confirm = Duration.ofSeconds(1);
        acceptTimeout = confirm;
        InetSocketAddress at = serve(new Handshakes.Limits(Duration.ofSeconds(30), BOUND));
        List<SocketChannel> silent = silentConnections(at, n);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            silent.get(i).write(ByteBuffer.wrap(fullRequest(i)));
        }
        // the server accepts each at once: its accept does not wait for a client's confirmation
        List<Connection> accepted = new ArrayList<>();
        long until = t0 + 3_000_000_000L;
        for (int i = 0; i < n; i++) {
            Connection c = served.poll(Math.max(1, until - System.nanoTime()), TimeUnit.NANOSECONDS);
            assertNotNull(c, "the server accepted " + i + " of " + n + " clients that sent their request and then"
                    + " nothing within 3 s: its accept waits for them");
            toClose.add(c);
            accepted.add(c);
        }
        long allAccepted = System.nanoTime() - t0;
        List<Connection> real = new ArrayList<>();
        long took = realClient(at, real);
        Connection serverSide = served.poll(5, TimeUnit.SECONDS);
        assertNotNull(serverSide, "the server did not report the real client's connection");
        assertTrue(took < 1_000_000_000L, "the real client took " + took / 1_000_000 + " ms behind " + n
                + " clients silent after their request");
        if (!confirmsAfterAccept()) {
            // nothing to wait for in this protocol: the silent clients' connections are established, idle ones
            for (Connection c : accepted) {
                assertEquals(null, c.pollEvent(Duration.ZERO));
            }
            report("%s: %d clients silent after a whole request: all accepted in %.1f ms; then a real client"
                    + " connected in %.1f ms", name(), n, allAccepted / 1e6, took / 1e6);
            return;
        }
        // nobody polls the silent connections' events: the server thread's listener polls end each one at its
        // deadline, which the client sees as the end of the stream (after the server's answer)
        for (int i = 0; i < n; i++) {
            assertTrue(readToEnd(silent.get(i), 10_000), "silent client " + i + " was never let go");
        }
        long endedAfter = System.nanoTime() - t0;
        assertTrue(endedAfter >= confirm.toNanos() - 50_000_000L && endedAfter < confirm.toNanos() + 2_000_000_000L,
                "the unconfirmed connections ended after " + endedAfter / 1_000_000 + " ms, their deadline is " + confirm);
        for (Connection c : accepted) {
            assertEquals(QpState.ERROR, c.qp().state(), "an unconfirmed connection's QP");
            assertEquals(ConnectionManager.Event.DISCONNECTED, c.pollEvent(Duration.ZERO));
            assertEquals(ConnectionManager.Event.TIMEWAIT_EXIT, c.pollEvent(Duration.ZERO));
        }
        assertEquals(n, counter("cm_rtu_timed_out"));
        // the real client confirmed: its connection outlives the deadline
        assertEquals(null, serverSide.pollEvent(Duration.ZERO));
        assertEquals(QpState.RTS, serverSide.qp().state());
        assertEquals(n, counter("cm_rtu_timed_out"));
        report("%s: %d clients silent after a whole request: all accepted in %.1f ms; a real client then connected"
                + " in %.1f ms; the %d unconfirmed connections ended after %d ms (deadline %d ms), counted",
                name(), n, allAccepted / 1e6, took / 1e6, n, endedAfter / 1_000_000, confirm.toMillis());
    }

    private static void report(String format, Object... args) {
        if (REPORT) {
            System.out.println("[hostile-listener] " + String.format(java.util.Locale.ROOT, format, args));
        }
    }
}

package io.jrdma.engine.cm;

import io.jrdma.engine.core.Handshakes;
import io.jrdma.engine.roce.SoftRoceDevice;
import io.jrdma.soft.SoftRoceOptions;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionManager.ConnectRequest;
import io.jrdma.verbs.ConnectionManager.Event;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP connection manager's races on close (found in review), each interleaving forced with latches, the
 * order of the handshake's messages and the manager's test seam, never with sleeps: a connection's {@code close()}
 * against a reader of its side channel; a connect, accept or listen against the manager's {@code close()}; a
 * listener's {@code poll} against its {@code close()} ({@link Handshakes}, the passive side it runs on).
 */
@Timeout(60)
class CmCloseRaceTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private static DeviceContext open() {
        return SoftRoceDevice.forTest("lo", () -> List.of(LO))
                .open(DeviceOptions.defaults().with(SoftRoceOptions.defaults().withUdpPort(0, true)));
    }

    /** {@return true when {@code waiter} is blocked or parked on a lock or monitor that {@code owner} holds} */
    private static boolean blockedBy(Thread waiter, Thread owner) {
        ThreadInfo t = THREADS.getThreadInfo(waiter.threadId());
        return t != null && t.getLockOwnerId() == owner.threadId();
    }

    private static void await(CountDownLatch latch, String what) throws InterruptedException {
        assertTrue(latch.await(20, TimeUnit.SECONDS), what + " within 20 s");
    }

    /**
     * A connection's {@code close()} while a thread in its {@code pollEvent} is reading the side channel: once close
     * returned, the application resets the QP and moves it to INIT for its next connection; the reader, which had
     * been held just before its read, must leave that QP alone. Before the fix, close did not wait for the reader,
     * whose read then failed on the channel close had closed and moved the reused QP to ERROR. The reader is held
     * (the manager's {@code beforeRead} seam) until either the closer has finished the reuse (without the fix) or
     * the closer waits for the reader's lock (with it).
     */
    @Test
    void aReaderOfAClosedConnectionLeavesItsReusedQpAlone() throws Exception {
        try (DeviceContext s = open(); DeviceContext c = open();
             ProtectionDomain spd = s.allocPd(); ProtectionDomain cpd = c.allocPd();
             CompletionQueue scq = s.createCq(16); CompletionQueue ccq = c.createCq(16);
             QueuePair sqp = spd.createQp(QpInitAttr.rc(scq)); QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
             Listener l = s.connectionManager().listen(new InetSocketAddress(LO, 0))) {
            CompletableFuture<Connection> accepted = CompletableFuture.supplyAsync(() -> {
                ConnectRequest r = l.poll(Duration.ofSeconds(20));
                assertNotNull(r, "no request within 20 s");
                return r.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(20));
            });
            Connection cc = c.connectionManager().connect(cqp, l.address(), ConnParam.defaults(), Duration.ofSeconds(20));
            CountDownLatch go = new CountDownLatch(1);
            try (Connection sc = accepted.get(20, TimeUnit.SECONDS)) {
                assertEquals(QpState.RTS, cqp.state());
                CountDownLatch atRead = new CountDownLatch(1);
                AtomicBoolean first = new AtomicBoolean(true);
                ((TcpConnectionManager) c.connectionManager()).beforeRead = () -> {
                    if (first.compareAndSet(true, false)) {
                        atRead.countDown();
                        try {
                            go.await(20, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                };
                AtomicReference<Event> event = new AtomicReference<>();
                Thread reader = Thread.ofPlatform().name("reader").start(
                        () -> event.set(cc.pollEvent(Duration.ofSeconds(20))));
                await(atRead, "the reader at its read");
                CountDownLatch reused = new CountDownLatch(1);
                Thread closer = Thread.ofPlatform().name("closer").start(() -> {
                    cc.close();
                    cqp.modify(new QpAttr().state(QpState.RESET));
                    cqp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(0));
                    reused.countDown();
                });
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (!reused.await(1, TimeUnit.MILLISECONDS) && !blockedBy(closer, reader)) {
                    assertTrue(System.nanoTime() < deadline, "the closer neither finished nor waited for the reader");
                }
                go.countDown();
                reader.join(20_000);
                closer.join(20_000);
                assertEquals(0, reused.getCount(), "the closer reset and reused the QP");
                assertEquals(Event.DISCONNECTED, event.get());
                assertEquals(QpState.INIT, cqp.state(), "the reused QP, after the closed connection's reader");
                assertEquals(Event.TIMEWAIT_EXIT, cc.pollEvent(Duration.ofSeconds(1)));
                assertEquals(QpState.INIT, cqp.state(), "the reused QP, after a poll of the closed connection");
                assertEquals(Event.DISCONNECTED, sc.pollEvent(Duration.ofSeconds(20)), "the server saw the close");
            } finally {
                go.countDown(); // a failed assertion leaves no reader held
                ((TcpConnectionManager) c.connectionManager()).beforeRead = null;
                cc.close();
            }
        }
    }

    /**
     * A connect in progress when its manager closes (its device context closing): the client's REQ is at the server,
     * which answers only after the client's manager closed. The connect must fail (EINVAL, the manager closed), its
     * side channel closed (the server's connection sees the departure) and its QP in ERROR. Before the fix it
     * returned an established connection that the closed manager no longer held: its socket kept until the
     * application closed a connection it had been handed after the close.
     */
    @Test
    void aConnectThatFinishesAfterTheManagersCloseLetsGoOfItsSocket() throws Exception {
        try (DeviceContext s = open(); DeviceContext c = open();
             ProtectionDomain spd = s.allocPd(); ProtectionDomain cpd = c.allocPd();
             CompletionQueue scq = s.createCq(16); CompletionQueue ccq = c.createCq(16);
             QueuePair sqp = spd.createQp(QpInitAttr.rc(scq)); QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
             Listener l = s.connectionManager().listen(new InetSocketAddress(LO, 0))) {
            TcpConnectionManager cm = (TcpConnectionManager) c.connectionManager();
            CompletableFuture<Connection> connect = CompletableFuture.supplyAsync(
                    () -> cm.connect(cqp, l.address(), ConnParam.defaults(), Duration.ofSeconds(20)));
            try {
                ConnectRequest r = l.poll(Duration.ofSeconds(20));
                assertNotNull(r, "the client's REQ within 20 s"); // the connect now waits for the REP
                cm.close();
                try (Connection sc = r.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(20))) {
                    ExecutionException e = assertThrows(ExecutionException.class, () -> connect.get(20, TimeUnit.SECONDS),
                            "a connect that finished after its manager's close");
                    RdmaException cause = assertInstanceOf(RdmaException.class, e.getCause());
                    assertEquals(RdmaException.Errno.EINVAL, cause.errno(), cause.getMessage());
                    assertTrue(cause.getMessage().contains("closed"), cause.getMessage());
                    assertEquals(QpState.ERROR, cqp.state(), "the client's QP");
                    assertEquals(Event.DISCONNECTED, sc.pollEvent(Duration.ofSeconds(20)),
                            "the server sees the client's side channel close");
                }
            } finally {
                connect.thenAccept(Connection::close); // the old code's connection, if it came
            }
        }
    }

    /**
     * An accept of a request polled before its manager closed, answered after: it must fail (EINVAL), its socket
     * closed (the client, a raw socket here, reads the REP that went out before and then the end of the stream) and
     * its QP in ERROR. Before the fix it returned a connection the closed manager no longer held, its socket open.
     */
    @Test
    void anAcceptThatFinishesAfterTheManagersCloseLetsGoOfItsSocket() throws Exception {
        try (DeviceContext s = open(); ProtectionDomain spd = s.allocPd(); CompletionQueue scq = s.createCq(16);
             QueuePair sqp = spd.createQp(QpInitAttr.rc(scq))) {
            TcpConnectionManager cm = (TcpConnectionManager) s.connectionManager();
            Listener l = cm.listen(new InetSocketAddress(LO, 0));
            try (SocketChannel client = SocketChannel.open(l.address())) {
                client.write(ByteBuffer.wrap(rawReq()));
                ConnectRequest r = l.poll(Duration.ofSeconds(20));
                assertNotNull(r, "the client's REQ within 20 s");
                cm.close();
                RdmaException e = assertThrows(RdmaException.class, () -> {
                    Connection kept = r.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(20));
                    kept.close(); // the old code's
                });
                assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
                assertTrue(e.getMessage().contains("closed"), e.getMessage());
                assertEquals(QpState.ERROR, sqp.state(), "the server's QP");
                client.socket().setSoTimeout(20_000);
                InputStream in = client.socket().getInputStream();
                assertEquals(TcpConnectionManager.MAGIC, new DataInputStream(in).readInt());
                assertEquals(TcpConnectionManager.REP, in.read());
                while (in.read() >= 0) {
                    // the rest of the REP, then the end of the stream (a SocketTimeoutException if the socket is kept)
                }
            } finally {
                l.close();
            }
        }
    }

    /** A raw client's REQ (a QP at 127.0.0.1 that does not exist: the server's QP goes to RTS all the same). */
    private static byte[] rawReq() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TcpConnectionManager.write(new DataOutputStream(bytes), TcpConnectionManager.REQ,
                new TcpConnectionManager.Hello(0x123456, 0xABCDEF, Gid.of(LO), 4791, ConnParam.defaults(), 0));
        return bytes.toByteArray();
    }

    /**
     * A listen on a manager that was closed: it must fail (EINVAL) and let go of its port (bound again at once).
     * Before the fix it returned a listener the closed manager no longer held, on its port.
     */
    @Test
    void aListenThatFinishesAfterTheManagersCloseLetsGoOfItsPort() throws Exception {
        try (DeviceContext s = open()) {
            TcpConnectionManager cm = (TcpConnectionManager) s.connectionManager();
            InetSocketAddress at;
            try (ServerSocketChannel probe = ServerSocketChannel.open()) {
                probe.bind(new InetSocketAddress(LO, 0));
                at = (InetSocketAddress) probe.getLocalAddress();
            }
            cm.close();
            Listener[] made = new Listener[1];
            try {
                RdmaException e = assertThrows(RdmaException.class, () -> made[0] = cm.listen(at));
                assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
                assertTrue(e.getMessage().contains("closed"), e.getMessage());
                try (ServerSocketChannel again = ServerSocketChannel.open()) {
                    again.bind(at); // no SO_REUSEADDR: fails while a listener holds the port
                }
            } finally {
                if (made[0] != null) {
                    made[0].close();
                }
            }
        }
    }

    /**
     * {@code Handshakes.close()} while a {@code poll} is accepting: the listener's first accepted connection is
     * being set up (the protocol's {@code headerLength}, called between two accepts of one round), when another thread
     * closes the listener and gets as far as the monitor the poll holds, its listening socket already closed. The poll
     * must return null, as a poll of a closed listener does; before the fix its next accept failed on the closed
     * socket and the poll threw EIO. Then the accepted connection is closed (the client reads the end of the stream)
     * and nothing listens any more.
     */
    @Test
    void aPollRacingItsListenersCloseReturnsNull() throws Exception {
        AtomicReference<Handshakes<Object>> listener = new AtomicReference<>();
        AtomicReference<Thread> closer = new AtomicReference<>();
        Handshakes.Protocol<Object> protocol = new Handshakes.Protocol<>() {
            @Override
            public int headerLength() {
                if (closer.get() == null) { // the poll's thread, holding the listener's monitor, between two accepts
                    Thread poller = Thread.currentThread();
                    Thread t = Thread.ofPlatform().name("closer").start(() -> listener.get().close());
                    closer.set(t);
                    long deadline = System.nanoTime() + 20_000_000_000L;
                    try {
                        while (t.isAlive() && !blockedBy(t, poller)) { // past the listening socket's close
                            assertTrue(System.nanoTime() < deadline, "the closer never reached the poll's monitor");
                            t.join(1);
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return 7;
            }

            @Override
            public int messageLength(byte[] header) {
                return 7;
            }

            @Override
            public Object request(SocketChannel ch, byte[] message) {
                return message;
            }

            @Override
            public void discard(Object request) {
                // nothing to let go of
            }
        };
        Handshakes<Object> h = new Handshakes<>(new InetSocketAddress(LO, 0), protocol,
                new Handshakes.Limits(Duration.ofSeconds(20), 8), new Handshakes.Stats());
        listener.set(h);
        try (SocketChannel client = SocketChannel.open(h.address())) {
            Object polled = assertDoesNotThrow(() -> h.poll(Duration.ofSeconds(20)), "a poll racing the listener's close");
            assertNull(polled);
            assertNotNull(closer.get(), "the poll accepted the client");
            closer.get().join(20_000);
            assertFalse(closer.get().isAlive(), "close() returned");
            client.socket().setSoTimeout(20_000);
            assertEquals(-1, client.socket().getInputStream().read(), "the accepted connection was closed");
            assertThrows(IOException.class, () -> SocketChannel.open(h.address()).close(), "nothing listens");
        } finally {
            h.close();
        }
    }
}

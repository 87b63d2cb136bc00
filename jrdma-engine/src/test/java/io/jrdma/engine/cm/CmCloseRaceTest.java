package io.jrdma.engine.cm;

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
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP connection manager's races on close (found in review), each interleaving forced with latches and the
 * manager's test seam, never with sleeps: a connection's {@code close()} against a reader of its side channel.
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
}

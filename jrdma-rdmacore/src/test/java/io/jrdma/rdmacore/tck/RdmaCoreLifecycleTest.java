package io.jrdma.rdmacore.tck;

import io.jrdma.rdmacore.RdmaCoreDevice;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqInitAttr;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What closing an rdma-core context and its objects lets go of, and when, on the device {@link RdmaCoreFixture} names
 * (skipped without one; interop/rdmacore-tck.sh runs it in the interop guests with
 * {@code TCK=io.jrdma.rdmacore.tck.RdmaCoreLifecycleTest}). The races of a close with an async event wait and with a post
 * or a poll run last: before their fixes they could crash the JVM (a read of a freed ibv_context, a poll on a freed,
 * unmapped CQ ring), which the other tests' results must not depend on.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RdmaCoreLifecycleTest {
    /** How long a close, or the end of a wait it ends, may take here (an emulated guest is slow); the waits last 60 s. */
    private static final long BOUND_SECONDS = 10;
    private static final Duration LONG_WAIT = Duration.ofSeconds(60);

    /**
     * On RoCE the context's connection manager (jrdma's TCP exchange) is closed with the context, as the soft
     * providers close theirs: its listener's port is free again (found in review: the listener stayed open).
     */
    @Test
    @Order(10)
    void closingTheContextClosesItsConnectionManager() throws Exception {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        Assumptions.assumeTrue(device.transport() == Transport.ROCE_V2,
                "skipped: on iWARP the connection manager is rdma_cm, closed with the context already");
        InetSocketAddress at = new InetSocketAddress(RdmaCoreFixture.INSTANCE.address(), 0);
        DeviceContext ctx = device.open();
        ConnectionManager.Listener listener = ctx.connectionManager().listen(at);
        InetSocketAddress bound = listener.address();
        ctx.close();
        assertDoesNotThrow(() -> {
            try (ServerSocket s = new ServerSocket()) {
                s.bind(bound);
            }
        }, "the listener's port " + bound + " is free once the context is closed");
    }

    /**
     * A close of a completion channel while a thread awaits it ends the await at once (EINVAL, the channel closed),
     * where the close waited for the await's whole timeout (both held the channel's lock, the await inside its native
     * poll(2)); an interrupt ends an await too (EINTR), where it did not reach the native wait (found in review).
     */
    @Test
    @Order(1)
    void closingAChannelEndsAnAwaitInProgressAndSoDoesAnInterrupt() throws Exception {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        try (DeviceContext ctx = device.open()) {
            CompletionChannel ch = ctx.createCompletionChannel();
            AtomicReference<Object> interrupted = new AtomicReference<>();
            Thread t = waiter("await", () -> ch.await(LONG_WAIT), interrupted);
            t.interrupt();
            joined(t, "an interrupted await");
            RdmaException e = assertInstanceOf(RdmaException.class, interrupted.get(), "the interrupted await");
            assertEquals(RdmaException.Errno.EINTR, e.errno(), e.getMessage());

            AtomicReference<Object> result = new AtomicReference<>();
            Thread w = waiter("await", () -> ch.await(LONG_WAIT), result);
            closeWithin(ch::close, "the channel's close with an await in progress");
            joined(w, "the await of a channel closed meanwhile");
            e = assertInstanceOf(RdmaException.class, result.get(), "the await of a channel closed meanwhile");
            assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
        }
    }

    /**
     * A close of the context while a thread waits for an async event wakes the thread (EINVAL, the context closed) and
     * frees the context only once it has left, where the close failed (IllegalStateException: the wait held the event
     * memory in its poll(2)) after the device was closed, and the wait then read the freed ibv_context (found in
     * review).
     */
    @Test
    @Order(90)
    void closingTheContextEndsAnAsyncEventWait() throws Exception {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        DeviceContext ctx = device.open();
        AtomicReference<Object> result = new AtomicReference<>();
        Thread w = waiter("awaitAsyncEvent", () -> ctx.awaitAsyncEvent(new AsyncEvent(), LONG_WAIT), result);
        closeWithin(ctx::close, "the context's close with an async event wait in progress");
        joined(w, "the async event wait of a context closed meanwhile");
        RdmaException e = assertInstanceOf(RdmaException.class, result.get(), "the wait of a context closed meanwhile");
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
    }

    /**
     * A close of the context while a thread polls an rdma_cm listener ends the poll (EINVAL) and destroys the
     * listener's id (its port is free for a new listener at once), where the close gave up on the listener the poll
     * held and left its id, and any request that came, to nobody (found in review).
     */
    @Test
    @Order(2)
    void closingTheContextEndsAListenersPollAndFreesItsPort() throws Exception {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        InetSocketAddress at = new InetSocketAddress(RdmaCoreFixture.INSTANCE.address(), 0);
        DeviceContext ctx = device.open();
        ConnectionManager.Listener listener = ctx.rdmaCm().listen(at);
        InetSocketAddress bound = listener.address();
        AtomicReference<Object> result = new AtomicReference<>();
        Thread w = waiter("poll", () -> listener.poll(LONG_WAIT), result);
        closeWithin(ctx::close, "the context's close with a listener's poll in progress");
        joined(w, "the poll of a listener whose context closed meanwhile");
        RdmaException e = assertInstanceOf(RdmaException.class, result.get(), "the poll of a closed listener");
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
        try (DeviceContext again = device.open()) {
            ConnectionManager.Listener l2 = assertDoesNotThrow(() -> again.rdmaCm().listen(bound),
                    "the closed context's listener on " + bound + " is gone: its port is free");
            l2.close();
        }
    }

    /**
     * An interrupt of a thread that connects through rdma_cm ends the connect (EINTR), and so does a close of its
     * context (EINVAL), where the connect waited for the server's answer in a bare poll(2) that neither reached: the
     * close gave up on the id after 2 s and left it, the connect went on until its timeout (found in review). The
     * server takes the request and never answers it, so the connect is waiting for the answer when it is ended.
     */
    @Test
    @Order(3)
    void anInterruptOrTheContextsCloseEndsAConnectInProgress() throws Exception {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        Assumptions.assumeTrue(device.transport() == Transport.ROCE_V2, "skipped on iWARP: on siw0 an interrupted"
                + " connect did not always end within the bound (its rdma_destroy_id waits for siw's MPA exchange, not"
                + " yet examined), and closing the QP before the context may end the connect by itself");
        InetSocketAddress at = new InetSocketAddress(RdmaCoreFixture.INSTANCE.address(), 0);
        try (DeviceContext server = device.open()) {
            ConnectionManager.Listener listener = server.rdmaCm().listen(at);
            DeviceContext client = device.open();
            try {
                RdmaException e = unansweredConnect(client, listener, false, Thread::interrupt, "an interrupt");
                assertEquals(RdmaException.Errno.EINTR, e.errno(), e.getMessage());
                e = unansweredConnect(client, listener, true, t -> {
                    try {
                        closeWithin(client::close, "the context's close with a connect in progress");
                    } catch (InterruptedException x) {
                        throw new IllegalStateException(x);
                    }
                }, "the context's close");
                assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
            } catch (Throwable t) {
                try {
                    client.close();
                } catch (RdmaException x) {
                    t.addSuppressed(x); // the objects of a failed case are still open: the failure is what counts
                }
                throw t;
            }
            client.close();
        }
    }

    /**
     * queryDevice declares memory windows exactly when allocMw makes them, and without them allocMw is EOPNOTSUPP
     * naming itself and the device, before any native call (found in review: libibverbs' stub in every empty op slot
     * made the provider take any device for one with windows; the context now probes alloc_mw once).
     */
    @Test
    @Order(4)
    void queryDeviceDeclaresWindowsExactlyWhenAllocMwMakesThem() {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        try (DeviceContext ctx = device.open()) {
            io.jrdma.verbs.DeviceAttr a = ctx.queryDevice();
            ProtectionDomain pd = ctx.allocPd();
            for (io.jrdma.verbs.MwType type : io.jrdma.verbs.MwType.values()) {
                if (a.supportsMw(type)) {
                    assertDoesNotThrow(() -> pd.allocMw(type).close(), "queryDevice declares " + type);
                } else if (!a.supportsMw(io.jrdma.verbs.MwType.TYPE_1) && !a.supportsMw(io.jrdma.verbs.MwType.TYPE_2)) {
                    RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(RdmaException.class,
                            () -> pd.allocMw(type), "queryDevice declares no windows");
                    assertEquals(RdmaException.Errno.EOPNOTSUPP, e.errno(), e.getMessage());
                    assertTrue(e.getMessage().contains("allocMw") && e.getMessage().contains(device.name() + " has no"
                            + " memory windows"), e.getMessage());
                }
            }
            pd.close();
        }
    }

    /** Starts a connect the listener's side never answers, ends it with {@code end}; {@return what it threw} */
    private static RdmaException unansweredConnect(DeviceContext client, ConnectionManager.Listener listener,
                                                   boolean objectsFirst, java.util.function.Consumer<Thread> end,
                                                   String how)
            throws Exception {
        ProtectionDomain pd = client.allocPd();
        CompletionQueue cq = client.createCq(16);
        QueuePair qp = pd.createQp(QpInitAttr.rc(cq));
        AtomicReference<Object> result = new AtomicReference<>();
        Thread w = waiter("connect", () -> client.rdmaCm().connect(qp, listener.address(),
                io.jrdma.verbs.ConnParam.defaults(), LONG_WAIT), result);
        ConnectionManager.ConnectRequest r = listener.poll(Duration.ofSeconds(BOUND_SECONDS));
        assertTrue(r != null, "the connect's request reached the listener: " + result.get());
        assertTrue(w.isAlive(), "the connect waits for the answer: " + result.get());
        // a context closes once its objects are closed (EBUSY before): the connect waits on its rdma_cm id, not on them
        if (objectsFirst) {
            qp.close();
            cq.close();
            pd.close();
            assertTrue(w.isAlive(), "the connect still waits for the answer: " + result.get());
        }
        end.accept(w);
        joined(w, "a connect ended by " + how);
        if (!(result.get() instanceof RdmaException e)) {
            return fail("a connect ended by " + how + " returned " + result.get());
        }
        try {
            r.reject(new byte[0]);
        } catch (RdmaException x) {
            // the client's id is gone already: nothing to answer
        }
        if (!objectsFirst) {
            qp.close();
            cq.close();
            pd.close();
        }
        return e;
    }

    /**
     * A QP on an SRQ has no receive queue: the receive SGEs its attributes ask for are ignored (as QpInitAttr says),
     * where the provider laid them out after ibv_create_qp, and a failure there (2^31 - 1 of them: OutOfMemoryError)
     * left the native QP created, its CQ, SRQ and PD busy for good (found in review: nothing that can fail runs after
     * the create any more).
     */
    @Test
    @Order(3)
    void aQpOnAnSrqIgnoresItsReceiveSgesAndLeavesNothingBehind() {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        try (DeviceContext ctx = device.open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(16, null);
            SharedReceiveQueue srq = pd.createSrq(new SrqInitAttr(16, 1, 0));
            Throwable failed = null;
            try {
                QueuePair qp = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 16, 0, 1, Integer.MAX_VALUE, 0, false, srq));
                qp.close();
            } catch (Throwable t) {
                failed = t;
            }
            assertDoesNotThrow(srq::close, "the SRQ is free once the QP is gone");
            assertDoesNotThrow(cq::close, "the CQ is free once the QP is gone");
            assertDoesNotThrow(pd::close, "the PD is free once the QP is gone");
            if (failed != null) {
                fail("createQp of a QP on an SRQ failed; it ignores maxRecvSge", failed);
            }
        }
    }

    /**
     * On iWARP, a request posted to a QP in ERROR, which this provider completes WR_FLUSH_ERR itself (siw would keep it
     * for good), fires its armed CQ's completion channel, as the device fires it for its own completions, where the
     * await waited out its timeout (found in review). Skipped on RoCE, where the device flushes such requests.
     */
    @Test
    @Order(4)
    void anOwedFlushFiresTheArmedCqsChannel() {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        Assumptions.assumeTrue(device.transport() == Transport.IWARP, "skipped: only iWARP QPs owe flushes");
        try (DeviceContext ctx = device.open()) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionChannel ch = ctx.createCompletionChannel();
            CompletionQueue cq = ctx.createCq(16, ch);
            QueuePair qp = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 16, 16, 1, 1, 0, false));
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(0));
            qp.modify(new QpAttr().state(QpState.ERROR));
            WorkCompletion wc = new WorkCompletion();
            while (cq.poll(wc) > 0) {
                // the flushes of the move to ERROR (none: nothing was posted)
            }
            cq.requestNotify(false);
            assertEquals(0, qp.postSend(new SendWorkRequest().wrId(77).opcode(WrOpcode.SEND).numSge(0)),
                    "a send posted to a QP in ERROR is taken (and flushed)");
            assertSame(cq, ch.await(Duration.ofSeconds(BOUND_SECONDS)), "the armed CQ's channel fires for the flush");
            assertEquals(1, cq.poll(wc));
            assertEquals(77, wc.wrId());
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status());
            qp.close();
            cq.close();
            ch.close();
            pd.close();
        }
    }

    /**
     * A close of a CQ, a QP or an SRQ while another thread polls or posts to it in a loop: the close waits for the call
     * inside the provider to leave, and every call after it fails as on a closed object (EINVAL), where a call that
     * had checked the object's flag ran on in the provider on the destroyed object (rxe's destroy unmaps the queues
     * and frees the object: a crash of the JVM, or the closed arena's IllegalStateException; found in review). Rounds
     * of each, the other thread busy in its loop when the close comes (a receive posted in INIT: rxe takes it, siw
     * answers EINVAL from its provider; either way the call reaches the provider).
     */
    @Test
    @Order(100)
    void aCloseRacingAPollOrAPostOnAnotherThreadFreesNothingTheyUse() throws Exception {
        RdmaCoreDevice device = RdmaCoreFixture.requireDevice();
        try (DeviceContext ctx = device.open()) {
            ProtectionDomain pd = ctx.allocPd();
            WorkCompletion wc = new WorkCompletion();
            for (int round = 0; round < 20; round++) {
                CompletionQueue cq = ctx.createCq(16, null);
                race("a CQ's poll, round " + round, () -> {
                    try {
                        cq.poll(wc);
                        return 0;
                    } catch (RdmaException e) {
                        if (e.errno() != RdmaException.Errno.EINVAL) {
                            throw e;
                        }
                        return 22; // the CQ is closed, as the posts' EINVAL
                    }
                }, cq::close);
            }
            CompletionQueue cq = ctx.createCq(64, null);
            RecvWorkRequest recv = new RecvWorkRequest().wrId(1).numSge(0);
            for (int round = 0; round < 10; round++) {
                QueuePair qp = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 16, 16, 1, 1, 0, false));
                qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(0));
                race("a QP's receive post, round " + round, () -> qp.postRecv(recv), qp::close);
            }
            for (int round = 0; round < 10; round++) {
                SharedReceiveQueue srq = pd.createSrq(new SrqInitAttr(16, 1, 0));
                race("an SRQ's post, round " + round, () -> srq.postRecv(recv), srq::close);
            }
            cq.close();
            pd.close();
        }
    }

    /**
     * Runs {@code call} in a loop on another thread (what it answers does not matter: siw refuses a receive posted in
     * INIT with EINVAL), closes the object once the loop has made a thousand calls, ends the loop once the close has
     * returned, and checks that no call threw and that a call after the close answers EINVAL (22: closed).
     */
    private static void race(String what, IntSupplier call, Runnable close) throws Exception {
        AtomicLong calls = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
        Thread t = Thread.ofPlatform().name("racing " + what).start(() -> {
            try {
                while (!closed.get()) {
                    call.getAsInt();
                    calls.incrementAndGet();
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (calls.get() < 1000 && t.isAlive()) {
            assertTrue(System.nanoTime() < deadline, what + ": the loop made too few calls");
            Thread.onSpinWait();
        }
        assertTrue(t.isAlive(), what + ": the loop ended before the close: " + failure.get());
        close.run();
        closed.set(true);
        joined(t, what + ": the loop after the close");
        if (failure.get() != null) {
            fail(what + ": a call racing the close threw", failure.get());
        }
        assertEquals(22, call.getAsInt(), what + ": a call after the close answers EINVAL");
    }

    /** Starts a thread that calls {@code wait} and keeps what it returned or threw; returns once it is in poll(2). */
    private static Thread waiter(String what, Callable<?> wait, AtomicReference<Object> result) {
        Thread t = Thread.ofPlatform().name("waiting in " + what).start(() -> {
            try {
                result.set(wait.call());
            } catch (Throwable e) {
                result.set(e);
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
        while (!inPoll(t)) {
            assertTrue(t.isAlive(), what + " ended before it waited: " + result.get());
            assertTrue(System.nanoTime() < deadline, what + " did not reach its poll(2)");
            Thread.onSpinWait();
        }
        return t;
    }

    /** {@return true when {@code t} is in the provider's native poll(2) (its stack has the poll's downcall)} */
    private static boolean inPoll(Thread t) {
        for (StackTraceElement f : t.getStackTrace()) {
            String c = f.getClassName();
            if ((c.endsWith(".Libc") && f.getMethodName().equals("poll"))
                    || (c.endsWith(".IbvVerbs") && f.getMethodName().equals("pollIn"))) {
                return true;
            }
        }
        return false;
    }

    /** Runs {@code close} on another thread and fails unless it returns, without throwing, within the bound. */
    private static void closeWithin(Runnable close, String what) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name(what).start(() -> {
            try {
                close.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        joined(t, what);
        if (failure.get() != null) {
            fail(what + " threw", failure.get());
        }
    }

    private static void joined(Thread t, String what) throws InterruptedException {
        t.join(TimeUnit.SECONDS.toMillis(BOUND_SECONDS));
        assertFalse(t.isAlive(), what + " did not end within " + BOUND_SECONDS + " s (the wait lasts 60 s)");
    }
}

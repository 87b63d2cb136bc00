package io.jrdma.engine.core;

import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ThreadingMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An INVOKER context's control operations (a QP's modify or destroy, a region's deregistration...) never run while
 * another thread drives its engine (inside a duty cycle or a post): a shared-memory QP's reset unmaps the peer it
 * lets go, which a duty cycle on another thread may be reading (before, the control ran at once, and the reader
 * died with SIGSEGV). The thread that drives runs its own control operations at once.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class InvokerControlTest {
    private static Context open() {
        return new Context(new TestDevice("ctl0"), c -> { }, DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER),
                new TransportContractTest.NoLink(), NanoClock.SYSTEM, Mtu.MTU_1024, TransportContractTest.LoopTransport::new);
    }

    @Test
    void aControlOperationWaitsForTheDriverAndRunsInItsNextDutyCycle() throws Exception {
        Context ctx = open();
        try {
            assertTrue(ctx.engine.tryDrive(), "this thread drives, as one inside a duty cycle");
            AtomicBoolean ran = new AtomicBoolean();
            CompletableFuture<Void> f = CompletableFuture.runAsync(() -> ctx.control(() -> ran.set(true)));
            assertThrows(TimeoutException.class, () -> f.get(200, TimeUnit.MILLISECONDS), "it waits for the driver");
            assertFalse(ran.get());
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!f.isDone() && System.nanoTime() < deadline) {
                ctx.engine.doWork(); // the driver's next duty cycle runs what was queued
            }
            ctx.engine.endDrive();
            f.get(10, TimeUnit.SECONDS);
            assertTrue(ran.get());
        } finally {
            ctx.close();
        }
    }

    @Test
    void aWaitingControlOperationTakesTheEngineWhenItIsLetGo() throws Exception {
        Context ctx = open();
        try {
            assertTrue(ctx.engine.tryDrive());
            AtomicBoolean ran = new AtomicBoolean();
            CompletableFuture<Void> f = CompletableFuture.runAsync(() -> ctx.control(() -> ran.set(true)));
            assertThrows(TimeoutException.class, () -> f.get(200, TimeUnit.MILLISECONDS), "it waits for the driver");
            ctx.engine.endDrive(); // a post's end: no duty cycle
            f.get(10, TimeUnit.SECONDS);
            assertTrue(ran.get());
            assertTrue(ctx.engine.tryDrive(), "the waiter let the engine go after its run");
            ctx.engine.endDrive();
        } finally {
            ctx.close();
        }
    }

    @Test
    void theDriverRunsItsOwnControlOperationAtOnce() {
        Context ctx = open();
        try {
            assertTrue(ctx.engine.tryDrive());
            AtomicBoolean ran = new AtomicBoolean();
            ctx.control(() -> ran.set(true));
            assertTrue(ran.get(), "inline, not queued for a duty cycle of its own");
            ctx.engine.endDrive();
        } finally {
            ctx.close();
        }
    }

    @Test
    void closeWaitsForTheDriverThenKeepsTheEngine() throws Exception {
        Context ctx = open();
        assertTrue(ctx.engine.tryDrive());
        CompletableFuture<Void> f = CompletableFuture.runAsync(ctx::close);
        assertThrows(TimeoutException.class, () -> f.get(200, TimeUnit.MILLISECONDS), "close waits for the driver");
        ctx.engine.endDrive();
        f.get(10, TimeUnit.SECONDS);
        assertFalse(ctx.engine.tryDrive(), "the closed context's engine stays claimed: a late poll does nothing");
    }

    /**
     * A DEDICATED context closed by an interrupted thread (an executor's worker after {@code shutdownNow}) waits for
     * its engine thread to end before its transport lets its resources go, and keeps the interrupt (before, the join
     * threw at once and the transport was closed under the running engine).
     */
    @Test
    void anInterruptedCloseWaitsForTheEngineThreadAndKeepsTheInterrupt() {
        Context ctx = new Context(new TestDevice("ctl1"), c -> { }, DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED),
                new TransportContractTest.NoLink(), NanoClock.SYSTEM, Mtu.MTU_1024, TransportContractTest.LoopTransport::new);
        Thread engineThread = ctx.engine.thread;
        assertTrue(engineThread != null && engineThread.isAlive(), "a DEDICATED context runs its engine thread");
        TransportContractTest.LoopTransport transport = (TransportContractTest.LoopTransport) ctx.engine.transport;
        transport.stallNanos = 300_000_000L; // the engine inside a long duty cycle when close comes
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!transport.stalling) {
            assertTrue(System.nanoTime() < deadline, "the engine's duty cycle did not begin within 10 s");
            Thread.onSpinWait();
        }
        Thread.currentThread().interrupt();
        ctx.close();
        assertTrue(Thread.interrupted(), "the interrupt is kept");
        assertTrue(transport.closed);
        assertFalse(transport.engineRanAtClose, "the engine thread ended before the transport was closed");
    }
}

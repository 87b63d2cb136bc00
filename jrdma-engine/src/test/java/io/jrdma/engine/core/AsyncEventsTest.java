package io.jrdma.engine.core;

import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ThreadingMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The context's asynchronous events that need a device whose interface can go down: PORT_ERR and
 * PORT_ACTIVE as the interface changes, once per change; and a wait interrupted.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AsyncEventsTest {
    private static Context open(TestDevice dev) {
        return new Context(dev, c -> { }, DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER),
                new TransportContractTest.NoLink(), NanoClock.SYSTEM, Mtu.MTU_1024, TransportContractTest.LoopTransport::new);
    }

    @Test
    void theInterfaceGoingDownAndUpRaisesPortErrThenPortActiveOnce() {
        TestDevice dev = new TestDevice("switched0");
        Context ctx = open(dev);
        try {
            AsyncEvent e = new AsyncEvent();
            assertFalse(ctx.pollAsyncEvent(e), "no event while the interface stays up: " + e);
            dev.up = false;
            assertTrue(ctx.awaitAsyncEvent(e, Duration.ofSeconds(5)), "the interface is asked every 10 ms");
            assertEquals(AsyncEvent.Type.PORT_ERR, e.type());
            assertEquals(1, e.portNum());
            assertFalse(ctx.awaitAsyncEvent(e, Duration.ofMillis(30)), "one event per change");
            dev.up = true;
            assertTrue(ctx.awaitAsyncEvent(e, Duration.ofSeconds(5)));
            assertEquals(AsyncEvent.Type.PORT_ACTIVE, e.type());
            assertFalse(ctx.awaitAsyncEvent(e, Duration.ofMillis(20)));
            assertTrue(ctx.queryDevice().has(io.jrdma.verbs.DeviceCap.PORT_ACTIVE_EVENT), "declared");
        } finally {
            ctx.close();
        }
    }

    @Test
    void anInterruptedWaitThrowsEintrAndKeepsTheInterrupt() {
        Context ctx = open(new TestDevice("switched0"));
        try {
            Thread.currentThread().interrupt();
            RdmaException e = assertThrows(RdmaException.class,
                    () -> ctx.awaitAsyncEvent(new AsyncEvent(), Duration.ofSeconds(10)));
            assertEquals(RdmaException.Errno.EINTR, e.errno(), e.getMessage());
            assertTrue(Thread.interrupted(), "the interrupt status is set again");
        } finally {
            ctx.close();
        }
    }
}

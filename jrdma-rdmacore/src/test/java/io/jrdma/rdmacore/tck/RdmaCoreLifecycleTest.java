package io.jrdma.rdmacore.tck;

import io.jrdma.rdmacore.RdmaCoreDevice;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Transport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

/**
 * What closing an rdma-core context lets go of, on the device {@link RdmaCoreFixture} names (skipped without one;
 * interop/rdmacore-tck.sh runs it in the interop guests with {@code TCK=io.jrdma.rdmacore.tck.RdmaCoreLifecycleTest}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RdmaCoreLifecycleTest {
    /**
     * On RoCE the context's connection manager (jrdma's TCP exchange) is closed with the context, as the soft
     * providers close theirs: its listener's port is free again (found in review: the listener stayed open).
     */
    @Test
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
}

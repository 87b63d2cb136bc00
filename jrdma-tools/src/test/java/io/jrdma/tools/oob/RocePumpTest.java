package io.jrdma.tools.oob;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The side channel's pump spins (runs the engine every 200 µs) only where a peer's requests need this side's engine
 * while it waits: soft-RoCE in INVOKER mode; shared memory in INVOKER mode turns its engine at each wake-up of the
 * blocking wait instead ({@code PingpongShmTest} runs whole INVOKER exchanges over the side channel through it), and
 * a DEDICATED engine runs by itself.
 */
class RocePumpTest {
    private static DeviceContext open(Device d, ThreadingMode mode) {
        return d.open(DeviceOptions.defaults().withThreadingMode(mode));
    }

    @Test
    void onlyAnEngineThatPeersNeedSpinsTheWait() {
        Device roce = Rdma.devices().stream().filter(d -> d.transport() == Transport.ROCE_V2 && "lo".equals(d.netdev()))
                .findFirst().orElseThrow();
        Device shm = Rdma.device("shm0");
        try (DeviceContext ctx = open(roce, ThreadingMode.INVOKER)) {
            assertTrue(Roce.pump(ctx).spins(), "soft-RoCE, INVOKER: its ACKs and retransmissions need the engine");
        }
        try (DeviceContext ctx = open(shm, ThreadingMode.INVOKER)) {
            assertFalse(Roce.pump(ctx).spins(), "shm0, INVOKER: a peer's WRITE lands with no engine here");
        }
        try (DeviceContext ctx = open(shm, ThreadingMode.DEDICATED)) {
            assertFalse(Roce.pump(ctx).spins(), "shm0, DEDICATED: the engine runs by itself");
        }
    }
}

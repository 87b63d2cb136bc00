package io.jrdma.tools.oob;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tools' warm-up really moves data (its failures are swallowed, so only this would notice), once per process. */
class EngineWarmupTest {
    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void runsTraffic() {
        // each round is a WRITE, a READ, a SEND with immediate and a fetch-and-add, all completed successfully
        assertTrue(EngineWarmup.loopbackTraffic(100_000_000L) > 0, "the warm-up completed no round: it ran no traffic");
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void runsOncePerProcess() {
        EngineWarmup.run(50_000_000L); // the first call here, or another test's before it
        assertEquals(0, EngineWarmup.run(50_000_000L), "a second call in the same process runs nothing");
    }

    /** Only jrdma's own RoCE engine needs it: not an rdma-core device (the kernel answers there), not iWARP. */
    @Test
    void warmsOnlyJrdmasRoceEngine() {
        io.jrdma.verbs.Device lo = io.jrdma.verbs.Rdma.devices().stream()
                .filter(d -> d.transport() == io.jrdma.verbs.Transport.ROCE_V2 && "lo".equals(d.netdev()))
                .findFirst().orElseThrow();
        assertTrue(EngineWarmup.warms(lo), lo.name());
        assertTrue(EngineWarmup.warms(lo.name()), lo.name());
        io.jrdma.verbs.Rdma.devices().stream().filter(d -> d.transport() == io.jrdma.verbs.Transport.IWARP)
                .forEach(d -> assertFalse(EngineWarmup.warms(d), d.name()));
        assertFalse(EngineWarmup.warms(new Named("rdmacore", io.jrdma.verbs.Transport.ROCE_V2)), "an rdma-core device");
        assertTrue(EngineWarmup.warms((String) null), "no device named: the tool picks one");
        assertTrue(EngineWarmup.warms("no_such_device"), "an unknown name: reported when opened");
    }

    /** A device of {@code provider}: only its provider and transport are read. */
    private record Named(String provider, io.jrdma.verbs.Transport transport) implements io.jrdma.verbs.Device {
        @Override
        public String name() {
            return "rxe0";
        }

        @Override
        public String netdev() {
            return "eth0";
        }

        @Override
        public java.util.List<io.jrdma.verbs.Gid> gids() {
            return java.util.List.of();
        }

        @Override
        public boolean isUp() {
            return true;
        }

        @Override
        public io.jrdma.verbs.DeviceContext open(io.jrdma.verbs.DeviceOptions options) {
            throw new UnsupportedOperationException("not opened in this test");
        }
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.Idler;
import io.jrdma.verbs.IdleStrategy;
import io.jrdma.verbs.Mtu;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** BACKOFF idling goes by idle time, so a receiver does not nap through a stream's short gaps. */
class IdlerTest {
    @Test
    void backoffSpinsThenYieldsThenParksLongerAndLonger() {
        try (Pair p = new Pair(Mtu.MTU_1024, 4096)) {
            Idler idler = new Idler(IdleStrategy.BACKOFF, p.a.ctx.engine);
            long t = 1_000_000_000L;
            assertEquals(Idler.SPIN, idler.idle(0, t));
            assertEquals(Idler.SPIN, idler.idle(0, t + 19_000), "still spinning 19 µs into a gap");
            assertEquals(Idler.YIELD, idler.idle(0, t + 21_000));
            assertEquals(Idler.YIELD, idler.idle(0, t + 499_000), "a gap under 0.5 ms is bridged without a park");
            assertEquals(1_000, idler.idle(0, t + 500_000));
            assertEquals(2_000, idler.idle(0, t + 501_000));
            assertEquals(4_000, idler.idle(0, t + 503_000));
            long park = 0;
            for (int i = 0; i < 20; i++) {
                park = idler.idle(0, t + 600_000);
            }
            assertEquals(1_000_000, park, "parks double up to 1 ms");
            assertEquals(Idler.SPIN, idler.idle(1, t + 700_000), "work resets it");
            assertEquals(Idler.SPIN, idler.idle(0, t + 700_000));
            assertEquals(Idler.YIELD, idler.idle(0, t + 730_000), "and idle time counts from the next idle cycle");
        }
    }
}

package io.jrdma.tools.oob;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}

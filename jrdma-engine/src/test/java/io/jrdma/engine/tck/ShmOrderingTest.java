package io.jrdma.engine.tck;

import io.jrdma.tck.OrderingTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link OrderingTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmOrderingTest extends OrderingTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

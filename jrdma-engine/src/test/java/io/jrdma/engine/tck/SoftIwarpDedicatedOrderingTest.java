package io.jrdma.engine.tck;

import io.jrdma.tck.OrderingTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link OrderingTck} on soft-iWARP over loopback (both sides dedicated). */
class SoftIwarpDedicatedOrderingTest extends OrderingTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.BOTH_DEDICATED;
    }
}

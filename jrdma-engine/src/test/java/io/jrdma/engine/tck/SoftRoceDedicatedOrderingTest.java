package io.jrdma.engine.tck;

import io.jrdma.tck.OrderingTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link OrderingTck} on soft-RoCE over loopback (both sides dedicated). */
class SoftRoceDedicatedOrderingTest extends OrderingTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.BOTH_DEDICATED;
    }
}

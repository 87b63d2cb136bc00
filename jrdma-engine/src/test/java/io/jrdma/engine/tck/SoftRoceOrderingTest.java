package io.jrdma.engine.tck;

import io.jrdma.tck.OrderingTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link OrderingTck} on soft-RoCE over loopback (dedicated server, INVOKER client). */
class SoftRoceOrderingTest extends OrderingTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

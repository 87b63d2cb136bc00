package io.jrdma.rdmacore.tck;

import io.jrdma.tck.OrderingTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link OrderingTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreOrderingTest extends OrderingTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

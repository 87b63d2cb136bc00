package io.jrdma.rdmacore.tck;

import io.jrdma.tck.UdTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UdTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreUdTest extends UdTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

package io.jrdma.rdmacore.tck;

import io.jrdma.tck.PortTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link PortTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCorePortTest extends PortTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

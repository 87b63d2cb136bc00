package io.jrdma.rdmacore.tck;

import io.jrdma.tck.ConnectionTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ConnectionTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreConnectionTest extends ConnectionTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

package io.jrdma.rdmacore.tck;

import io.jrdma.tck.SrqTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link SrqTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreSrqTest extends SrqTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

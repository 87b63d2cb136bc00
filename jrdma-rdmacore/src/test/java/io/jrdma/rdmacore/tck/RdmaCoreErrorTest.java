package io.jrdma.rdmacore.tck;

import io.jrdma.tck.ErrorTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ErrorTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreErrorTest extends ErrorTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

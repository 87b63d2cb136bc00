package io.jrdma.rdmacore.tck;

import io.jrdma.tck.UcTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UcTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreUcTest extends UcTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

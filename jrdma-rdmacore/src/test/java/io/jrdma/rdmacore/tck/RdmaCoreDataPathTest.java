package io.jrdma.rdmacore.tck;

import io.jrdma.tck.DataPathTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link DataPathTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreDataPathTest extends DataPathTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

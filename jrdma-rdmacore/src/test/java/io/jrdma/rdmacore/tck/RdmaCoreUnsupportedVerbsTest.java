package io.jrdma.rdmacore.tck;

import io.jrdma.tck.UnsupportedVerbsTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UnsupportedVerbsTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreUnsupportedVerbsTest extends UnsupportedVerbsTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

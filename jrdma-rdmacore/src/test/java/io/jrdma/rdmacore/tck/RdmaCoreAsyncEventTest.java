package io.jrdma.rdmacore.tck;

import io.jrdma.tck.AsyncEventTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link AsyncEventTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreAsyncEventTest extends AsyncEventTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

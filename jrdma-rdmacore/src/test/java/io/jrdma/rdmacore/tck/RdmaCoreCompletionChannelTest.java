package io.jrdma.rdmacore.tck;

import io.jrdma.tck.CompletionChannelTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link CompletionChannelTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}; skipped without one. */
class RdmaCoreCompletionChannelTest extends CompletionChannelTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

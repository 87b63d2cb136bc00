package io.jrdma.engine.tck;

import io.jrdma.tck.CompletionChannelTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link CompletionChannelTck} on the shared-memory provider, shm0 (both sides dedicated). */
class ShmDedicatedCompletionChannelTest extends CompletionChannelTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.BOTH_DEDICATED;
    }
}

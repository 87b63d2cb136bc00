package io.jrdma.engine.tck;

import io.jrdma.tck.CompletionChannelTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link CompletionChannelTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmCompletionChannelTest extends CompletionChannelTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

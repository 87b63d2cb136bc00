package io.jrdma.engine.tck;

import io.jrdma.tck.CompletionChannelTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link CompletionChannelTck} on soft-iWARP over loopback (both sides dedicated). */
class SoftIwarpDedicatedCompletionChannelTest extends CompletionChannelTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.BOTH_DEDICATED;
    }
}

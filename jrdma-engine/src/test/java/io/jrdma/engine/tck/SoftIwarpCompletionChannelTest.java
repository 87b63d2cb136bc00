package io.jrdma.engine.tck;

import io.jrdma.tck.CompletionChannelTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link CompletionChannelTck} on soft-iWARP over loopback (dedicated server, INVOKER client). */
class SoftIwarpCompletionChannelTest extends CompletionChannelTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

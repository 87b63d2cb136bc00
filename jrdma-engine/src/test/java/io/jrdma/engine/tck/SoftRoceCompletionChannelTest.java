package io.jrdma.engine.tck;

import io.jrdma.tck.CompletionChannelTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link CompletionChannelTck} on soft-RoCE over loopback (dedicated server, INVOKER client). */
class SoftRoceCompletionChannelTest extends CompletionChannelTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

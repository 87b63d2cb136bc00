package io.jrdma.engine.tck;

import io.jrdma.tck.AsyncEventTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link AsyncEventTck} on soft-iWARP over loopback (both sides dedicated). */
class SoftIwarpDedicatedAsyncEventTest extends AsyncEventTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.BOTH_DEDICATED;
    }
}

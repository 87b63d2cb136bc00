package io.jrdma.engine.tck;

import io.jrdma.tck.AsyncEventTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link AsyncEventTck} on SoftRoce over loopback (dedicated server, INVOKER client). */
class SoftRoceAsyncEventTest extends AsyncEventTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

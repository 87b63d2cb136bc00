package io.jrdma.engine.tck;

import io.jrdma.tck.AsyncEventTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link AsyncEventTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpAsyncEventTest extends AsyncEventTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.ConnectionTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ConnectionTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmConnectionTest extends ConnectionTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.ConnectionTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ConnectionTck} on the shared-memory provider, shm0 (both sides dedicated). */
class ShmDedicatedConnectionTest extends ConnectionTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.BOTH_DEDICATED;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.AsyncEventTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link AsyncEventTck} on the shared-memory provider, shm0 (both sides dedicated). */
class ShmDedicatedAsyncEventTest extends AsyncEventTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.BOTH_DEDICATED;
    }
}

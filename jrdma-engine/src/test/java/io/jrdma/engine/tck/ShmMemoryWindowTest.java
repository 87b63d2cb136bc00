package io.jrdma.engine.tck;

import io.jrdma.tck.MemoryWindowTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link MemoryWindowTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmMemoryWindowTest extends MemoryWindowTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.MemoryWindowTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link MemoryWindowTck} on the shared-memory provider, shm0 (both sides dedicated). */
class ShmDedicatedMemoryWindowTest extends MemoryWindowTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.BOTH_DEDICATED;
    }
}

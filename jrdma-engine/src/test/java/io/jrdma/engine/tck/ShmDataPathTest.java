package io.jrdma.engine.tck;

import io.jrdma.tck.DataPathTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link DataPathTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmDataPathTest extends DataPathTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

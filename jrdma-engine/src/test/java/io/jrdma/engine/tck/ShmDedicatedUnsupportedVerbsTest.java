package io.jrdma.engine.tck;

import io.jrdma.tck.UnsupportedVerbsTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UnsupportedVerbsTck} on the shared-memory provider, shm0 (both sides dedicated). */
class ShmDedicatedUnsupportedVerbsTest extends UnsupportedVerbsTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.BOTH_DEDICATED;
    }
}

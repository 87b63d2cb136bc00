package io.jrdma.engine.tck;

import io.jrdma.tck.UnsupportedVerbsTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UnsupportedVerbsTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmUnsupportedVerbsTest extends UnsupportedVerbsTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.UcTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UcTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmUcTest extends UcTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

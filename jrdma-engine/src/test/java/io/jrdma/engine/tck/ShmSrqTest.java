package io.jrdma.engine.tck;

import io.jrdma.tck.SrqTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link SrqTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmSrqTest extends SrqTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

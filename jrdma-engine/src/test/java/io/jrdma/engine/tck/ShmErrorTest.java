package io.jrdma.engine.tck;

import io.jrdma.tck.ErrorTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ErrorTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmErrorTest extends ErrorTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.UdTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UdTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmUdTest extends UdTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

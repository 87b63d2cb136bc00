package io.jrdma.engine.tck;

import io.jrdma.tck.PortTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link PortTck} on the shared-memory provider, shm0 (dedicated server, INVOKER client). */
class ShmPortTest extends PortTck {
    @Override
    protected ProviderFixture fixture() {
        return ShmFixture.TYPICAL;
    }
}

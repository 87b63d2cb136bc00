package io.jrdma.engine.tck;

import io.jrdma.tck.SrqTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link SrqTck} on soft-iWARP over loopback (both sides dedicated). */
class SoftIwarpDedicatedSrqTest extends SrqTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.BOTH_DEDICATED;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.SrqTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link SrqTck} on SoftRoce over loopback (dedicated server, INVOKER client). */
class SoftRoceSrqTest extends SrqTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.PortTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link PortTck} on SoftRoce over loopback (dedicated server, INVOKER client). */
class SoftRocePortTest extends PortTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

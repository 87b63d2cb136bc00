package io.jrdma.engine.tck;

import io.jrdma.tck.UdTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UdTck} on SoftRoce over loopback (dedicated server, INVOKER client). */
class SoftRoceUdTest extends UdTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

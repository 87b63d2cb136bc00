package io.jrdma.engine.tck;

import io.jrdma.tck.UdTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UdTck} on SoftRoce over loopback (both sides with a dedicated engine thread). */
class SoftRoceDedicatedUdTest extends UdTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.BOTH_DEDICATED;
    }
}

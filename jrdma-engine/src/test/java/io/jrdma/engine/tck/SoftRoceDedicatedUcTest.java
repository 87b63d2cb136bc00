package io.jrdma.engine.tck;

import io.jrdma.tck.UcTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UcTck} on SoftRoce over loopback (both sides with a dedicated engine thread). */
class SoftRoceDedicatedUcTest extends UcTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.BOTH_DEDICATED;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.SrqTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link SrqTck} on soft-RoCE over loopback (both sides dedicated). */
class SoftRoceDedicatedSrqTest extends SrqTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.BOTH_DEDICATED;
    }
}

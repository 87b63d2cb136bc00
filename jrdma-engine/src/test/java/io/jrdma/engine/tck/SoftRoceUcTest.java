package io.jrdma.engine.tck;

import io.jrdma.tck.UcTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UcTck} on SoftRoce over loopback (dedicated server, INVOKER client). */
class SoftRoceUcTest extends UcTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.UnsupportedVerbsTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UnsupportedVerbsTck} on SoftRoce over loopback (dedicated server, INVOKER client). */
class SoftRoceUnsupportedVerbsTest extends UnsupportedVerbsTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

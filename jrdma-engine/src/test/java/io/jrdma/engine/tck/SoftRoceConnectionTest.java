package io.jrdma.engine.tck;

import io.jrdma.tck.ConnectionTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ConnectionTck} on soft-RoCE over loopback (dedicated server, INVOKER client). */
class SoftRoceConnectionTest extends ConnectionTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.ConnectionTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ConnectionTck} on soft-iWARP over loopback (dedicated server, INVOKER client). */
class SoftIwarpConnectionTest extends ConnectionTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

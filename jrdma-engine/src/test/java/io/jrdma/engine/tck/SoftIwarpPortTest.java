package io.jrdma.engine.tck;

import io.jrdma.tck.PortTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link PortTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpPortTest extends PortTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

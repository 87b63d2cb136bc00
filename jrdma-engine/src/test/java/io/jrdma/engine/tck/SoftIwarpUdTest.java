package io.jrdma.engine.tck;

import io.jrdma.tck.UdTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UdTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpUdTest extends UdTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

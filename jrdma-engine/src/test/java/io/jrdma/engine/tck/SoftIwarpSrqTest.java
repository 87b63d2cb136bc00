package io.jrdma.engine.tck;

import io.jrdma.tck.SrqTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link SrqTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpSrqTest extends SrqTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.UcTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UcTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpUcTest extends UcTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

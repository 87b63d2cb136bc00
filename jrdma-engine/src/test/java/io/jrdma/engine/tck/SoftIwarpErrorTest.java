package io.jrdma.engine.tck;

import io.jrdma.tck.ErrorTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ErrorTck} on soft-iWARP over loopback (dedicated server, INVOKER client). */
class SoftIwarpErrorTest extends ErrorTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

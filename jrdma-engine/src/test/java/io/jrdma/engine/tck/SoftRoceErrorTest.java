package io.jrdma.engine.tck;

import io.jrdma.tck.ErrorTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link ErrorTck} on soft-RoCE over loopback (dedicated server, INVOKER client). */
class SoftRoceErrorTest extends ErrorTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

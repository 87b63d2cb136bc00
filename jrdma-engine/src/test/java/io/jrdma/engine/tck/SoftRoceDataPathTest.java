package io.jrdma.engine.tck;

import io.jrdma.tck.DataPathTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link DataPathTck} on soft-RoCE over loopback (dedicated server, INVOKER client). */
class SoftRoceDataPathTest extends DataPathTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.TYPICAL;
    }
}

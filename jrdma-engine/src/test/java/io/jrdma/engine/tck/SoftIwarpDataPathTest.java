package io.jrdma.engine.tck;

import io.jrdma.tck.DataPathTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link DataPathTck} on soft-iWARP over loopback (dedicated server, INVOKER client). */
class SoftIwarpDataPathTest extends DataPathTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

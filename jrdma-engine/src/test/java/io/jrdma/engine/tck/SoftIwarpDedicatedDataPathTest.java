package io.jrdma.engine.tck;

import io.jrdma.tck.DataPathTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link DataPathTck} on soft-iWARP over loopback (both sides dedicated). */
class SoftIwarpDedicatedDataPathTest extends DataPathTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.BOTH_DEDICATED;
    }
}

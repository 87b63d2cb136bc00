package io.jrdma.engine.tck;

import io.jrdma.tck.MemoryWindowTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link MemoryWindowTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpMemoryWindowTest extends MemoryWindowTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

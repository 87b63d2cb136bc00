package io.jrdma.engine.tck;

import io.jrdma.tck.MemoryWindowTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link MemoryWindowTck} on SoftIwarp over loopback (both sides dedicated). */
class SoftIwarpDedicatedMemoryWindowTest extends MemoryWindowTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.BOTH_DEDICATED;
    }
}

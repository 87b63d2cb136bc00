package io.jrdma.engine.tck;

import io.jrdma.tck.MemoryWindowTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link MemoryWindowTck} on SoftRoce over loopback (both sides dedicated). */
class SoftRoceDedicatedMemoryWindowTest extends MemoryWindowTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.BOTH_DEDICATED;
    }
}

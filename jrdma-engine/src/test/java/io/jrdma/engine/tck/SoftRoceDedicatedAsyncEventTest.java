package io.jrdma.engine.tck;

import io.jrdma.tck.AsyncEventTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link AsyncEventTck} on soft-RoCE over loopback (both sides dedicated). */
class SoftRoceDedicatedAsyncEventTest extends AsyncEventTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftRoceFixture.BOTH_DEDICATED;
    }
}

package io.jrdma.rdmacore.tck;

import io.jrdma.tck.MemoryWindowTck;
import io.jrdma.tck.ProviderFixture;

/**
 * The TCK's {@link MemoryWindowTck} on the rdma-core device named by {@value RdmaCoreFixture#DEVICE_PROPERTY}
 * (windows of the types the device reports; fast registration skipped, as libibverbs has none); skipped without one.
 */
class RdmaCoreMemoryWindowTest extends MemoryWindowTck {
    @Override
    protected ProviderFixture fixture() {
        return RdmaCoreFixture.INSTANCE;
    }
}

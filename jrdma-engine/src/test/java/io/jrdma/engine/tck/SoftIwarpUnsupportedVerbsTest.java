package io.jrdma.engine.tck;

import io.jrdma.tck.UnsupportedVerbsTck;
import io.jrdma.tck.ProviderFixture;

/** The TCK's {@link UnsupportedVerbsTck} on SoftIwarp over loopback (dedicated server, INVOKER client). */
class SoftIwarpUnsupportedVerbsTest extends UnsupportedVerbsTck {
    @Override
    protected ProviderFixture fixture() {
        return SoftIwarpFixture.TYPICAL;
    }
}

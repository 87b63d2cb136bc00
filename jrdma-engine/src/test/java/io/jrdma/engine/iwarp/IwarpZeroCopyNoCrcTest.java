package io.jrdma.engine.iwarp;

/**
 * {@link IwarpZeroCopyTest}'s tests between jrdma peers as they connect by default: without MPA CRC
 * (IwarpCrcNegotiationTest), so direct placement and zero-copy transmit run with no CRC to update.
 */
class IwarpZeroCopyNoCrcTest extends IwarpZeroCopyTest {
    @Override
    boolean crc() {
        return false;
    }
}

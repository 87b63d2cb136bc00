/**
 * Wire codecs for jrdma: RoCEv2 transport headers (BTH and the extended transport headers),
 * the IBA opcode table, the ICRC, and small pcap utilities for tests and tools.
 * Depends on {@code java.base} only.
 */
module io.jrdma.wire {
    exports io.jrdma.wire;
    exports io.jrdma.wire.iwarp;
}

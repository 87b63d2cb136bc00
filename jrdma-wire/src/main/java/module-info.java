/**
 * Wire codecs for jrdma: RoCEv2 transport headers (BTH and the extended transport headers),
 * the IBA opcode table, the ICRC, and small pcap utilities for tests and tools.
 * Depends on {@code java.base} only.
 */
module io.jrdma.wire {
    // Internal to jrdma (no public API yet): the engine's codecs and the tool's pcap checks.
    exports io.jrdma.wire to io.jrdma.engine, io.jrdma.tools;
    exports io.jrdma.wire.iwarp to io.jrdma.engine, io.jrdma.tools;
    exports io.jrdma.wire.mad to io.jrdma.engine, io.jrdma.tools;
}

/**
 * The software RDMA engine: a soft-RoCE (RoCEv2 over UDP) provider shaped like Linux rdma_rxe
 * (requester, responder, completer, packet receiver, key checks) and its connection manager, and a
 * soft-iWARP (RDMAP/DDP/MPA over TCP) provider shaped like Linux siw.
 */
module io.jrdma.engine {
    requires transitive io.jrdma.verbs;
    requires io.jrdma.wire;
    requires jdk.net;

    // No public API: applications use io.jrdma.verbs, which finds the providers below through
    // ServiceLoader. The jrdma tool reads engine-specific device attributes, so the packages are
    // exported to it alone (on the class path, as in the tests and benchmarks, this is moot).
    exports io.jrdma.engine to io.jrdma.tools;
    exports io.jrdma.engine.link to io.jrdma.tools;

    provides io.jrdma.verbs.spi.RdmaProvider with io.jrdma.engine.SoftRoceProvider, io.jrdma.engine.SoftIwarpProvider;
}

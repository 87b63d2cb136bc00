/**
 * The software RDMA engine: a soft-RoCE (RoCEv2 over UDP) provider shaped like Linux rdma_rxe
 * (requester, responder, completer, packet receiver, key checks) and its connection manager, and a
 * soft-iWARP (RDMAP/DDP/MPA over TCP) provider shaped like Linux siw.
 */
module io.jrdma.engine {
    requires transitive io.jrdma.verbs;
    requires io.jrdma.wire;
    requires jdk.net;

    exports io.jrdma.engine;
    exports io.jrdma.engine.link;

    provides io.jrdma.verbs.spi.RdmaProvider with io.jrdma.engine.SoftRoceProvider, io.jrdma.engine.SoftIwarpProvider;
}

/**
 * The software RDMA engine: a transport-neutral core ({@code core}: device context, PDs, keys, CQs,
 * queues, the QP state table, the duty cycle) that transports plug into, a soft-RoCE (RoCEv2 over
 * UDP) transport and provider shaped like Linux rdma_rxe ({@code roce}: requester, responder,
 * completer, packet receiver) with its connection manager ({@code cm}), and a soft-iWARP
 * (RDMAP/DDP/MPA over TCP) transport and provider shaped like Linux siw ({@code iwarp}).
 */
module io.jrdma.engine {
    requires transitive io.jrdma.verbs;
    requires io.jrdma.wire;
    requires jdk.net;
    requires jdk.jfr;

    // Apart from io.jrdma.soft no public API: applications use io.jrdma.verbs, which finds the providers below through
    // ServiceLoader. The jrdma tool reads engine-specific device attributes, so the packages are
    // exported to it alone (on the class path, as in the tests and benchmarks, this is moot).
    // The software providers' own typed options (as a provider header such as mlx5dv.h): public API.
    exports io.jrdma.soft;
    exports io.jrdma.engine.core to io.jrdma.tools;
    exports io.jrdma.engine.roce to io.jrdma.tools;
    exports io.jrdma.engine.iwarp to io.jrdma.tools;
    exports io.jrdma.engine.link to io.jrdma.tools;
    exports io.jrdma.engine.shm to io.jrdma.tools;
    // jrdma's TCP connection manager, which the rdma-core provider's RoCE contexts use as well
    exports io.jrdma.engine.cm to io.jrdma.rdmacore;

    provides io.jrdma.verbs.spi.RdmaProvider with io.jrdma.engine.roce.SoftRoceProvider,
            io.jrdma.engine.iwarp.SoftIwarpProvider, io.jrdma.engine.shm.ShmProvider;
}

/**
 * The jrdma verbs API: devices, protection domains, memory regions, completion queues,
 * queue pairs and the connection manager, with libibverbs semantics and Java idioms.
 * Providers (the software RoCEv2 engine, later iWARP, shared memory and hardware) plug in
 * through {@link io.jrdma.verbs.spi.RdmaProvider} and are found with {@link java.util.ServiceLoader}.
 */
module io.jrdma.verbs {
    exports io.jrdma.verbs;
    exports io.jrdma.verbs.spi;
    uses io.jrdma.verbs.spi.RdmaProvider;
}

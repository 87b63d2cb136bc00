/**
 * The rdma-core provider: the devices that {@code libibverbs.so.1} sees (Linux rxe, siw, RDMA NICs),
 * bound through the FFM API without JNI or a C build step. Optional at run time: without the
 * library, native access or a device it lists no devices and says why.
 */
module io.jrdma.rdmacore {
    requires io.jrdma.verbs;
    requires io.jrdma.engine; // its TCP connection manager only

    exports io.jrdma.rdmacore;

    provides io.jrdma.verbs.spi.RdmaProvider with io.jrdma.rdmacore.RdmaCoreProvider;
}

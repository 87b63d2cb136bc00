package io.jrdma.rdmacore;

import io.jrdma.verbs.Gid;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Which rdma-core device an IP address belongs to or routes through, as rdma_cm decides it: a temporary
 * {@code rdma_cm_id} (synchronous: no event channel of ours) is bound to the address ({@code rdma_bind_addr}, for
 * an address of this host) or, when the address is not local ({@code EADDRNOTAVAIL}), resolved
 * ({@code rdma_resolve_addr}, which follows the kernel's route and its neighbour); the id's {@code verbs} context
 * then names the device, {@code port_num} the port, and its route's source address and GID are read. The same
 * answer for RoCE and iWARP devices (siw's GIDs hold no IP address, so the GID table alone could not tell).
 */
final class AddressResolver {
    static final int ENODEV = 19, EADDRNOTAVAIL = 99;
    /** How long {@code rdma_resolve_addr} may take for an address that is not local (rping's default: 2 s). */
    static final int RESOLVE_TIMEOUT_MS = 2000;

    /** {@code route.addr.addr.ibaddr.sgid} of {@code struct rdma_cm_id}: the source GID rdma_cm found. */
    static final long ID_SGID = LibRdmacm.off(LibRdmacm.RDMA_CM_ID, "route") + LibRdmacm.off(LibRdmacm.RDMA_ROUTE, "addr")
            + LibRdmacm.off(LibRdmacm.RDMA_ADDR, "addr");

    private AddressResolver() {
    }

    /**
     * Where rdma_cm puts an address.
     *
     * @param device the rdma-core device's name
     * @param port   its port, from 1
     * @param source the local address ({@code src_addr} of the id's route): the address itself when local
     * @param sgid   the source GID rdma_cm found ({@code ibaddr.sgid})
     * @param local  true when the address is this host's ({@code rdma_bind_addr} took it)
     */
    record Route(String device, int port, InetAddress source, Gid sgid, boolean local) {
    }

    /** What one attempt gave: a route, or the errno that ended it. */
    private record Attempt(Route route, int errno) {
    }

    /**
     * {@return the device and port rdma_cm picks for {@code address}; null when no rdma-core device has it or a
     * route to it (ENODEV: the address is on an interface without an RDMA device; EADDRNOTAVAIL and no route or
     * neighbour within {@link #RESOLVE_TIMEOUT_MS}; or librdmacm finds no device at all)}
     *
     * @param ib      libibverbs, to name the device of the id's context
     * @param cm      librdmacm, usable
     * @param address the address, of this host or a peer's
     * @param timeoutMs how long the resolution of a peer's address may take
     * @throws LibIbverbs.LayoutMismatchException when the id's fields do not hold what rdma_cm must have written
     */
    static Route route(LibIbverbs ib, LibRdmacm cm, InetAddress address, int timeoutMs) {
        Attempt bound = attempt(ib, cm, address, true, timeoutMs);
        if (bound.route() != null || bound.errno() != EADDRNOTAVAIL) {
            return bound.route();
        }
        return attempt(ib, cm, address, false, timeoutMs).route();
    }

    private static Attempt attempt(LibIbverbs ib, LibRdmacm cm, InetAddress address, boolean bind, int timeoutMs) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = IbvVerbs.callState(a);
            MemorySegment sa = a.allocate(LibRdmacm.SOCKADDR_STORAGE);
            LibRdmacm.writeSockaddr(sa, new InetSocketAddress(address, 0));
            MemorySegment idOut = a.allocate(ADDRESS);
            // no event channel: librdmacm makes its own and each call waits for its event (synchronous mode)
            int rc = cm.createId(state, MemorySegment.NULL, idOut, MemorySegment.NULL);
            if (rc != 0) {
                return new Attempt(null, rc); // ENODEV: librdmacm sees no RDMA device at all
            }
            MemorySegment id = idOut.get(ADDRESS, 0).reinterpret(LibRdmacm.RDMA_CM_ID.byteSize());
            try {
                int ps = id.get(JAVA_INT, LibRdmacm.ID_PS);
                if (ps != LibRdmacm.RDMA_PS_TCP) {
                    throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_id: ps at offset " + LibRdmacm.ID_PS
                            + " reads 0x" + Integer.toHexString(ps) + ", not RDMA_PS_TCP (0x"
                            + Integer.toHexString(LibRdmacm.RDMA_PS_TCP) + ")");
                }
                rc = bind ? cm.bindAddr(state, id, sa) : cm.resolveAddr(state, id, MemorySegment.NULL, sa, timeoutMs);
                if (rc != 0) {
                    return new Attempt(null, rc);
                }
                MemorySegment verbs = id.get(ADDRESS, LibRdmacm.ID_VERBS);
                if (verbs.equals(MemorySegment.NULL)) {
                    return new Attempt(null, ENODEV);
                }
                String device = ib.contextDeviceName(verbs);
                int port = Byte.toUnsignedInt(id.get(JAVA_BYTE, LibRdmacm.ID_PORT_NUM));
                InetSocketAddress src = LibRdmacm.readSockaddr(id, LibRdmacm.ID_SRC_ADDR);
                if (src == null || (bind && !java.util.Arrays.equals(src.getAddress().getAddress(), address.getAddress()))) {
                    throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_id: route.addr.src_addr at offset "
                            + LibRdmacm.ID_SRC_ADDR + " reads " + src + ", not the address " + address.getHostAddress()
                            + (bind ? " rdma_bind_addr bound" : " of a family rdma_resolve_addr gives"));
                }
                Gid sgid = Gid.of(id.asSlice(ID_SGID, 16).toArray(JAVA_BYTE));
                return new Attempt(new Route(device, port, src.getAddress(), sgid, bind), 0);
            } finally {
                cm.destroyId(state, id);
            }
        }
    }
}

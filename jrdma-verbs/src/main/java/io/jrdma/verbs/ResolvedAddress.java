package io.jrdma.verbs;

/**
 * The outcome of address resolution: which device, port and source GID reach a destination (what
 * {@code Rdma.resolve} answers, as {@code rdma_resolve_addr} binds an id to a device and port).
 *
 * @param device    the device whose interface routes to the destination
 * @param sgid      the local GID (source address) to use
 * @param sgidIndex its index in the GID table of port {@code portNum}
 * @param portNum   the device's port the address is on or routes through (rdma_cm's {@code cm_id->port_num}),
 *                  from 1: the port to give {@link QpAttr#portNum(int)} and {@link AhAttr}; 1 on jrdma's
 *                  software devices, which have one port
 */
public record ResolvedAddress(Device device, Gid sgid, int sgidIndex, int portNum) {
    /**
     * Checks the port number.
     *
     * @throws IllegalArgumentException if {@code portNum} is below 1 (ports are numbered from 1)
     */
    public ResolvedAddress {
        if (portNum < 1) {
            throw new IllegalArgumentException("portNum " + portNum + ": ports are numbered from 1");
        }
    }

    /**
     * An address on port 1 (the only port of jrdma's software devices).
     *
     * @param device    the device whose interface routes to the destination
     * @param sgid      the local GID (source address) to use
     * @param sgidIndex its index in port 1's GID table
     */
    public ResolvedAddress(Device device, Gid sgid, int sgidIndex) {
        this(device, sgid, sgidIndex, 1);
    }
}

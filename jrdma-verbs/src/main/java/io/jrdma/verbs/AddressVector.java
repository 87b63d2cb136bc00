package io.jrdma.verbs;

/**
 * Where a connected QP sends (the RoCEv2 part of {@code ibv_ah_attr}): the destination GID,
 * which local GID to send from, and the destination UDP port (4791 unless the peer took
 * another one: jrdma devices sharing a host advertise it through the connection manager).
 *
 * @param dgid         destination GID (IP address)
 * @param sgidIndex    index into the local port's GID table
 * @param hopLimit     IP TTL / hop limit (64 by default)
 * @param trafficClass IP traffic class / TOS
 * @param udpPort      destination UDP port
 */
public record AddressVector(Gid dgid, int sgidIndex, int hopLimit, int trafficClass, int udpPort) {
    /**
     * Validates and makes the address vector.
     *
     * @throws RdmaException EINVAL if {@code dgid} is null or {@code udpPort} is outside 1..65535
     */
    public AddressVector {
        if (dgid == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "an address vector needs a destination GID");
        }
        if (udpPort <= 0 || udpPort > 65535) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "destination UDP port must be 1..65535, not " + udpPort);
        }
    }

    /**
     * {@return an address vector to a GID on the standard RoCEv2 port 4791, hop limit 64,
     * traffic class 0}
     *
     * @param dgid      the destination GID
     * @param sgidIndex the local GID to send from
     */
    public static AddressVector of(Gid dgid, int sgidIndex) {
        return new AddressVector(dgid, sgidIndex, 64, 0, DeviceOptions.ROCE_V2_PORT);
    }

    /**
     * {@return this address vector with another destination UDP port}
     *
     * @param port 1..65535
     * @throws RdmaException EINVAL outside 1..65535
     */
    public AddressVector withUdpPort(int port) {
        return new AddressVector(dgid, sgidIndex, hopLimit, trafficClass, port);
    }
}

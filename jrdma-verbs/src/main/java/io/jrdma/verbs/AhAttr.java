package io.jrdma.verbs;

/**
 * The attributes of an address handle ({@code ibv_ah_attr} with its {@code ibv_global_route}): where UD
 * sends go. On RoCE every address is global, so the GRH fields are always used ({@code is_global} is
 * implied) and LIDs have no meaning. Made directly, from an {@link AddressVector}, or from a received
 * completion with {@link DeviceContext#initAhFromWc}.
 *
 * @param dgid         the destination GID (IP address)
 * @param sgidIndex    the local GID to send from: an index into port {@code portNum}'s GID table
 *                     ({@link DeviceContext#gid(int, int)})
 * @param hopLimit     IP TTL / hop limit, 0..255, put in the IP header of each datagram sent through the handle
 *                     (a provider may refuse 0, which no datagram can leave with: jrdma's do, with EINVAL)
 * @param trafficClass IP traffic class / TOS, 0..255, put in the IP header of each datagram sent through the handle
 * @param flowLabel    IPv6 flow label, 0..0xFFFFF (0: none; ignored over IPv4)
 * @param sl           service level, 0..15 (RoCE maps it to a priority; jrdma's providers do not use it)
 * @param portNum      the local port, 1 to {@link DeviceAttr#physPortCnt()} (jrdma's software devices have one
 *                     port, 1; a provider refuses a port the device lacks with EINVAL)
 * @param udpPort      jrdma: the destination UDP port, 4791 unless the peer is a jrdma context that listens on
 *                     another one (it announces it out of band, as {@link AddressVector#udpPort()})
 */
public record AhAttr(Gid dgid, int sgidIndex, int hopLimit, int trafficClass, int flowLabel, int sl, int portNum,
                     int udpPort) {
    /**
     * Validates and makes the attributes.
     *
     * @throws RdmaException EINVAL for a null GID or a field out of its range (the message names it)
     */
    public AhAttr {
        if (dgid == null) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "an address handle needs a destination GID");
        }
        check(sgidIndex, 0, Integer.MAX_VALUE, "sgid index");
        check(hopLimit, 0, 255, "hop limit");
        check(trafficClass, 0, 255, "traffic class");
        check(flowLabel, 0, 0xFFFFF, "flow label");
        check(sl, 0, 15, "service level");
        check(portNum, 1, 255, "port number");
        check(udpPort, 1, 65535, "destination UDP port");
    }

    /**
     * {@return attributes for {@code dgid} sent from GID {@code sgidIndex} of port 1: hop limit 64, traffic
     * class, flow label and SL 0, UDP port 4791}
     *
     * @param dgid      the destination GID
     * @param sgidIndex the local GID to send from
     */
    public static AhAttr of(Gid dgid, int sgidIndex) {
        return new AhAttr(dgid, sgidIndex, 64, 0, 0, 0, 1, DeviceOptions.ROCE_V2_PORT);
    }

    /**
     * {@return the attributes of a connected QP's address vector, for port 1, flow label and SL 0}
     *
     * @param av the address vector
     */
    public static AhAttr of(AddressVector av) {
        return new AhAttr(av.dgid(), av.sgidIndex(), av.hopLimit(), av.trafficClass(), 0, 0, 1, av.udpPort());
    }

    /** {@return the address vector of these attributes (what {@link QpAttr#av} takes for a connected QP)} */
    public AddressVector toAddressVector() {
        return new AddressVector(dgid, sgidIndex, hopLimit, trafficClass, udpPort);
    }

    /**
     * {@return these attributes with another destination UDP port}
     *
     * @param port 1..65535
     * @throws RdmaException EINVAL outside 1..65535
     */
    public AhAttr withUdpPort(int port) {
        return new AhAttr(dgid, sgidIndex, hopLimit, trafficClass, flowLabel, sl, portNum, port);
    }

    /**
     * {@return these attributes with another hop limit}
     *
     * @param hops 0..255
     * @throws RdmaException EINVAL outside 0..255
     */
    public AhAttr withHopLimit(int hops) {
        return new AhAttr(dgid, sgidIndex, hops, trafficClass, flowLabel, sl, portNum, udpPort);
    }

    private static void check(int v, int min, int max, String what) {
        if (v < min || v > max) {
            throw new RdmaException(RdmaException.Errno.EINVAL, what + " must be " + min + ".." + max + ", not " + v);
        }
    }
}

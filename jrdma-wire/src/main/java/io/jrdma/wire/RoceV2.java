package io.jrdma.wire;

/**
 * RoCEv2 encapsulation facts: {@code Ethernet | IPv4 or IPv6 | UDP (dst 4791) | BTH |
 * extended headers | payload | pad | ICRC}.
 *
 * <p>Sources: IBA Annex A17 (RoCEv2); Linux {@code rxe_net.c} (UDP checksum 0, IPv4 DF);
 * {@code rdma_calc_flow_label} / {@code rdma_flow_label_to_udp_sport} in
 * {@code include/rdma/ib_verbs.h}; jrdma spec D1. Pure functions, no allocation.
 */
public final class RoceV2 {
    private RoceV2() {
    }

    /** The IANA UDP destination port of RoCEv2. */
    public static final int UDP_PORT = 4791;
    /** Bytes of an IPv4 header without options. */
    public static final int IPV4_HEADER = 20;
    /** Bytes of an IPv6 header. */
    public static final int IPV6_HEADER = 40;
    /** Bytes of a UDP header. */
    public static final int UDP_HEADER = 8;

    /**
     * The 20-bit flow label derived from the two QP numbers:
     * {@code fl = lqpn * rqpn; fl ^= fl >> 20; fl ^= fl >> 40; fl & 0xFFFFF}.
     */
    public static int flowLabel(int lqpn, int rqpn) {
        long fl = (lqpn & 0xFF_FFFFL) * (rqpn & 0xFF_FFFFL);
        fl ^= fl >>> 20;
        fl ^= fl >>> 40;
        return (int) (fl & 0xF_FFFF);
    }

    /** UDP source port (0xC000..0xFFFF) from a flow label, as Linux RoCE drivers do. */
    public static int udpSourcePort(int flowLabel) {
        return ((flowLabel & 0x3FFF) ^ ((flowLabel & 0xF_C000) >>> 14)) | 0xC000;
    }

    /** UDP source port for an RC/UC connection between {@code lqpn} and {@code rqpn}. */
    public static int udpSourcePort(int lqpn, int rqpn) {
        return udpSourcePort(flowLabel(lqpn, rqpn));
    }

    /** Pad bytes (0..3) needed after {@code payloadLength} bytes to reach a 4-byte multiple. */
    public static int padCount(int payloadLength) {
        return -payloadLength & 3;
    }

    /**
     * UDP payload length (BTH through ICRC) of a packet with this opcode and payload length.
     */
    public static int packetLength(int opcode, int payloadLength) {
        return IbOpcode.headerLength(opcode) + payloadLength + padCount(payloadLength)
                + Icrc.LENGTH;
    }
}

package io.jrdma.wire;

import java.nio.ByteBuffer;

/**
 * Small helpers to find the IP and UDP headers in captured frames (Ethernet with optional
 * 802.1Q/802.1ad tags, raw IP, Linux cooked capture v1 and v2). For tests and tools, not the hot path.
 *
 * <p>Linux cooked captures (tcpdump.org's LINKTYPE_LINUX_SLL and LINKTYPE_LINUX_SLL2): v1's 16-byte
 * header is packet type u16, ARPHRD_ type u16, link-layer address length u16, address 8 bytes, then
 * the protocol (an EtherType) u16; v2's 20-byte header starts with the protocol u16, then reserved
 * u16, interface index u32, ARPHRD_ type u16, packet type u8, address length u8, address 8 bytes.
 *
 * <p>All offsets are absolute indexes into the buffer (independent of its position); the
 * buffer's limit marks the end of the captured bytes. Multi-byte fields are read big-endian
 * regardless of the buffer's byte order.
 */
public final class EthernetIp {
    private EthernetIp() {
    }

    /** Ethernet header without tags. */
    public static final int ETHERNET_HEADER = 14;
    /** EtherType IPv4. */
    public static final int ETHERTYPE_IPV4 = 0x0800;
    /** EtherType IPv6. */
    public static final int ETHERTYPE_IPV6 = 0x86DD;
    /** EtherType of an 802.1Q VLAN tag. */
    public static final int ETHERTYPE_VLAN = 0x8100;
    /** EtherType of an 802.1ad service tag (QinQ). */
    public static final int ETHERTYPE_QINQ = 0x88A8;
    /** Legacy QinQ EtherType. */
    public static final int ETHERTYPE_QINQ_OLD = 0x9100;
    /** IP protocol number of UDP. */
    public static final int PROTO_UDP = 17;

    /** The UDP datagram found in a frame. */
    public record Udp(int ipOffset, int ipVersion, int udpOffset, int srcPort, int dstPort,
            int payloadOffset, int payloadLength) {
        /** The RoCE packet length without the ICRC: {@code payloadLength - 4}. */
        public int roceLengthWithoutIcrc() {
            return payloadLength - Icrc.LENGTH;
        }
    }

    private static int u16(ByteBuffer b, int at) {
        return ((b.get(at) & 0xFF) << 8) | (b.get(at + 1) & 0xFF);
    }

    private static int s32(ByteBuffer b, int at) {
        return (u16(b, at) << 16) | u16(b, at + 2);
    }

    /** IP header offset in an Ethernet frame, skipping VLAN tags; -1 if not IPv4/IPv6. */
    public static int ipOffset(ByteBuffer frame) {
        return ipOffset(frame, PcapReader.LINKTYPE_ETHERNET);
    }

    /**
     * The length of the link-layer header before the IP header in a frame of this pcap link type,
     * without VLAN tags: 14 (Ethernet), 16 (Linux cooked v1), 20 (v2), 0 (raw IP); -1 for a link
     * type these helpers do not read.
     */
    public static int linkHeaderLength(int linkType) {
        return switch (linkType) {
            case PcapReader.LINKTYPE_RAW, PcapReader.LINKTYPE_IPV4, PcapReader.LINKTYPE_IPV6 -> 0;
            case PcapReader.LINKTYPE_ETHERNET -> ETHERNET_HEADER;
            case PcapReader.LINKTYPE_LINUX_SLL -> 16;
            case PcapReader.LINKTYPE_LINUX_SLL2 -> 20;
            default -> -1;
        };
    }

    /**
     * IP header offset in a frame of the given pcap link type (Ethernet, raw IP, Linux
     * cooked v1 and v2), or -1 if the frame does not carry IPv4/IPv6.
     */
    public static int ipOffset(ByteBuffer frame, int linkType) {
        int lim = frame.limit();
        int typeAt;
        int ipAt;
        switch (linkType) {
            case PcapReader.LINKTYPE_RAW, PcapReader.LINKTYPE_IPV4, PcapReader.LINKTYPE_IPV6 -> {
                if (lim < 1) {
                    return -1;
                }
                int v = (frame.get(0) & 0xF0) >>> 4;
                return v == 4 || v == 6 ? 0 : -1;
            }
            case PcapReader.LINKTYPE_LINUX_SLL -> {
                typeAt = 14;
                ipAt = 16;
            }
            case PcapReader.LINKTYPE_LINUX_SLL2 -> {
                typeAt = 0;
                ipAt = 20;
            }
            case PcapReader.LINKTYPE_ETHERNET -> {
                typeAt = 12;
                ipAt = 14;
                while (typeAt + 2 <= lim) {
                    int t = u16(frame, typeAt);
                    if (t != ETHERTYPE_VLAN && t != ETHERTYPE_QINQ && t != ETHERTYPE_QINQ_OLD) {
                        break;
                    }
                    typeAt += 4;
                    ipAt += 4;
                }
            }
            default -> {
                return -1;
            }
        }
        if (typeAt + 2 > lim || ipAt >= lim) {
            return -1;
        }
        int t = u16(frame, typeAt);
        int v = (frame.get(ipAt) & 0xF0) >>> 4;
        if (t == ETHERTYPE_IPV4 && v == 4 || t == ETHERTYPE_IPV6 && v == 6) {
            return ipAt;
        }
        return -1;
    }

    /** IP version (4 or 6) from the first nibble of the header. */
    public static int ipVersion(ByteBuffer frame, int ipOff) {
        return (frame.get(ipOff) & 0xF0) >>> 4;
    }

    /**
     * Offset of the UDP header of an unfragmented IPv4 datagram or an IPv6 packet whose
     * next header is UDP, or -1.
     */
    public static int udpOffset(ByteBuffer frame, int ipOff) {
        int lim = frame.limit();
        int v = ipVersion(frame, ipOff);
        if (v == 4) {
            if (ipOff + 20 > lim) {
                return -1;
            }
            int ihl = (frame.get(ipOff) & 0x0F) * 4;
            int frag = u16(frame, ipOff + 6);
            if (ihl < 20 || (frag & 0x3FFF) != 0 || (frame.get(ipOff + 9) & 0xFF) != PROTO_UDP) {
                return -1;
            }
            return ipOff + ihl + 8 <= lim ? ipOff + ihl : -1;
        }
        if (v == 6) {
            if (ipOff + 48 > lim || (frame.get(ipOff + 6) & 0xFF) != PROTO_UDP) {
                return -1;
            }
            return ipOff + 40;
        }
        return -1;
    }

    /** UDP source port. */
    public static int udpSrcPort(ByteBuffer frame, int udpOff) {
        return u16(frame, udpOff);
    }

    /** UDP destination port. */
    public static int udpDstPort(ByteBuffer frame, int udpOff) {
        return u16(frame, udpOff + 2);
    }

    /** UDP length field (header + payload). */
    public static int udpLength(ByteBuffer frame, int udpOff) {
        return u16(frame, udpOff + 4);
    }

    /** UDP checksum field. */
    public static int udpChecksum(ByteBuffer frame, int udpOff) {
        return u16(frame, udpOff + 6);
    }

    /** IPv4 source address as a big-endian int. */
    public static int ipv4Src(ByteBuffer frame, int ipOff) {
        return s32(frame, ipOff + 12);
    }

    /** IPv4 destination address as a big-endian int. */
    public static int ipv4Dst(ByteBuffer frame, int ipOff) {
        return s32(frame, ipOff + 16);
    }

    /** IPv4 Identification field. */
    public static int ipv4Id(ByteBuffer frame, int ipOff) {
        return u16(frame, ipOff + 4);
    }

    /** IPv4 flags and fragment offset (DF = 0x4000). */
    public static int ipv4FlagsFragment(ByteBuffer frame, int ipOff) {
        return u16(frame, ipOff + 6);
    }

    /** IPv4 total length. */
    public static int ipv4TotalLength(ByteBuffer frame, int ipOff) {
        return u16(frame, ipOff + 2);
    }

    /** IPv6 source address (16 new bytes). */
    public static byte[] ipv6Src(ByteBuffer frame, int ipOff) {
        byte[] a = new byte[16];
        frame.get(ipOff + 8, a);
        return a;
    }

    /** IPv6 destination address (16 new bytes). */
    public static byte[] ipv6Dst(ByteBuffer frame, int ipOff) {
        byte[] a = new byte[16];
        frame.get(ipOff + 24, a);
        return a;
    }

    /**
     * Finds the UDP datagram in a frame, or returns null if the frame is not (complete)
     * IPv4/IPv6 UDP. The payload length comes from the UDP length field, so Ethernet
     * padding is excluded.
     */
    public static Udp parseUdp(ByteBuffer frame, int linkType) {
        int ip = ipOffset(frame, linkType);
        if (ip < 0) {
            return null;
        }
        int udp = udpOffset(frame, ip);
        if (udp < 0) {
            return null;
        }
        int ulen = udpLength(frame, udp);
        if (ulen < 8 || udp + ulen > frame.limit()) {
            return null;
        }
        return new Udp(ip, ipVersion(frame, ip), udp, udpSrcPort(frame, udp),
                udpDstPort(frame, udp), udp + 8, ulen - 8);
    }

    /** {@link #parseUdp(ByteBuffer, int)} for an Ethernet frame. */
    public static Udp parseUdp(ByteBuffer frame) {
        return parseUdp(frame, PcapReader.LINKTYPE_ETHERNET);
    }

    /** The IPv4 header checksum of {@code len} header bytes at {@code ipOff}. */
    public static int ipv4HeaderChecksum(ByteBuffer b, int ipOff, int len) {
        int sum = 0;
        for (int i = 0; i < len; i += 2) {
            if (i != 10) {
                sum += u16(b, ipOff + i);
            }
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~sum & 0xFFFF;
    }
}

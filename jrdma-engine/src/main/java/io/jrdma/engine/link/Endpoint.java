package io.jrdma.engine.link;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;

/**
 * One side of a RoCEv2 packet's IP/UDP addressing, precomputed for the ICRC pseudo header:
 * the IPv4 address as an int or the IPv6 address as 16 bytes, and the UDP port. Immutable;
 * made on the control path (QP setup, first packet from a new peer).
 */
public final class Endpoint {
    private final InetSocketAddress socketAddress;
    private final boolean ipv6;
    private final int ipv4;
    private final byte[] ipv6Bytes;
    private final int port;
    private final int linkIndex;
    private java.lang.foreign.MemorySegment sockaddr;
    private int sockaddrLength;

    public Endpoint(InetSocketAddress socketAddress, int linkIndex) {
        this.socketAddress = socketAddress;
        this.linkIndex = linkIndex;
        InetAddress a = socketAddress.getAddress();
        this.port = socketAddress.getPort();
        if (a instanceof Inet4Address) {
            byte[] b = a.getAddress();
            ipv6 = false;
            ipv4 = ((b[0] & 0xff) << 24) | ((b[1] & 0xff) << 16) | ((b[2] & 0xff) << 8) | (b[3] & 0xff);
            ipv6Bytes = null;
        } else if (a instanceof Inet6Address) {
            ipv6 = true;
            ipv4 = 0;
            ipv6Bytes = a.getAddress();
        } else {
            throw new IllegalArgumentException("not an IP address: " + a);
        }
    }

    public static Endpoint of(InetAddress address, int port) {
        return new Endpoint(new InetSocketAddress(address, port), -1);
    }

    public InetSocketAddress socketAddress() {
        return socketAddress;
    }

    public boolean isIpv6() {
        return ipv6;
    }

    /** @return the IPv4 address, big-endian in an int */
    public int ipv4() {
        return ipv4;
    }

    /** @return the IPv6 address bytes (shared: do not modify) */
    public byte[] ipv6Bytes() {
        return ipv6Bytes;
    }

    public int port() {
        return port;
    }

    /** @return for a local endpoint, which socket of the link it is; -1 for a remote one */
    public int linkIndex() {
        return linkIndex;
    }

    /** @return this endpoint as a native sockaddr_in/sockaddr_in6 (made once, on first use) */
    java.lang.foreign.MemorySegment sockaddr() {
        if (sockaddr == null) {
            java.lang.foreign.MemorySegment s = java.lang.foreign.Arena.ofAuto().allocate(NativeUdp.SOCKADDR_SIZE, 8);
            sockaddrLength = NativeUdp.encode(s, socketAddress);
            sockaddr = s;
        }
        return sockaddr;
    }

    /** @return the length of {@link #sockaddr()} */
    int sockaddrLength() {
        sockaddr();
        return sockaddrLength;
    }

    /** @return true if both name the same IP address (ports aside) */
    public boolean sameAddress(Endpoint o) {
        return ipv6 == o.ipv6 && (ipv6 ? Arrays.equals(ipv6Bytes, o.ipv6Bytes) : ipv4 == o.ipv4);
    }

    @Override
    public String toString() {
        return socketAddress.toString();
    }
}

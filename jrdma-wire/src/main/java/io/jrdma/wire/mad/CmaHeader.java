package io.jrdma.wire.mad;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * The rdma_cm header at the front of a REQ's private data (Linux {@code cma.c}'s
 * {@code struct cma_hdr}), 36 bytes: version (1: major 4 bits, minor 4 bits, 0.0 today),
 * IP version (upper 4 bits of 1 byte: 4 or 6), the client's port (2), its address (16),
 * the server's address (16). An IPv4 address fills the last 4 of its 16 bytes (the first 12 zero).
 * The application's private data follows it (56 of the REQ's 92 bytes).
 *
 * @param version   the header version (0x00)
 * @param ipVersion 4 or 6
 * @param srcPort   the client's port (rdma_cm's source port, not a UDP port)
 * @param src       the client's address
 * @param dst       the server's address
 */
public record CmaHeader(int version, int ipVersion, int srcPort, InetAddress src, InetAddress dst) {
    /** Bytes of the header. */
    public static final int LENGTH = 36;
    /** The version Linux sends and accepts. */
    public static final int VERSION = 0x00;
    /** The application's share of a REQ's private data, after the header. */
    public static final int USER_DATA = CmReq.PRIVATE_DATA - LENGTH;
    /** rdma_cm's TCP port space, in the service ID: {@code 0x0000000001060000 | port}. */
    public static final long SERVICE_ID_TCP = 0x0000_0000_0106_0000L;
    /** The mask of the port space part of an rdma_cm service ID. */
    public static final long SERVICE_ID_SPACE_MASK = 0xFFFF_FFFF_FFFF_0000L;

    /** @return the service ID of rdma_cm's TCP port space for {@code port} */
    public static long tcpServiceId(int port) {
        return SERVICE_ID_TCP | (port & 0xFFFF);
    }

    /** Checks the IP version agrees with the addresses. */
    public CmaHeader {
        if (ipVersion == 4 ? !(src instanceof Inet4Address && dst instanceof Inet4Address)
                : ipVersion != 6 || !(src instanceof Inet6Address && dst instanceof Inet6Address)) {
            throw new IllegalArgumentException("IP version " + ipVersion + " with addresses " + src + ", " + dst);
        }
        if ((srcPort & ~0xFFFF) != 0 || (version & ~0xFF) != 0) {
            throw new IllegalArgumentException("port or version out of range");
        }
    }

    /**
     * Reads the header at the front of {@code data} (a REQ's private data).
     *
     * @throws MadFormatException for a version other than 0.0, an IP version other than 4 or 6, or too short data
     */
    public static CmaHeader decode(byte[] data) throws MadFormatException {
        Bytes.check(data.length >= LENGTH, "the rdma_cm header needs 36 bytes");
        int v = Bytes.u8(data, 0);
        Bytes.check(v == VERSION, "rdma_cm header version " + (v >>> 4) + "." + (v & 15) + ", not 0.0");
        int ip = Bytes.u8(data, 1) >>> 4;
        Bytes.check(ip == 4 || ip == 6, "rdma_cm header IP version " + ip + ", not 4 or 6");
        try {
            InetAddress s = ip == 4 ? InetAddress.getByAddress(Bytes.slice(data, 16, 4))
                    : InetAddress.getByAddress(Bytes.slice(data, 4, 16));
            InetAddress d = ip == 4 ? InetAddress.getByAddress(Bytes.slice(data, 32, 4))
                    : InetAddress.getByAddress(Bytes.slice(data, 20, 16));
            if (ip == 6 && !(s instanceof Inet6Address && d instanceof Inet6Address)) {
                // InetAddress folds ::ffff:a.b.c.d into IPv4: keep the 16 bytes as an IPv6 address
                s = Inet6Address.getByAddress(null, Bytes.slice(data, 4, 16), -1);
                d = Inet6Address.getByAddress(null, Bytes.slice(data, 20, 16), -1);
            }
            return new CmaHeader(v, ip, Bytes.u16(data, 2), s, d);
        } catch (UnknownHostException e) {
            throw new MadFormatException("rdma_cm header address: " + e.getMessage());
        }
    }

    /** Writes the header at the front of {@code data} (at least 36 bytes). */
    public void encode(byte[] data) {
        Bytes.put8(data, 0, version);
        Bytes.put8(data, 1, ipVersion << 4);
        Bytes.put16(data, 2, srcPort);
        java.util.Arrays.fill(data, 4, LENGTH, (byte) 0);
        byte[] s = src.getAddress();
        byte[] d = dst.getAddress();
        System.arraycopy(s, 0, data, 4 + 16 - s.length, s.length);
        System.arraycopy(d, 0, data, 20 + 16 - d.length, d.length);
    }

    /** @return the header followed by {@code user} (at most 56 bytes): a REQ's private data */
    public byte[] withUserData(byte[] user) {
        if (user.length > USER_DATA) {
            throw new IllegalArgumentException("rdma_cm over the IB CM carries " + USER_DATA
                    + " bytes of private data in a connect, not " + user.length);
        }
        byte[] p = new byte[LENGTH + user.length];
        encode(p);
        System.arraycopy(user, 0, p, LENGTH, user.length);
        return p;
    }
}

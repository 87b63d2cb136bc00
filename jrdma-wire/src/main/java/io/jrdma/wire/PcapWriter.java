package io.jrdma.wire;

import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writer of classic libpcap files (little-endian, version 2.4), link type Ethernet or raw
 * IP, for dumping packets (e.g. failures seen by the engine) to look at with Wireshark. Not
 * the hot path. Methods are synchronized so several threads may share one writer.
 *
 * <p>{@link #writeIpv4Udp} and {@link #writeIpv6Udp} wrap a UDP payload (a RoCE packet as
 * sent through a UDP socket) in synthetic headers like rxe's: IPv4 with DF, TTL 64 and a
 * valid header checksum, UDP checksum 0; for Ethernet, MAC addresses are zero.
 */
public final class PcapWriter implements Closeable, Flushable {
    /** Default snapshot length. */
    public static final int DEFAULT_SNAPLEN = 262_144;

    private final OutputStream out;
    private final int linkType;
    private final boolean nanos;
    private final int snapLength;
    private final ByteBuffer recordHeader =
            ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);

    /** Microsecond timestamps, default snapshot length. The writer owns the stream. */
    public PcapWriter(OutputStream out, int linkType) throws IOException {
        this(out, linkType, false, DEFAULT_SNAPLEN);
    }

    /**
     * @param out destination, owned by the writer
     * @param linkType {@link PcapReader#LINKTYPE_ETHERNET} or {@link PcapReader#LINKTYPE_RAW}
     *        (others are written as given)
     * @param nanos nanosecond timestamps (magic 0xA1B23C4D) instead of microseconds
     * @param snapLength records longer than this are truncated
     */
    public PcapWriter(OutputStream out, int linkType, boolean nanos, int snapLength)
            throws IOException {
        if (snapLength <= 0) {
            throw new IllegalArgumentException("snapLength " + snapLength);
        }
        this.out = new BufferedOutputStream(out, 1 << 16);
        this.linkType = linkType;
        this.nanos = nanos;
        this.snapLength = snapLength;
        ByteBuffer g = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
        g.putInt(nanos ? PcapReader.MAGIC_NANOS : PcapReader.MAGIC_MICROS)
                .putShort((short) 2).putShort((short) 4)
                .putInt(0).putInt(0).putInt(snapLength).putInt(linkType);
        this.out.write(g.array());
    }

    /** Creates (or truncates) a file. */
    public static PcapWriter create(Path file, int linkType) throws IOException {
        return new PcapWriter(Files.newOutputStream(file), linkType);
    }

    /** Link type written in the header. */
    public int linkType() {
        return linkType;
    }

    /** Writes one record of {@code len} bytes from {@code data[off]}. */
    public synchronized void write(long timestampNanos, byte[] data, int off, int len)
            throws IOException {
        int incl = Math.min(len, snapLength);
        header(timestampNanos, incl, len);
        out.write(data, off, incl);
    }

    /**
     * Writes the bytes between the buffer's position and limit as one record; the buffer's
     * position is not changed.
     */
    public synchronized void write(long timestampNanos, ByteBuffer packet) throws IOException {
        int len = packet.remaining();
        byte[] copy = new byte[Math.min(len, snapLength)];
        packet.get(packet.position(), copy);
        header(timestampNanos, copy.length, len);
        out.write(copy);
    }

    /**
     * Writes a UDP/IPv4 datagram holding the remaining bytes of {@code udpPayload} (not
     * consumed), with an Ethernet header if the link type is Ethernet.
     */
    public synchronized void writeIpv4Udp(long timestampNanos, int srcAddr, int dstAddr,
            int ipId, int srcPort, int dstPort, ByteBuffer udpPayload) throws IOException {
        int n = udpPayload.remaining();
        int eth = ethLength();
        ByteBuffer f = ByteBuffer.allocate(eth + 20 + 8 + n);
        if (eth != 0) {
            f.putShort(12, (short) EthernetIp.ETHERTYPE_IPV4);
        }
        int ip = eth;
        f.put(ip, (byte) 0x45);
        f.putShort(ip + 2, (short) (20 + 8 + n));
        f.putShort(ip + 4, (short) ipId);
        f.putShort(ip + 6, (short) 0x4000);
        f.put(ip + 8, (byte) 64);
        f.put(ip + 9, (byte) EthernetIp.PROTO_UDP);
        f.putInt(ip + 12, srcAddr);
        f.putInt(ip + 16, dstAddr);
        f.putShort(ip + 10, (short) EthernetIp.ipv4HeaderChecksum(f, ip, 20));
        udp(f, ip + 20, srcPort, dstPort, udpPayload);
        write(timestampNanos, f.array(), 0, f.capacity());
    }

    /**
     * Writes a UDP/IPv6 datagram holding the remaining bytes of {@code udpPayload} (not
     * consumed), hop limit 64, with an Ethernet header if the link type is Ethernet.
     */
    public synchronized void writeIpv6Udp(long timestampNanos, byte[] srcAddr, byte[] dstAddr,
            int srcPort, int dstPort, ByteBuffer udpPayload) throws IOException {
        if (srcAddr.length != 16 || dstAddr.length != 16) {
            throw new IllegalArgumentException("IPv6 addresses must be 16 bytes");
        }
        int n = udpPayload.remaining();
        int eth = ethLength();
        ByteBuffer f = ByteBuffer.allocate(eth + 40 + 8 + n);
        if (eth != 0) {
            f.putShort(12, (short) EthernetIp.ETHERTYPE_IPV6);
        }
        int ip = eth;
        f.putInt(ip, 0x6000_0000);
        f.putShort(ip + 4, (short) (8 + n));
        f.put(ip + 6, (byte) EthernetIp.PROTO_UDP);
        f.put(ip + 7, (byte) 64);
        f.put(ip + 8, srcAddr);
        f.put(ip + 24, dstAddr);
        udp(f, ip + 40, srcPort, dstPort, udpPayload);
        write(timestampNanos, f.array(), 0, f.capacity());
    }

    private int ethLength() {
        if (linkType == PcapReader.LINKTYPE_ETHERNET) {
            return EthernetIp.ETHERNET_HEADER;
        }
        if (linkType == PcapReader.LINKTYPE_RAW || linkType == PcapReader.LINKTYPE_IPV4
                || linkType == PcapReader.LINKTYPE_IPV6) {
            return 0;
        }
        throw new IllegalStateException("cannot build IP frames for link type " + linkType);
    }

    private static void udp(ByteBuffer f, int at, int srcPort, int dstPort, ByteBuffer payload) {
        int n = payload.remaining();
        f.putShort(at, (short) srcPort);
        f.putShort(at + 2, (short) dstPort);
        f.putShort(at + 4, (short) (8 + n));
        f.putShort(at + 6, (short) 0);
        f.put(at + 8, payload, payload.position(), n);
    }

    private void header(long timestampNanos, int incl, int orig) throws IOException {
        long sec = Math.floorDiv(timestampNanos, 1_000_000_000L);
        long sub = Math.floorMod(timestampNanos, 1_000_000_000L);
        recordHeader.putInt(0, (int) sec);
        recordHeader.putInt(4, (int) (nanos ? sub : sub / 1000));
        recordHeader.putInt(8, incl);
        recordHeader.putInt(12, orig);
        out.write(recordHeader.array());
    }

    @Override
    public synchronized void flush() throws IOException {
        out.flush();
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}

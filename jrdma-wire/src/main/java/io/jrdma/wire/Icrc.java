package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.LE32;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * Invariant CRC (ICRC) of a RoCEv2 packet: 4 bytes after the payload and pad.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |       ICRC (little-endian: least significant byte first)      |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>Computation (Linux {@code rxe_icrc.c}; IBA Vol 1 §7.8 "invariant CRC" and Annex A17
 * RoCEv2; jrdma spec D6): the standard reflected CRC-32 (zlib/Ethernet,
 * {@link java.util.zip.CRC32}) over
 * {@code 8 x 0xFF (masked LRH) | IP header | UDP header | BTH | extended headers | payload | pad},
 * where in the copies of the headers these fields are replaced by all-ones:
 * <ul>
 * <li>IPv4: TOS, TTL, header checksum (the Identification field is covered!);</li>
 * <li>IPv6: traffic class and flow label (the first 4 bytes become {@code 6F FF FF FF}) and
 *     hop limit;</li>
 * <li>UDP: checksum;</li>
 * <li>BTH: byte 4 (FECN, BECN, resv6a).</li>
 * </ul>
 * The result ({@link CRC32#getValue()}, already complemented) is stored on the wire
 * <b>little-endian</b> (rxe stores a host-order u32 on x86); {@link #read} and {@link #write}
 * do that. Checked against every packet of the rxe captures.
 *
 * <p>An instance holds a {@link CRC32} and a small direct scratch buffer for the pseudo
 * header, so it is <b>not thread-safe</b>: use one per thread. The compute methods do not
 * allocate; they temporarily change the position and limit of the caller's buffer and restore
 * them before returning. Direct buffers and array-backed heap buffers are both fine
 * (read-only heap buffers would make {@link CRC32} copy).
 */
public final class Icrc {
    /** ICRC length in bytes. */
    public static final int LENGTH = 4;

    private static final int LRH = 8;
    private static final int IPV4 = 20;
    private static final int IPV6 = 40;
    private static final int UDP = 8;

    private final CRC32 crc = new CRC32();
    private final ByteBuffer scratch =
            ByteBuffer.allocateDirect(128).order(ByteOrder.BIG_ENDIAN);

    /** Creates a calculator (one per thread). */
    public Icrc() {
        for (int i = 0; i < LRH; i++) {
            scratch.put(i, (byte) 0xFF);
        }
    }

    /**
     * ICRC of a packet to be sent over IPv4 the way rxe sends it.
     *
     * @param srcAddr IPv4 source address (big-endian int, e.g. 0x0A4D000B = 10.77.0.11)
     * @param dstAddr IPv4 destination address
     * @param ipId the IPv4 Identification field the packet will carry (0 for an unconnected
     *        Linux socket with DF set)
     * @param srcPort UDP source port
     * @param dstPort UDP destination port (4791)
     * @param roce buffer with the BTH at {@code off}
     * @param off offset of the BTH in {@code roce} (absolute index)
     * @param len bytes from the BTH through the pad, ICRC excluded
     * @return the ICRC value (write it with {@link #write})
     */
    public int computeIpv4(int srcAddr, int dstAddr, int ipId, int srcPort, int dstPort,
            ByteBuffer roce, int off, int len) {
        checkRange(roce, off, len);
        ByteBuffer p = scratch;
        p.clear();
        int ip = LRH;
        p.putShort(ip, (short) 0x45FF);                   // version/IHL, TOS masked
        p.putShort(ip + 2, (short) (IPV4 + UDP + len + LENGTH));
        p.putShort(ip + 4, (short) ipId);
        p.putShort(ip + 6, (short) 0x4000);               // DF, fragment offset 0
        p.putShort(ip + 8, (short) 0xFF11);               // TTL masked, protocol UDP
        p.putShort(ip + 10, (short) 0xFFFF);              // header checksum masked
        p.putInt(ip + 12, srcAddr);
        p.putInt(ip + 16, dstAddr);
        putUdp(ip + IPV4, srcPort, dstPort, UDP + len + LENGTH);
        return finish(ip + IPV4 + UDP, roce, off, len);
    }

    /**
     * ICRC of a packet to be sent over IPv6.
     *
     * @param srcAddr 16-byte IPv6 source address
     * @param dstAddr 16-byte IPv6 destination address
     * @param srcPort UDP source port
     * @param dstPort UDP destination port
     * @param roce buffer with the BTH at {@code off}
     * @param off offset of the BTH (absolute index)
     * @param len bytes from the BTH through the pad, ICRC excluded
     * @return the ICRC value
     */
    public int computeIpv6(byte[] srcAddr, byte[] dstAddr, int srcPort, int dstPort,
            ByteBuffer roce, int off, int len) {
        if (srcAddr.length != 16 || dstAddr.length != 16) {
            throw new IllegalArgumentException("IPv6 addresses must be 16 bytes");
        }
        checkRange(roce, off, len);
        ByteBuffer p = scratch;
        p.clear();
        int ip = LRH;
        p.putInt(ip, 0x6FFF_FFFF);                        // version 6, TC + flow label masked
        p.putShort(ip + 4, (short) (UDP + len + LENGTH)); // payload length
        p.putShort(ip + 6, (short) 0x11FF);               // next header UDP, hop limit masked
        p.put(ip + 8, srcAddr);
        p.put(ip + 24, dstAddr);
        putUdp(ip + IPV6, srcPort, dstPort, UDP + len + LENGTH);
        return finish(ip + IPV6 + UDP, roce, off, len);
    }

    /**
     * ICRC of a received (or captured) packet, from its real IP and UDP headers.
     *
     * @param frame buffer holding the IP header at {@code ipOff}, then UDP, then the RoCE
     *        packet
     * @param ipOff offset of the IPv4 or IPv6 header (the version is its first nibble)
     * @param len bytes from the BTH through the pad, ICRC excluded
     * @return the ICRC value
     * @throws IllegalArgumentException if the header is not IPv4/IPv6 carrying UDP directly
     */
    public int computeFromIpHeader(ByteBuffer frame, int ipOff, int len) {
        if (ipOff < 0 || ipOff >= frame.capacity()) {
            throw new IndexOutOfBoundsException("ipOff " + ipOff);
        }
        int oldPos = frame.position();
        int oldLim = frame.limit();
        try {
            frame.limit(frame.capacity());
            return fromIpHeader(frame, ipOff, len);
        } finally {
            frame.limit(oldLim);
            frame.position(oldPos);
        }
    }

    private int fromIpHeader(ByteBuffer frame, int ipOff, int len) {
        int first = frame.get(ipOff) & 0xFF;
        int version = first >>> 4;
        ByteBuffer p = scratch;
        p.clear();
        int ip = LRH;
        int udpIn;
        int udpOut;
        if (version == 4) {
            int ihl = (first & 0x0F) * 4;
            if (ihl < IPV4) {
                throw new IllegalArgumentException("bad IPv4 IHL " + ihl);
            }
            udpIn = ipOff + ihl;
            checkRange(frame, udpIn + UDP, len);
            if ((frame.get(ipOff + 9) & 0xFF) != 17) {
                throw new IllegalArgumentException("IPv4 protocol is not UDP");
            }
            // rxe never sends IP options; with options only the fixed 20 bytes are covered.
            p.put(ip, frame, ipOff, IPV4);
            p.put(ip + 1, (byte) 0xFF);                   // TOS
            p.put(ip + 8, (byte) 0xFF);                   // TTL
            p.putShort(ip + 10, (short) 0xFFFF);          // header checksum
            udpOut = ip + IPV4;
        } else if (version == 6) {
            udpIn = ipOff + IPV6;
            checkRange(frame, udpIn + UDP, len);
            if ((frame.get(ipOff + 6) & 0xFF) != 17) {
                throw new IllegalArgumentException("IPv6 next header is not UDP");
            }
            p.put(ip, frame, ipOff, IPV6);
            p.putInt(ip, 0x6FFF_FFFF);                    // traffic class + flow label
            p.put(ip + 7, (byte) 0xFF);                   // hop limit
            udpOut = ip + IPV6;
        } else {
            throw new IllegalArgumentException("IP version " + version);
        }
        p.put(udpOut, frame, udpIn, UDP);
        p.putShort(udpOut + 6, (short) 0xFFFF);           // UDP checksum
        return finish(udpOut + UDP, frame, udpIn + UDP, len);
    }

    private void putUdp(int at, int srcPort, int dstPort, int udpLength) {
        scratch.putShort(at, (short) srcPort);
        scratch.putShort(at + 2, (short) dstPort);
        scratch.putShort(at + 4, (short) udpLength);
        scratch.putShort(at + 6, (short) 0xFFFF);         // UDP checksum masked
    }

    /** Appends the masked BTH to the pseudo header, then CRCs pseudo header and the rest. */
    private int finish(int pseudoLen, ByteBuffer buf, int bthOff, int len) {
        ByteBuffer p = scratch;
        int oldPos = buf.position();
        int oldLim = buf.limit();
        try {
            buf.limit(bthOff + len);
            p.put(pseudoLen, buf, bthOff, Bth.LENGTH);
            p.put(pseudoLen + 4, (byte) 0xFF);            // BTH resv8a (FECN, BECN, resv6a)
            p.limit(pseudoLen + Bth.LENGTH).position(0);
            crc.reset();
            crc.update(p);
            buf.position(bthOff + Bth.LENGTH);
            crc.update(buf);
        } finally {
            buf.limit(oldLim);
            buf.position(oldPos);
        }
        return (int) crc.getValue();
    }

    private static void checkRange(ByteBuffer b, int off, int len) {
        if (off < 0 || len < Bth.LENGTH || (long) off + len > b.capacity()) {
            throw new IndexOutOfBoundsException(
                    "RoCE packet [" + off + ", +" + len + ") outside buffer of capacity "
                            + b.capacity() + " (len must be >= 12)");
        }
    }

    /** Reads the ICRC stored at {@code off} (little-endian on the wire). */
    public static int read(MemorySegment s, long off) {
        return s.get(LE32, off);
    }

    /** Writes the ICRC at {@code off} (little-endian on the wire). */
    public static void write(MemorySegment s, long off, int icrc) {
        s.set(LE32, off, icrc);
    }
}

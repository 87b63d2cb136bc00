package io.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The 40-byte global route header a UD receive finds at the start of its buffer: the first 40 bytes
 * of the first scatter entry of the receive work request, before the message's payload (which starts
 * at byte 40); {@link WorkCompletion#byteLen()} counts them. Whether they hold a header is
 * {@link WorkCompletion#GRH}; on RoCE they always do. Over RoCEv2 the header is the packet's IP
 * header, as Linux rxe writes it:
 * <ul>
 * <li>IPv6: the 40-byte IPv6 header (it is the IBA GRH's layout): version 6, traffic class, flow
 *     label, payload length, next header, hop limit, source GID (bytes 8..23), destination GID
 *     (bytes 24..39);</li>
 * <li>IPv4: bytes 0..19 are undefined (jrdma's providers zero them) and the 20-byte IPv4 header is in
 *     bytes 20..39 (version 4, TOS at byte 21, TTL at 28, source address at 32..35, destination at
 *     36..39); the GIDs are those addresses mapped into IPv6 ({@code ::ffff:a.b.c.d}).</li>
 * </ul>
 * rdma-core's {@code ibv_init_ah_from_wc} reads the header the same way; {@link DeviceContext#initAhFromWc}
 * does here.
 *
 * @param sgid         the sender's GID (the packet's source address)
 * @param dgid         the GID the packet was sent to (the receiver's address)
 * @param trafficClass the traffic class (IPv6) or TOS byte (IPv4)
 * @param flowLabel    the IPv6 flow label, 0 for IPv4
 * @param hopLimit     the hop limit (IPv6) or TTL (IPv4) the packet arrived with
 * @param ipv4         true when the header is an IPv4 header at bytes 20..39
 */
public record Grh(Gid sgid, Gid dgid, int trafficClass, int flowLabel, int hopLimit, boolean ipv4) {
    /** The bytes in front of every UD receive's payload. */
    public static final int LENGTH = 40;
    /** Where an IPv4 header starts in the 40 bytes. */
    public static final int IPV4_OFFSET = 20;

    /**
     * {@return the header in the first 40 bytes of {@code grh}}
     *
     * @param grh at least 40 bytes: the start of a UD receive's buffer
     * @throws RdmaException EINVAL if it is shorter than 40 bytes or holds neither an IPv6 header (version 6 at
     *                       byte 0) nor an IPv4 header (version 4 at byte 20)
     */
    public static Grh parse(MemorySegment grh) {
        if (grh.byteSize() < LENGTH) {
            throw new RdmaException(RdmaException.Errno.EINVAL,
                    "a GRH has 40 bytes, the buffer has " + grh.byteSize() + ": pass the start of the UD receive buffer");
        }
        int b0 = grh.get(ValueLayout.JAVA_BYTE, 0) & 0xFF;
        if (b0 >>> 4 == 6) {
            int word = grh.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 0);
            return new Grh(Gid.of(grh.asSlice(8, 16).toArray(ValueLayout.JAVA_BYTE)),
                    Gid.of(grh.asSlice(24, 16).toArray(ValueLayout.JAVA_BYTE)), (word >>> 20) & 0xFF, word & 0xFFFFF,
                    grh.get(ValueLayout.JAVA_BYTE, 7) & 0xFF, false);
        }
        int v4 = grh.get(ValueLayout.JAVA_BYTE, IPV4_OFFSET) & 0xFF;
        if (v4 >>> 4 == 4) {
            return new Grh(mapped(grh, IPV4_OFFSET + 12), mapped(grh, IPV4_OFFSET + 16),
                    grh.get(ValueLayout.JAVA_BYTE, IPV4_OFFSET + 1) & 0xFF, 0,
                    grh.get(ValueLayout.JAVA_BYTE, IPV4_OFFSET + 8) & 0xFF, true);
        }
        throw new RdmaException(RdmaException.Errno.EINVAL, "the 40 bytes hold no GRH: byte 0 is 0x"
                + Integer.toHexString(b0) + " (IPv6 needs version 6) and byte 20 is 0x" + Integer.toHexString(v4)
                + " (IPv4 needs version 4); was the completion flagged WorkCompletion.GRH?");
    }

    private static Gid mapped(MemorySegment s, long off) {
        byte[] g = new byte[16];
        g[10] = (byte) 0xFF;
        g[11] = (byte) 0xFF;
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, off, g, 12, 4);
        return Gid.of(g);
    }
}

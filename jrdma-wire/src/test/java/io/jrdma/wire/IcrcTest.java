package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** ICRC: the spec's self-computed vector (D6 step 5), masking, IPv6, buffer hygiene. */
class IcrcTest {
    /** Spec D6 step 5: IPv4 + UDP + BTH(SEND_ONLY) + deadbeef + ICRC, no Ethernet. */
    static final byte[] VECTOR = HexFormat.of().parseHex(
            "45000030000040004011b769c0a80101c0a80102c00012b7001c0000"
            + "0400ffff0000001180000001" + "deadbeef" + "6ad84748");
    static final int VECTOR_ICRC = 0x4847D86A;

    @Test
    void specVectorComputeIpv4() {
        ByteBuffer roce = ByteBuffer.allocateDirect(100);
        roce.put(10, VECTOR, 28, 20);
        int v = new Icrc().computeIpv4(0xC0A80101, 0xC0A80102, 0, 0xC000, 4791, roce, 10, 16);
        assertEquals(VECTOR_ICRC, v);
        assertEquals(VECTOR_ICRC, Icrc.read(MemorySegment.ofBuffer(roce), 26));
        // heap buffers work as well
        ByteBuffer heap = ByteBuffer.wrap(VECTOR);
        assertEquals(VECTOR_ICRC,
                new Icrc().computeIpv4(0xC0A80101, 0xC0A80102, 0, 0xC000, 4791, heap, 28, 16));
    }

    @Test
    void specVectorFromIpHeader() {
        ByteBuffer frame = ByteBuffer.allocateDirect(VECTOR.length);
        frame.put(0, VECTOR);
        Icrc icrc = new Icrc();
        assertEquals(VECTOR_ICRC, icrc.computeFromIpHeader(frame, 0, 16));
        assertEquals(VECTOR_ICRC, icrc.computeFromIpHeader(ByteBuffer.wrap(VECTOR), 0, 16));
        // ... and with an Ethernet header in front
        ByteBuffer eth = ByteBuffer.allocateDirect(14 + VECTOR.length);
        eth.putShort(12, (short) 0x0800).put(14, VECTOR);
        assertEquals(VECTOR_ICRC, icrc.computeFromIpHeader(eth, EthernetIp.ipOffset(eth), 16));
        assertEquals(VECTOR_ICRC, Icrc.read(MemorySegment.ofBuffer(eth), 14 + 44));
    }

    @Test
    void maskedFieldsDoNotMatterButTheIpIdDoes() {
        Icrc icrc = new Icrc();
        ByteBuffer f = ByteBuffer.wrap(VECTOR.clone());
        f.put(1, (byte) 0xB8);          // TOS (DSCP EF)
        f.put(8, (byte) 1);             // TTL
        f.putShort(10, (short) 0x1234); // IP checksum
        f.putShort(26, (short) 0xABCD); // UDP checksum
        f.put(28 + 4, (byte) 0xC0);     // FECN/BECN
        assertEquals(VECTOR_ICRC, icrc.computeFromIpHeader(f, 0, 16));
        f.putShort(4, (short) 1);       // IP identification is covered
        assertNotEquals(VECTOR_ICRC, icrc.computeFromIpHeader(f, 0, 16));
        f.putShort(4, (short) 0);
        f.put(28 + 11, (byte) 2);       // PSN is covered
        assertNotEquals(VECTOR_ICRC, icrc.computeFromIpHeader(f, 0, 16));
    }

    @Test
    void callerBufferStateIsRestored() {
        ByteBuffer roce = ByteBuffer.allocateDirect(64);
        roce.put(8, VECTOR, 28, 20);
        roce.position(5).limit(9);       // a limit inside the packet must not matter
        Icrc icrc = new Icrc();
        assertEquals(VECTOR_ICRC,
                icrc.computeIpv4(0xC0A80101, 0xC0A80102, 0, 0xC000, 4791, roce, 8, 16));
        assertEquals(5, roce.position());
        assertEquals(9, roce.limit());
        ByteBuffer frame = ByteBuffer.allocateDirect(VECTOR.length).put(0, VECTOR);
        frame.position(40).limit(41);
        assertEquals(VECTOR_ICRC, icrc.computeFromIpHeader(frame, 0, 16));
        assertEquals(40, frame.position());
        assertEquals(41, frame.limit());
        assertThrows(IndexOutOfBoundsException.class,
                () -> icrc.computeIpv4(1, 2, 0, 3, 4, roce, 60, 16));
        assertThrows(IndexOutOfBoundsException.class,
                () -> icrc.computeIpv4(1, 2, 0, 3, 4, roce, 0, 8));
        assertEquals(5, roce.position());
        assertEquals(9, roce.limit());
    }

    @Test
    void ipv6MatchesFromIpHeaderAndMasksTrafficClassFlowLabelHopLimit() {
        byte[] src = HexFormat.of().parseHex("fe800000000000000000000000000001");
        byte[] dst = HexFormat.of().parseHex("20010db8000000000000000000000002");
        byte[] roce = new byte[20];
        System.arraycopy(VECTOR, 28, roce, 0, 16);
        Icrc icrc = new Icrc();
        int v = icrc.computeIpv6(src, dst, 0xC123, 4791, ByteBuffer.wrap(roce), 0, 16);
        // build the frame: IPv6 with non-zero TC, flow label, some hop limit, UDP checksum
        ByteBuffer f = ByteBuffer.allocate(40 + 8 + 20);
        f.putInt(0, 0x6B812345).putShort(4, (short) (8 + 20)).put(6, (byte) 17).put(7, (byte) 3);
        f.put(8, src).put(24, dst);
        f.putShort(40, (short) 0xC123).putShort(42, (short) 4791).putShort(44, (short) 28)
                .putShort(46, (short) 0x5555);
        f.put(48, roce, 0, 16);
        assertEquals(v, icrc.computeFromIpHeader(f, 0, 16));
        assertNotEquals(v, new Icrc().computeIpv4(0xC0A80101, 0xC0A80102, 0, 0xC123, 4791,
                ByteBuffer.wrap(roce), 0, 16));
        f.put(8 + 15, (byte) 2);         // the address is covered
        assertNotEquals(v, icrc.computeFromIpHeader(f, 0, 16));
    }
}

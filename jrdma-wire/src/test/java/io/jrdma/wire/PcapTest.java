package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

/** PcapReader / PcapWriter / EthernetIp. */
class PcapTest {

    @Test
    void captureHeader() throws Exception {
        try (PcapReader r = new PcapReader(
                Files.newInputStream(Captures.path("roce-ib_read_lat.pcap")))) {
            assertEquals(PcapReader.LINKTYPE_ETHERNET, r.linkType());
            assertEquals(ByteOrder.LITTLE_ENDIAN, r.byteOrder());
            assertEquals(2, r.versionMajor());
            assertEquals(4, r.versionMinor());
            assertEquals(262144, r.snapLength());
            List<PcapReader.Record> recs = r.readAll();
            assertEquals(22, recs.size());
            PcapReader.Record first = recs.getFirst();
            assertEquals(74, first.capturedLength());
            assertEquals(74, first.originalLength());
            assertEquals(1795280072_777214_000L, first.timestampNanos());
            assertNull(r.next());
        }
    }

    @Test
    void writeThenReadBothResolutions() throws Exception {
        for (boolean nanos : new boolean[] {false, true}) {
            ByteArrayOutputStream bos = new ByteArrayOutputStream();
            byte[] a = {1, 2, 3, 4, 5};
            try (PcapWriter w = new PcapWriter(bos, PcapReader.LINKTYPE_RAW, nanos, 4)) {
                w.write(1_500_000_123_456_789L, a, 0, a.length);
                w.write(7_000L, ByteBuffer.wrap(a, 1, 2));
            }
            try (PcapReader r = new PcapReader(new ByteArrayInputStream(bos.toByteArray()))) {
                assertEquals(PcapReader.LINKTYPE_RAW, r.linkType());
                assertEquals(nanos, r.nanosecond());
                PcapReader.Record x = r.next();
                assertArrayEquals(new byte[] {1, 2, 3, 4}, x.data());   // snap length 4
                assertEquals(5, x.originalLength());
                assertEquals(nanos ? 1_500_000_123_456_789L : 1_500_000_123_456_000L,
                        x.timestampNanos());
                PcapReader.Record y = r.next();
                assertArrayEquals(new byte[] {2, 3}, y.data());
                assertEquals(7_000L, y.timestampNanos());
                assertNull(r.next());
            }
        }
    }

    @Test
    void readsBigEndianFiles() throws Exception {
        ByteBuffer b = ByteBuffer.allocate(24 + 16 + 3).order(ByteOrder.BIG_ENDIAN);
        b.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0)
                .putInt(65535).putInt(1);
        b.putInt(10).putInt(20).putInt(3).putInt(60).put(new byte[] {9, 8, 7});
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(b.array()))) {
            assertEquals(ByteOrder.BIG_ENDIAN, r.byteOrder());
            assertEquals(1, r.linkType());
            assertEquals(65535, r.snapLength());
            PcapReader.Record x = r.next();
            assertEquals(10_000_020_000L, x.timestampNanos());
            assertEquals(60, x.originalLength());
            assertArrayEquals(new byte[] {9, 8, 7}, x.data());
            assertNull(r.next());
        }
    }

    @Test
    void rejectsGarbageAndTruncation() {
        assertThrows(IOException.class,
                () -> new PcapReader(new ByteArrayInputStream(new byte[24])));
        assertThrows(IOException.class,
                () -> new PcapReader(new ByteArrayInputStream(new byte[10])));
        ByteBuffer b = ByteBuffer.allocate(24 + 16 + 1).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0)
                .putInt(65535).putInt(1);
        b.putInt(0).putInt(0).putInt(5).putInt(5).put((byte) 1);
        assertThrows(IOException.class, () -> {
            try (PcapReader r = new PcapReader(new ByteArrayInputStream(b.array()))) {
                r.next();
            }
        });
    }

    @Test
    void writeIpv4UdpRoundTripsThroughEthernetIpAndIcrc() throws Exception {
        for (int linkType : new int[] {PcapReader.LINKTYPE_ETHERNET, PcapReader.LINKTYPE_RAW}) {
            byte[] roce = new byte[20];
            System.arraycopy(IcrcTest.VECTOR, 28, roce, 0, 20);
            ByteArrayOutputStream bos = new ByteArrayOutputStream();
            try (PcapWriter w = new PcapWriter(bos, linkType)) {
                w.writeIpv4Udp(1L, 0xC0A80101, 0xC0A80102, 0, 0xC000, 4791, ByteBuffer.wrap(roce));
            }
            List<PcapReader.Record> recs =
                    new PcapReader(new ByteArrayInputStream(bos.toByteArray())).readAll();
            ByteBuffer f = recs.getFirst().buffer();
            EthernetIp.Udp u = EthernetIp.parseUdp(f, linkType);
            assertNotNull(u);
            assertEquals(linkType == 1 ? 14 : 0, u.ipOffset());
            assertEquals(4, u.ipVersion());
            assertEquals(0xC000, u.srcPort());
            assertEquals(4791, u.dstPort());
            assertEquals(20, u.payloadLength());
            assertEquals(16, u.roceLengthWithoutIcrc());
            // header identical to the spec vector's (which has a valid IPv4 checksum)
            byte[] ipUdp = new byte[28];
            f.get(u.ipOffset(), ipUdp);
            byte[] expected = new byte[28];
            System.arraycopy(IcrcTest.VECTOR, 0, expected, 0, 28);
            assertArrayEquals(expected, ipUdp);
            assertEquals(IcrcTest.VECTOR_ICRC, new Icrc().computeFromIpHeader(f, u.ipOffset(), 16));
        }
    }

    @Test
    void writeIpv6Udp() throws Exception {
        byte[] src = new byte[16];
        byte[] dst = new byte[16];
        src[15] = 1;
        dst[15] = 2;
        byte[] roce = new byte[20];
        System.arraycopy(IcrcTest.VECTOR, 28, roce, 0, 16);
        Icrc icrc = new Icrc();
        int v = icrc.computeIpv6(src, dst, 0xC001, 4791, ByteBuffer.wrap(roce), 0, 16);
        Icrc.write(MemorySegment.ofArray(roce), 16, v);
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (PcapWriter w = new PcapWriter(bos, PcapReader.LINKTYPE_ETHERNET)) {
            w.writeIpv6Udp(1L, src, dst, 0xC001, 4791, ByteBuffer.wrap(roce));
        }
        ByteBuffer f = new PcapReader(new ByteArrayInputStream(bos.toByteArray())).next().buffer();
        EthernetIp.Udp u = EthernetIp.parseUdp(f);
        assertEquals(6, u.ipVersion());
        assertEquals(14 + 40, u.udpOffset());
        assertArrayEquals(src, EthernetIp.ipv6Src(f, u.ipOffset()));
        assertArrayEquals(dst, EthernetIp.ipv6Dst(f, u.ipOffset()));
        assertEquals(v, icrc.computeFromIpHeader(f, u.ipOffset(), 16));
        assertEquals(v, Icrc.read(MemorySegment.ofBuffer(f), u.payloadOffset() + 16));
    }

    @Test
    void vlanTaggedFrames() throws Exception {
        PcapReader.Record rec = Captures.read("roce-ib_write_lat.pcap").records().getFirst();
        byte[] plain = rec.data();
        for (int tags = 1; tags <= 2; tags++) {
            byte[] tagged = new byte[plain.length + 4 * tags];
            System.arraycopy(plain, 0, tagged, 0, 12);
            for (int t = 0; t < tags; t++) {
                int at = 12 + 4 * t;
                int tpid = tags == 2 && t == 0 ? EthernetIp.ETHERTYPE_QINQ : EthernetIp.ETHERTYPE_VLAN;
                tagged[at] = (byte) (tpid >>> 8);
                tagged[at + 1] = (byte) tpid;
                tagged[at + 2] = (byte) 0x60;   // PCP 3
                tagged[at + 3] = (byte) (100 + t);
            }
            System.arraycopy(plain, 12, tagged, 12 + 4 * tags, plain.length - 12);
            ByteBuffer f = ByteBuffer.wrap(tagged);
            EthernetIp.Udp u = EthernetIp.parseUdp(f);
            assertEquals(14 + 4 * tags, u.ipOffset());
            assertEquals(4791, u.dstPort());
            int icrc = new Icrc().computeFromIpHeader(f, u.ipOffset(), u.roceLengthWithoutIcrc());
            assertEquals(Icrc.read(MemorySegment.ofArray(tagged),
                    u.payloadOffset() + u.roceLengthWithoutIcrc()), icrc);
        }
    }

    @Test
    void nonUdpAndShortFrames() {
        assertNull(EthernetIp.parseUdp(ByteBuffer.allocate(10)));
        ByteBuffer arp = ByteBuffer.allocate(60).putShort(12, (short) 0x0806);
        assertNull(EthernetIp.parseUdp(arp));
        ByteBuffer tcp = ByteBuffer.allocate(60).putShort(12, (short) 0x0800);
        tcp.put(14, (byte) 0x45).put(14 + 9, (byte) 6);
        assertEquals(14, EthernetIp.ipOffset(tcp));
        assertEquals(-1, EthernetIp.udpOffset(tcp, 14));
        ByteBuffer frag = ByteBuffer.allocate(60).putShort(12, (short) 0x0800);
        frag.put(14, (byte) 0x45).put(14 + 9, (byte) 17).putShort(14 + 6, (short) 0x2000);
        assertEquals(-1, EthernetIp.udpOffset(frag, 14));
        assertTrue(EthernetIp.ipOffset(ByteBuffer.allocate(20), 999) < 0);
    }

    /** Linux cooked captures: v1's protocol at byte 14 and IP at 16; v2's (tcpdump -i any) protocol first, IP at 20. */
    @Test
    void linuxCookedV1AndV2() {
        ByteBuffer v1 = ByteBuffer.allocate(60).putShort(14, (short) 0x86DD).put(16, (byte) 0x60);
        assertEquals(16, EthernetIp.ipOffset(v1, PcapReader.LINKTYPE_LINUX_SLL));
        ByteBuffer v2 = ByteBuffer.allocate(60).putShort(0, (short) 0x0800).putShort(8, (short) 1).put(20, (byte) 0x45);
        assertEquals(20, EthernetIp.ipOffset(v2, PcapReader.LINKTYPE_LINUX_SLL2));
        assertEquals(-1, EthernetIp.ipOffset(v2.putShort(0, (short) 0x0806), PcapReader.LINKTYPE_LINUX_SLL2), "ARP");
        assertEquals(-1, EthernetIp.ipOffset(ByteBuffer.allocate(20), PcapReader.LINKTYPE_LINUX_SLL2), "no IP byte");
        assertEquals(20, EthernetIp.linkHeaderLength(PcapReader.LINKTYPE_LINUX_SLL2));
        assertEquals(16, EthernetIp.linkHeaderLength(PcapReader.LINKTYPE_LINUX_SLL));
        assertEquals(14, EthernetIp.linkHeaderLength(PcapReader.LINKTYPE_ETHERNET));
        assertEquals(0, EthernetIp.linkHeaderLength(PcapReader.LINKTYPE_RAW));
        assertEquals(-1, EthernetIp.linkHeaderLength(0));
    }
}

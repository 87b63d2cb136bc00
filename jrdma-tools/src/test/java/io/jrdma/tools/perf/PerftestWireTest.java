package io.jrdma.tools.perf;

import io.jrdma.tools.oob.SideChannelException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * perftest 4.5's side-channel bytes, as its source writes them (linux-rdma/perftest tag
 * v4.5-0.17, src/perftest_communication.c and .h): the version buffer of exchange_versions,
 * check_sys_data's ints, check_mtu's string, ethernet_write_keys' KEY_PRINT_FMT_GID message,
 * xchg_bw_reports' 8-byte values and ctx_close_connection's "done".
 */
class PerftestWireTest {
    /** The 108-byte message ib_write_bw's client sent in interop/harness/results/roce-ib_write_bw.txt. */
    static byte[] rxeWriteBwClientKeys() {
        String t = "0000:0001:000013:3a68dc:0000044a:0000560355551000:"
                + "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:0c:00000000:";
        return Arrays.copyOf(t.getBytes(StandardCharsets.US_ASCII), 108);
    }

    @Test
    void versionIsASixteenByteZeroPaddedString() {
        byte[] v = PerftestWire.version(PerftestWire.VERSION);
        assertEquals(16, v.length);
        assertArrayEquals(Arrays.copyOf(new byte[] {'6', '.', '0', '6'}, 16), v);
        assertEquals(6.06, PerftestWire.checkVersion(v));
        assertEquals(5.7, PerftestWire.checkVersion(PerftestWire.version("5.70")));
    }

    @Test
    void oldOrForeignVersionsAreRefused() {
        String old = assertThrows(SideChannelException.class,
                () -> PerftestWire.checkVersion(PerftestWire.version("5.60"))).getMessage();
        assertTrue(old.startsWith("Current implementation is not compatible with versions older than 5.70"), old);
        String foreign = assertThrows(SideChannelException.class,
                () -> PerftestWire.checkVersion("0000:000011:95".getBytes(StandardCharsets.US_ASCII))).getMessage();
        assertTrue(foreign.contains("the peer is not perftest"), foreign);
        String jrcm = assertThrows(SideChannelException.class,
                () -> PerftestWire.checkVersion(Arrays.copyOf("JRCM".getBytes(StandardCharsets.US_ASCII), 16)))
                .getMessage();
        assertTrue(jrcm.contains("\"JRCM\\0"), jrcm);
    }

    @Test
    void systemDataAreBigEndianInts() {
        assertArrayEquals(new byte[] {0, 0, 0x10, 0}, PerftestWire.int32(4096)); // hton_int(page size)
        assertArrayEquals(new byte[] {0, 0, 0, 64}, PerftestWire.int32(64));      // hton_int(cache line)
        assertEquals(65536, PerftestWire.int32(new byte[] {0, 1, 0, 0}));
    }

    @Test
    void mtuIsTheEnumAsTwoCharacters() {
        assertArrayEquals(new byte[] {'3', 0}, PerftestWire.mtu(3)); // sprintf(cur, "%d", IBV_MTU_1024), 2 bytes sent
        assertArrayEquals(new byte[] {'5', 0}, PerftestWire.mtu(5));
        assertEquals(3, PerftestWire.mtuCode(new byte[] {'3', 0}));
        assertEquals(0, PerftestWire.mtuCode(new byte[] {'9', 0}), "out of range: perftest keeps its own");
        String bad = assertThrows(SideChannelException.class, () -> PerftestWire.mtuCode(new byte[] {'x', 'y'}))
                .getMessage();
        assertTrue(bad.contains("a digit and a NUL"), bad);
    }

    @Test
    void keysAreKeyPrintFmtGid() {
        byte[] gid = HexFormat.of().parseHex("00000000000000000000ffff0a4d000c");
        PerftestWire.Dest d = new PerftestWire.Dest(0, 1, 0x13, 0x3a68dc, 0x44a, 0x560355551000L, gid, 0);
        byte[] m = PerftestWire.encode(d);
        assertEquals(108, m.length);
        assertArrayEquals(rxeWriteBwClientKeys(), m);
        assertEquals(d, PerftestWire.decode(rxeWriteBwClientKeys()));
        // a READ peer: out_reads 128; jrdma's 32-bit keys and 47-bit addresses fill the widths
        PerftestWire.Dest r = new PerftestWire.Dest(0x12b7, 128, 0xabcdef, 0xfffffe, 0x8a3bc1d2, 0x7f1234567000L,
                HexFormat.of().parseHex("fe8000000000000000fc00fffe000001"), 0);
        String text = new String(PerftestWire.encode(r), 0, 107, StandardCharsets.US_ASCII);
        assertEquals("12b7:0080:abcdef:fffffe:8a3bc1d2:00007f1234567000:"
                + "fe:80:00:00:00:00:00:00:00:fc:00:ff:fe:00:00:01:00000000:", text);
        assertEquals(r, PerftestWire.decode(PerftestWire.encode(r)));
    }

    @Test
    void badKeysAreRefusedWithAReason() {
        assertTrue(badKeys(Arrays.copyOf(rxeWriteBwClientKeys(), 59)).contains("it has 59 bytes, not 108"));
        byte[] noNul = rxeWriteBwClientKeys();
        noNul[107] = ':';
        assertTrue(badKeys(noNul).contains("not NUL-terminated"));
        byte[] fewer = Arrays.copyOf("0000:0001:000013:3a68dc".getBytes(StandardCharsets.US_ASCII), 108);
        assertTrue(badKeys(fewer).contains("expected LID:OUT:QPN:PSN:RKEY:VADDR:<16 GID bytes>:SRQN:"),
                badKeys(fewer));
        byte[] hexless = rxeWriteBwClientKeys();
        hexless[17] = 'q';
        assertTrue(badKeys(hexless).contains("the PSN 'qa68dc' is not hexadecimal"), badKeys(hexless));
        byte[] pingpong = Arrays.copyOf("0000:000011:95084e:00000000000000000000ffff0a4d000c"
                .getBytes(StandardCharsets.US_ASCII), 108);
        assertTrue(badKeys(pingpong).contains("not perftest's"), badKeys(pingpong));
    }

    /**
     * ib_send_bw -R's client keys (its first per-QP handshake, comm MSN 7) on Linux siw, from
     * testdata/pcaps/iwarp-ib_send_bw.pcap: rkey and vaddr name the credit word that the server's
     * credit WRITEs hit later in the capture (STag 0xd0811e00, TO 0x55bc73031f44); the padding at
     * offset 20 is uninitialized stack ({@code 8a7f0000}).
     */
    static final String SIW_SEND_BW_CLIENT_KEYS = "00000000" + "00000001" + "00000002" + "00357e4b" + "d0811e00"
            + "8a7f0000" + "000055bc73031f44" + "52540077011200000000000000000000" + "00000000" + "00000000";
    /** ib_read_lat -R's client keys on siw (testdata/pcaps/iwarp-ib_read_lat.pcap): out_reads 128, zero padding. */
    static final String SIW_READ_LAT_CLIENT_KEYS = "00000000" + "00000080" + "00000002" + "006924a1" + "a72c8b00"
            + "00000000" + "000055e81fa9e000" + "52540077011200000000000000000000" + "00000000" + "00000000";

    @Test
    void rdmaCmKeysAreTheBigEndianStruct() {
        byte[] gid = HexFormat.of().parseHex("52540077011200000000000000000000");
        byte[] send = HexFormat.of().parseHex(SIW_SEND_BW_CLIENT_KEYS);
        PerftestWire.Dest d = PerftestWire.decodeDest(send);
        assertEquals(new PerftestWire.Dest(0, 1, 2, 0x357e4b, 0xd0811e00, 0x55bc73031f44L, gid, 0), d);
        assertArrayEquals(send, PerftestWire.encodeDest(d, 0x8a7f0000));
        byte[] zeroPadded = send.clone();
        Arrays.fill(zeroPadded, 20, 24, (byte) 0);
        assertArrayEquals(zeroPadded, PerftestWire.encodeDest(d), "jrdma sends zeros where perftest leaves garbage");
        byte[] read = HexFormat.of().parseHex(SIW_READ_LAT_CLIENT_KEYS);
        PerftestWire.Dest r = new PerftestWire.Dest(0, 128, 2, 0x6924a1, 0xa72c8b00, 0x55e81fa9e000L, gid, 0);
        assertEquals(r, PerftestWire.decodeDest(read));
        assertArrayEquals(read, PerftestWire.encodeDest(r));
        assertEquals(56, PerftestWire.DEST_SIZE);
    }

    @Test
    void rdmaCmKeysIgnorePaddingSrqnAndGidIndex() {
        byte[] m = HexFormat.of().parseHex(SIW_READ_LAT_CLIENT_KEYS);
        PerftestWire.Dest clean = PerftestWire.decodeDest(m);
        for (int i : new int[] {20, 21, 22, 23, 48, 51, 52, 55}) {
            m[i] = (byte) 0xe8;
        }
        assertEquals(clean, PerftestWire.decodeDest(m), "rdma_read_keys reads neither padding, srqn nor gid_index");
        String bad = assertThrows(SideChannelException.class,
                () -> PerftestWire.decodeDest(Arrays.copyOf(m, 16))).getMessage();
        assertTrue(bad.contains("it has 16 bytes, not 56"), bad);
        assertArrayEquals(new byte[56], PerftestWire.encodeDest(new PerftestWire.Dest(0, 0, 0, 0, 0, 0, new byte[16], 0)),
                "the E5/E6 syncs: a zeroed my_dest");
    }

    @Test
    void reportValuesAreBigEndian() {
        assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0x10, 0}, PerftestWire.int64(4096));
        assertArrayEquals(HexFormat.of().parseHex("400c51eb851eb852"), PerftestWire.float64(3.54));
        assertEquals(3.54, PerftestWire.float64(HexFormat.of().parseHex("400c51eb851eb852")));
    }

    @Test
    void doneHasItsNul() {
        assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, PerftestWire.DONE);
    }

    private static String badKeys(byte[] m) {
        return assertThrows(SideChannelException.class, () -> PerftestWire.decode(m)).getMessage();
    }
}

package io.jrdma.tools.oob;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;

class CFormatTest {
    @Test
    void hashHexIsCsAlternateForm() {
        // perftest's BASIC_ADDR_FMT " LID %#04x QPN %#06x PSN %#06x" as printed by rxe peers
        // (interop/harness/results/roce-ib_read_bw.txt): LID 0000, QPN 0x0015, PSN 0x4e98c
        assertEquals("0000", CFormat.hashHex(0, 4));
        assertEquals("0x0015", CFormat.hashHex(0x15, 6));
        assertEquals("0x4e98c", CFormat.hashHex(0x4e98c, 6));
        assertEquals("0x976426", CFormat.hashHex(0x976426, 6));
        assertEquals("0x80", CFormat.hashHex(0x80, 4));
        assertEquals("0x000655", CFormat.hashHex(0x655, 8));
        assertEquals("0x00560ffb6b3000", CFormat.hashHex(0x560ffb6b3000L, 16));
        assertEquals("0x7e9ed8c8", CFormat.hashHex(0x7e9ed8c8L, 8));
        assertEquals("0x12b7", CFormat.hashHex(0x12b7, 4));
    }

    @Test
    void fixedRoundsTheBinaryValueHalfToEven() {
        assertEquals("3.54", CFormat.fixed(3.5412, 2));
        assertEquals("0.000907", CFormat.fixed(0.000907123, 6));
        assertEquals("0.12", CFormat.fixed(0.125, 2)); // an exact binary tie: glibc rounds to even
        assertEquals("0.38", CFormat.fixed(0.375, 2));
        assertEquals("2.67", CFormat.fixed(2.675, 2)); // 2.675 is 2.67499999... in binary
        assertEquals("-0.00", CFormat.fixed(-0.001, 2));
        assertEquals("13452.76", CFormat.fixed(13452.76, 2));
        assertEquals("0.00   ", CFormat.fixedLeft(0, 7, 2));
        assertEquals("inf", CFormat.fixed(Double.POSITIVE_INFINITY, 2));
    }

    /** Vectors from glibc's inet_ntop (python3 socket.inet_ntop on Linux). */
    @Test
    void inetNtop6MatchesGlibc() {
        String[][] v = {
            {"00000000000000000000000000000000", "::"},
            {"00000000000000000000000000000001", "::1"},
            {"00000000000000000000ffff0a4d000c", "::ffff:10.77.0.12"},
            {"fe8000000000000000fc00fffe000001", "fe80::fc:ff:fe00:1"},
            {"fd000000000000000000000000000002", "fd00::2"},
            {"00000000000000000000ffff00000000", "::ffff:0.0.0.0"},
            {"00000000000000000000000001020304", "::1.2.3.4"},
            {"00010000000000000000000000000000", "1::"},
            {"00010000000000010000000000000001", "1:0:0:1::1"},
            {"00010000000000020000000000010001", "1::2:0:0:1:1"},
            {"00000000000100000000000000000000", "0:0:1::"},
            {"20010db8000000000001000000000001", "2001:db8::1:0:0:1"},
            {"00000000000000000000fffe0a4d000c", "::fffe:a4d:c"},
            {"00010002000300040005000600070008", "1:2:3:4:5:6:7:8"},
            {"fe800000000000000001000000000000", "fe80::1:0:0:0"},
            {"00000001000000010000000100000001", "0:1:0:1:0:1:0:1"},
            {"0000000000000000ffffffff0a4d000c", "::ffff:ffff:a4d:c"},
            {"00000000000000000000000100020003", "::1:2:3"},
        };
        for (String[] t : v) {
            assertEquals(t[1], CFormat.inetNtop6(HexFormat.of().parseHex(t[0])), t[0]);
        }
    }
}

package io.jrdma.tools.pingpong;

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
 * The address message of rdma-core's ibv_rc_pingpong (libibverbs/examples/rc_pingpong.c,
 * pp_client_exch_dest/pp_server_exch_dest: {@code char msg[sizeof "0000:000000:000000:" + 32 zeros]},
 * {@code sprintf(msg, "%04x:%06x:%06x:%s", lid, qpn, psn, gid)} with the GID from pingpong.c's
 * gid_to_wire_gid: the 16 bytes as 32 lowercase hex digits in order).
 */
class PingpongWireTest {
    /** What the client printed in interop/harness/results/roce-rc_pingpong.txt: LID 0, QPN 0x11, PSN 0x95084e, ::ffff:10.77.0.12. */
    static byte[] rxeClientMessage() {
        byte[] m = new byte[52];
        byte[] t = "0000:000011:95084e:00000000000000000000ffff0a4d000c".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(t, 0, m, 0, t.length);
        return m; // the 52nd byte is sprintf's NUL
    }

    @Test
    void encodesAsRcPingpong() {
        byte[] gid = HexFormat.of().parseHex("00000000000000000000ffff0a4d000c");
        byte[] m = PingpongWire.encode(new PingpongWire.Dest(0, 0x11, 0x95084e, gid));
        assertArrayEquals(rxeClientMessage(), m);
        assertEquals(52, m.length);
        byte[] link = HexFormat.of().parseHex("fe8000000000000000fc00fffe000001");
        assertEquals("c0de:abcdef:000001:fe8000000000000000fc00fffe000001",
                new String(PingpongWire.encode(new PingpongWire.Dest(0xc0de, 0xabcdef, 1, link)), 0, 51,
                        StandardCharsets.US_ASCII));
    }

    @Test
    void decodesRcPingpongsMessage() {
        PingpongWire.Dest d = PingpongWire.decode(rxeClientMessage());
        assertEquals(0, d.lid());
        assertEquals(0x11, d.qpn());
        assertEquals(0x95084e, d.psn());
        assertEquals("00000000000000000000ffff0a4d000c", HexFormat.of().formatHex(d.gid()));
        // sscanf("%x") takes upper case too
        byte[] upper = new String(rxeClientMessage(), StandardCharsets.US_ASCII).toUpperCase()
                .getBytes(StandardCharsets.US_ASCII);
        assertEquals(0x95084e, PingpongWire.decode(upper).psn());
    }

    @Test
    void doneIsFiveBytes() {
        assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, PingpongWire.DONE);
        assertTrue(PingpongWire.isDone("done\0".getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void badMessagesAreRefusedWithAReason() {
        assertTrue(bad(Arrays.copyOf(rxeClientMessage(), 20)).contains("it has 20 bytes, not 52"));
        byte[] noNul = rxeClientMessage();
        noNul[51] = 'x';
        assertTrue(bad(noNul).contains("not NUL-terminated"));
        byte[] garbage = new byte[52];
        Arrays.fill(garbage, 0, 51, (byte) 'z');
        assertTrue(bad(garbage).contains("expected LLLL:QQQQQQ:PPPPPP:<32 hex digits of GID>"), bad(garbage));
        byte[] badQpn = rxeClientMessage();
        badQpn[6] = 'g';
        assertTrue(bad(badQpn).contains("the QPN '0g0011' is not hexadecimal"), bad(badQpn));
        byte[] badGid = rxeClientMessage();
        badGid[40] = '-';
        assertTrue(bad(badGid).contains("is not 32 hex digits"), bad(badGid));
    }

    private static String bad(byte[] m) {
        return assertThrows(SideChannelException.class, () -> PingpongWire.decode(m)).getMessage();
    }
}

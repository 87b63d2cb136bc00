package io.jrdma.tools.pingpong;

import io.jrdma.tools.oob.CFormat;
import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * The side-channel messages of rdma-core's {@code ibv_rc_pingpong}
 * ({@code libibverbs/examples/rc_pingpong.c}, {@code pp_client_exch_dest} /
 * {@code pp_server_exch_dest}; GID text from {@code pingpong.c}, {@code gid_to_wire_gid}):
 *
 * <ul>
 * <li>an address: the text {@code LLLL:QQQQQQ:PPPPPP:GGGG...G} — LID ({@code %04x}), QPN
 *     ({@code %06x}), PSN ({@code %06x}) and the 16 GID bytes as 32 lowercase hex digits in
 *     wire order — NUL-terminated and sent as a fixed 52-byte buffer
 *     ({@code sizeof "0000:000000:000000:" + 32 zeros});</li>
 * <li>{@code "done"} with its NUL, 5 bytes.</li>
 * </ul>
 *
 * The client connects and writes its address; the server reads it, moves its QP to RTR and
 * RTS, writes its own address and reads {@code "done"}; the client reads the server's address
 * and writes {@code "done"}.
 */
public final class PingpongWire {
    /** Bytes of an address message, NUL included. */
    public static final int SIZE = 52;
    /** {@code "done"} and its NUL. */
    public static final byte[] DONE = {'d', 'o', 'n', 'e', 0};

    /** One side's address. */
    public record Dest(int lid, int qpn, int psn, byte[] gid) {
        public Dest {
            if (gid.length != 16) {
                throw new IllegalArgumentException("a GID has 16 bytes");
            }
            gid = gid.clone();
        }

        @Override
        public byte[] gid() {
            return gid.clone();
        }
    }

    private PingpongWire() {
    }

    /** @return the 52-byte message ({@code sprintf(msg, "%04x:%06x:%06x:%s", ...)} into a 52-byte buffer) */
    public static byte[] encode(Dest d) {
        String text = CFormat.hex(d.lid() & 0xffffffffL, 4) + ":" + CFormat.hex(d.qpn() & 0xffffffffL, 6) + ":"
                + CFormat.hex(d.psn() & 0xffffffffL, 6) + ":" + HexFormat.of().formatHex(d.gid);
        byte[] t = text.getBytes(StandardCharsets.US_ASCII);
        if (t.length != SIZE - 1) {
            throw new IllegalArgumentException("LID, QPN or PSN too wide for the message: " + text);
        }
        byte[] m = new byte[SIZE];
        System.arraycopy(t, 0, m, 0, t.length);
        return m;
    }

    /**
     * Parses an address message.
     *
     * @throws SideChannelException naming what is wrong, when it is not one
     */
    public static Dest decode(byte[] m) {
        if (m.length != SIZE) {
            throw bad(m, "it has " + m.length + " bytes, not " + SIZE);
        }
        if (m[SIZE - 1] != 0) {
            throw bad(m, "it is not NUL-terminated");
        }
        String t = new String(m, 0, SIZE - 1, StandardCharsets.ISO_8859_1);
        if (t.charAt(4) != ':' || t.charAt(11) != ':' || t.charAt(18) != ':') {
            throw bad(m, "expected LLLL:QQQQQQ:PPPPPP:<32 hex digits of GID>");
        }
        int lid = hex(m, t, 0, 4, "LID");
        int qpn = hex(m, t, 5, 11, "QPN");
        int psn = hex(m, t, 12, 18, "PSN");
        String g = t.substring(19);
        for (int i = 0; i < g.length(); i++) {
            if (Character.digit(g.charAt(i), 16) < 0) {
                throw bad(m, "the GID '" + g + "' is not 32 hex digits");
            }
        }
        return new Dest(lid, qpn, psn, HexFormat.of().parseHex(g));
    }

    private static int hex(byte[] m, String t, int from, int to, String what) {
        String s = t.substring(from, to);
        for (int i = 0; i < s.length(); i++) {
            if (Character.digit(s.charAt(i), 16) < 0) {
                throw bad(m, "the " + what + " '" + s + "' is not hexadecimal");
            }
        }
        return Integer.parseInt(s, 16);
    }

    private static SideChannelException bad(byte[] m, String why) {
        return new SideChannelException("the peer's address message is not ibv_rc_pingpong's: " + why + " ("
                + SideChannel.printable(m, m.length) + ")");
    }

    /** @return true if the bytes are {@code "done"} and its NUL */
    public static boolean isDone(byte[] b) {
        return java.util.Arrays.equals(b, DONE);
    }
}

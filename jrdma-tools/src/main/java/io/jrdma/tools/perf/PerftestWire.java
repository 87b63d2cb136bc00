package io.jrdma.tools.perf;

import io.jrdma.tools.oob.CFormat;
import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * perftest 4.5's TCP side-channel messages (linux-rdma/perftest, {@code src/perftest_communication.c}
 * and {@code .h}), for the exchange without rdma_cm ({@code -R} off). Every exchange is
 * {@code ctx_xchg_data}: the client writes its message then reads the server's; the server
 * reads then writes.
 *
 * <ul>
 * <li>{@code exchange_versions}: the {@code VERSION} string in a 16-byte zero-padded buffer
 *     ({@code char version[MAX_VERSION]}); perftest 4.5(-0.17) sends {@code "6.06"} and refuses a
 *     peer below 5.70 ({@code check_version_compatibility}).</li>
 * <li>{@code check_sys_data}: the page size ("cycle buffer") and then the cache line size, each
 *     a 4-byte big-endian int ({@code hton_int}); both sides take the larger.</li>
 * <li>{@code check_mtu}: the {@code enum ibv_mtu} code (1..5) as a decimal string, 2 bytes with
 *     the NUL ({@code sizeof(char[2])}); both sides take the smaller.</li>
 * <li>{@code ctx_hand_shake} ({@code ethernet_write_keys} / {@code ethernet_read_keys}), once per
 *     QP and again as a barrier: {@code KEY_PRINT_FMT_GID}, i.e.
 *     {@code %04x:%04x:%06x:%06x:%08x:%016llx:} LID, outstanding reads, QPN, PSN, rkey, vaddr,
 *     then the 16 GID bytes as {@code %02x} joined by {@code :}, then {@code :%08x:} (SRQ number),
 *     in a 108-byte buffer ({@code KEY_MSG_SIZE_GID}) with the NUL. RoCE always uses this GID
 *     form (the GID index is never -1 on Ethernet).</li>
 * <li>{@code xchg_bw_reports}: five separate exchanges of 8 bytes each, big-endian
 *     ({@code hton_long}/{@code hton_double}): message size, iterations (8 bytes since the peer is
 *     at least 5.33), peak BW, average BW, message rate.</li>
 * <li>{@code ctx_close_connection}: one more handshake, then each side writes {@code "done"}
 *     with its NUL (5 bytes) and closes.</li>
 * </ul>
 *
 * <p>With {@code -R} the same messages travel as RDMA SENDs on an rdma_cm "comm" QP
 * ({@code rdma_write_data} / {@code rdma_read_data}), except the keys: {@code rdma_write_keys}
 * sends {@code struct pingpong_dest} itself, 56 bytes with every field big-endian
 * ({@link #encodeDest}), and {@code ctx_close_connection} writes no {@code "done"}.
 */
final class PerftestWire {
    /** The version perftest 4.5-0.17 announces (its configure's AC_INIT version). */
    static final String VERSION = "6.06";
    static final int VERSION_SIZE = 16;
    /** The oldest peer version perftest 4.5 accepts. */
    static final double MIN_VERSION = 5.70;
    static final int KEY_SIZE = 108;
    static final int MTU_SIZE = 2;
    static final byte[] DONE = {'d', 'o', 'n', 'e', 0};
    /** {@code sizeof(struct pingpong_dest)} on x86_64: the {@code -R} key message and the comm QP's receive. */
    static final int DEST_SIZE = 56;

    /** perftest's {@code struct pingpong_dest}, as much of it as travels. */
    record Dest(int lid, int outReads, int qpn, int psn, int rkey, long vaddr, byte[] gid, int srqn) {
        Dest {
            if (gid.length != 16) {
                throw new IllegalArgumentException("a GID has 16 bytes");
            }
            gid = gid.clone();
        }

        @Override
        public byte[] gid() {
            return gid.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Dest d && lid == d.lid && outReads == d.outReads && qpn == d.qpn && psn == d.psn
                    && rkey == d.rkey && vaddr == d.vaddr && Arrays.equals(gid, d.gid) && srqn == d.srqn;
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(gid) * 31 + qpn;
        }
    }

    private PerftestWire() {
    }

    // ------------------------------------------------------------------ version

    static byte[] version(String v) {
        byte[] b = new byte[VERSION_SIZE];
        byte[] t = v.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(t, 0, b, 0, Math.min(t.length, VERSION_SIZE - 1));
        return b;
    }

    /** @return the version text (up to the first NUL) */
    static String versionText(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, StandardCharsets.ISO_8859_1);
    }

    /**
     * Checks the peer's version message as {@code check_version_compatibility} does ({@code atof}
     * of it must be at least 5.70), with a clearer word for bytes that are no version at all.
     *
     * @return the version number
     */
    static double checkVersion(byte[] b) {
        String t = versionText(b);
        boolean padded = true;
        for (int i = t.length(); i < b.length; i++) {
            padded &= b[i] == 0;
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^([0-9]+(\\.[0-9]+)?)[0-9A-Za-z.+_~-]*$")
                .matcher(t);
        if (!padded || !m.matches()) {
            throw new SideChannelException("the peer is not perftest: its first 16 bytes should be perftest's version"
                    + " string, not " + SideChannel.printable(b, b.length) + " (an ibv_rc_pingpong or jrdma"
                    + " --jrdma-cm peer? perftest with -R?)");
        }
        double v = Double.parseDouble(m.group(1));
        if (v < MIN_VERSION) {
            throw new SideChannelException("Current implementation is not compatible with versions older than 5.70"
                    + " (the peer is perftest version '" + t + "')");
        }
        return v;
    }

    // ------------------------------------------------------------------ ints, MTU, reports

    static byte[] int32(int v) {
        return ByteBuffer.allocate(4).putInt(v).array();
    }

    static int int32(byte[] b) {
        return ByteBuffer.wrap(b).getInt();
    }

    static byte[] int64(long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }

    static long int64(byte[] b) {
        return ByteBuffer.wrap(b).getLong();
    }

    static byte[] float64(double v) {
        return int64(Double.doubleToRawLongBits(v));
    }

    static double float64(byte[] b) {
        return Double.longBitsToDouble(int64(b));
    }

    /** @return {@code sprintf(cur, "%d", mtu)} cut to 2 bytes: the digit and the NUL */
    static byte[] mtu(int code) {
        if (code < 1 || code > 5) {
            throw new IllegalArgumentException("MTU code " + code);
        }
        return new byte[] {(byte) ('0' + code), 0};
    }

    /**
     * @return the peer's MTU code ({@code strtol} of the 2 bytes), or 0 when it is not 1..5
     *         (perftest then keeps its own)
     * @throws SideChannelException when the bytes are no number at all
     */
    static int mtuCode(byte[] b) {
        int n = 0;
        int i = 0;
        while (i < b.length && b[i] == ' ') {
            i++;
        }
        int start = i;
        while (i < b.length && b[i] >= '0' && b[i] <= '9') {
            n = n * 10 + (b[i] - '0');
            i++;
        }
        if (i == start || (i < b.length && b[i] != 0)) {
            throw new SideChannelException("the peer's MTU message should be a digit and a NUL, not "
                    + SideChannel.printable(b, b.length));
        }
        return n >= 1 && n <= 5 ? n : 0;
    }

    // ------------------------------------------------------------------ keys

    /** @return the 108-byte {@code KEY_PRINT_FMT_GID} message */
    static byte[] encode(Dest d) {
        StringBuilder sb = new StringBuilder(KEY_SIZE);
        sb.append(CFormat.hex(d.lid() & 0xffffffffL, 4)).append(':')
                .append(CFormat.hex(d.outReads() & 0xffffffffL, 4)).append(':')
                .append(CFormat.hex(d.qpn() & 0xffffffffL, 6)).append(':')
                .append(CFormat.hex(d.psn() & 0xffffffffL, 6)).append(':')
                .append(CFormat.hex(d.rkey() & 0xffffffffL, 8)).append(':')
                .append(CFormat.hex(d.vaddr(), 16)).append(':');
        byte[] g = d.gid;
        for (int i = 0; i < 16; i++) {
            sb.append(CFormat.hex(g[i] & 0xff, 2)).append(i < 15 ? ":" : "");
        }
        sb.append(':').append(CFormat.hex(d.srqn() & 0xffffffffL, 8)).append(':');
        byte[] t = sb.toString().getBytes(StandardCharsets.US_ASCII);
        if (t.length != KEY_SIZE - 1) {
            throw new IllegalArgumentException("a field is too wide for the key message: " + sb);
        }
        return Arrays.copyOf(t, KEY_SIZE);
    }

    /**
     * Parses a key message.
     *
     * @throws SideChannelException naming what is wrong, when it is not one
     */
    static Dest decode(byte[] m) {
        if (m.length != KEY_SIZE) {
            throw badKey(m, "it has " + m.length + " bytes, not " + KEY_SIZE);
        }
        int end = 0;
        while (end < m.length && m[end] != 0) {
            end++;
        }
        if (end == m.length) {
            throw badKey(m, "it is not NUL-terminated");
        }
        String t = new String(m, 0, end, StandardCharsets.ISO_8859_1);
        String[] f = t.split(":", -1);
        // LID, OUT, QPN, PSN, RKEY, VADDR, 16 GID bytes, SRQN, "" after the trailing ':'
        if (f.length != 24 || !f[23].isEmpty()) {
            throw badKey(m, "expected LID:OUT:QPN:PSN:RKEY:VADDR:<16 GID bytes>:SRQN: (" + (f.length - 1)
                    + " colons instead of 23)");
        }
        int lid = (int) field(m, f[0], 4, "LID");
        int out = (int) field(m, f[1], 4, "outstanding reads");
        int qpn = (int) field(m, f[2], 6, "QPN");
        int psn = (int) field(m, f[3], 6, "PSN");
        int rkey = (int) field(m, f[4], 8, "rkey");
        long vaddr = field(m, f[5], 16, "virtual address");
        byte[] gid = new byte[16];
        for (int i = 0; i < 16; i++) {
            gid[i] = (byte) field(m, f[6 + i], 2, "GID byte " + i);
        }
        int srqn = (int) field(m, f[22], 8, "SRQ number");
        return new Dest(lid, out, qpn, psn, rkey, vaddr, gid, srqn);
    }

    private static long field(byte[] m, String s, int maxDigits, String what) {
        if (s.isEmpty() || s.length() > maxDigits) {
            throw badKey(m, "the " + what + " '" + s + "' is not 1.." + maxDigits + " hex digits");
        }
        for (int i = 0; i < s.length(); i++) {
            if (Character.digit(s.charAt(i), 16) < 0) {
                throw badKey(m, "the " + what + " '" + s + "' is not hexadecimal");
            }
        }
        return Long.parseUnsignedLong(s, 16);
    }

    private static SideChannelException badKey(byte[] m, String why) {
        return new SideChannelException("the peer's QP message is not perftest's: " + why + " ("
                + SideChannel.printable(m, m.length) + ")");
    }

    // ------------------------------------------------------------------ -R: struct pingpong_dest

    /**
     * @return {@code rdma_write_keys}' message: {@code struct pingpong_dest} as x86_64 lays it out,
     *         each field {@code htobe32}/{@code htobe64}: lid, out_reads, qpn, psn, rkey at 0, 4, 8,
     *         12, 16; 4 bytes of padding at 20 (perftest leaves them uninitialized; jrdma sends
     *         zeros); vaddr at 24; the 16 GID bytes at 32; srqn at 48; gid_index at 52 (0)
     */
    static byte[] encodeDest(Dest d) {
        return encodeDest(d, 0);
    }

    /** As {@link #encodeDest(Dest)} with the given padding bytes at offset 20 (tests: perftest's garbage). */
    static byte[] encodeDest(Dest d, int padding) {
        ByteBuffer b = ByteBuffer.allocate(DEST_SIZE); // big-endian
        b.putInt(d.lid()).putInt(d.outReads()).putInt(d.qpn()).putInt(d.psn()).putInt(d.rkey()).putInt(padding)
                .putLong(d.vaddr()).put(d.gid).putInt(d.srqn()).putInt(0);
        return b.array();
    }

    /**
     * Parses a {@code struct pingpong_dest} as {@code rdma_read_keys} does: lid, out_reads, qpn,
     * psn, rkey, vaddr and the GID; the padding, srqn and gid_index are not read (srqn is 0).
     *
     * @throws SideChannelException when it is not 56 bytes
     */
    static Dest decodeDest(byte[] m) {
        if (m.length != DEST_SIZE) {
            throw new SideChannelException("the peer's QP message is not perftest's -R struct pingpong_dest: it has "
                    + m.length + " bytes, not " + DEST_SIZE);
        }
        ByteBuffer b = ByteBuffer.wrap(m);
        int lid = b.getInt(0);
        int out = b.getInt(4);
        int qpn = b.getInt(8);
        int psn = b.getInt(12);
        int rkey = b.getInt(16);
        long vaddr = b.getLong(24);
        byte[] gid = Arrays.copyOfRange(m, 32, 48);
        return new Dest(lid, out, qpn, psn, rkey, vaddr, gid, 0);
    }

    /** @return the GID of a message as hex, for tests */
    static String gidHex(Dest d) {
        return HexFormat.of().formatHex(d.gid);
    }

    /** @return true if the bytes are {@code "done"} and its NUL */
    static boolean isDone(byte[] b) {
        return Arrays.equals(b, DONE);
    }
}

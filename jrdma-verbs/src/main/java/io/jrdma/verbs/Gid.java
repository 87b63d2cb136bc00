package io.jrdma.verbs;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A 128-bit global identifier. For RoCEv2 a GID is an IP address: IPv6 as is, IPv4 as the
 * IPv4-mapped IPv6 address {@code ::ffff:a.b.c.d}, as Linux rxe fills its GID table.
 */
public final class Gid {
    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /**
     * {@return a GID from 16 bytes (copied)}
     *
     * @param raw the 16 bytes, network order
     * @throws RdmaException EINVAL if {@code raw} is not 16 bytes long
     */
    public static Gid of(byte[] raw) {
        if (raw.length != 16) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "a GID has 16 bytes, not " + raw.length);
        }
        return new Gid(raw.clone());
    }

    /**
     * {@return the GID of an IP address (IPv4 mapped into IPv6, as RoCEv2 does)}
     *
     * @param address an IPv4 or IPv6 address
     */
    public static Gid of(InetAddress address) {
        byte[] a = address.getAddress();
        if (a.length == 16) {
            return new Gid(a);
        }
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        System.arraycopy(a, 0, g, 12, 4);
        return new Gid(g);
    }

    /**
     * Parses {@code ibv_devinfo}'s form ({@code 0000:0000:...:0001}) or any IP address literal.
     *
     * @param text the GID or address
     * @return the GID
     * @throws RdmaException EINVAL if it is neither
     */
    public static Gid parse(String text) {
        String t = text.trim();
        if (t.length() == 39 && t.matches("([0-9a-fA-F]{4}:){7}[0-9a-fA-F]{4}")) {
            return new Gid(HexFormat.of().parseHex(t.replace(":", "")));
        }
        try {
            return of(InetAddress.getByName(t));
        } catch (UnknownHostException e) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "not a GID or IP address: " + text, e);
        }
    }

    /** {@return true if this GID is an IPv4-mapped address} */
    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return raw[10] == (byte) 0xff && raw[11] == (byte) 0xff;
    }

    /** {@return the IP address this GID stands for ({@link Inet4Address} for mapped IPv4)} */
    public InetAddress toInetAddress() {
        try {
            if (isIpv4Mapped()) {
                return InetAddress.getByAddress(Arrays.copyOfRange(raw, 12, 16));
            }
            return Inet6Address.getByAddress(null, raw.clone(), null);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@return a copy of the 16 bytes} */
    public byte[] raw() {
        return raw.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }

    /** {@return the GID as {@code ibv_devinfo} prints it: eight groups of four hex digits} */
    @Override
    public String toString() {
        String hex = HexFormat.of().formatHex(raw);
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 32; i += 4) {
            if (i > 0) {
                sb.append(':');
            }
            sb.append(hex, i, i + 4);
        }
        return sb.toString();
    }
}

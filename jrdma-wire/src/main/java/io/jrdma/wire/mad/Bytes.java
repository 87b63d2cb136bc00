package io.jrdma.wire.mad;

/** Big-endian field access on a MAD held in a byte array (control path: MADs are not per-packet data path). */
final class Bytes {
    private Bytes() {
    }

    static int u8(byte[] b, int off) {
        return b[off] & 0xFF;
    }

    static int u16(byte[] b, int off) {
        return (b[off] & 0xFF) << 8 | (b[off + 1] & 0xFF);
    }

    static int u24(byte[] b, int off) {
        return (b[off] & 0xFF) << 16 | (b[off + 1] & 0xFF) << 8 | (b[off + 2] & 0xFF);
    }

    static int u32(byte[] b, int off) {
        return (b[off] & 0xFF) << 24 | (b[off + 1] & 0xFF) << 16 | (b[off + 2] & 0xFF) << 8 | (b[off + 3] & 0xFF);
    }

    static long u64(byte[] b, int off) {
        return (long) u32(b, off) << 32 | (u32(b, off + 4) & 0xFFFF_FFFFL);
    }

    static void put8(byte[] b, int off, int v) {
        b[off] = (byte) v;
    }

    static void put16(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 8);
        b[off + 1] = (byte) v;
    }

    static void put24(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 16);
        b[off + 1] = (byte) (v >>> 8);
        b[off + 2] = (byte) v;
    }

    static void put32(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 24);
        b[off + 1] = (byte) (v >>> 16);
        b[off + 2] = (byte) (v >>> 8);
        b[off + 3] = (byte) v;
    }

    static void put64(byte[] b, int off, long v) {
        put32(b, off, (int) (v >>> 32));
        put32(b, off + 4, (int) v);
    }

    static byte[] slice(byte[] b, int off, int len) {
        byte[] r = new byte[len];
        System.arraycopy(b, off, r, 0, len);
        return r;
    }

    /** Copies {@code data} (at most {@code max} bytes, the rest zero) into {@code b} at {@code off}. */
    static void putData(byte[] b, int off, byte[] data, int max) {
        if (data.length > max) {
            throw new IllegalArgumentException("private data is limited to " + max + " bytes here, not " + data.length);
        }
        System.arraycopy(data, 0, b, off, data.length);
    }

    static void check(boolean ok, String what) throws MadFormatException {
        if (!ok) {
            throw new MadFormatException(what);
        }
    }

    static byte[] gid(byte[] g) {
        if (g == null || g.length != 16) {
            throw new IllegalArgumentException("a GID is 16 bytes");
        }
        return g.clone();
    }
}

package io.jrdma.verbs;

/** The IBA path MTU values, with their enum codes ({@code IB_MTU_256 = 1} ... {@code IB_MTU_4096 = 5}). */
public enum Mtu {
    MTU_256(1, 256), MTU_512(2, 512), MTU_1024(3, 1024), MTU_2048(4, 2048), MTU_4096(5, 4096);

    private final int code;
    private final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    /** @return the IBA enum value, 1..5 */
    public int code() {
        return code;
    }

    /** @return the payload bytes per packet */
    public int bytes() {
        return bytes;
    }

    /** @return the MTU for a byte count of 256, 512, 1024, 2048 or 4096 */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) {
            if (m.bytes == bytes) {
                return m;
            }
        }
        throw new RdmaException(RdmaException.Errno.EINVAL,
                "path MTU must be one of 256, 512, 1024, 2048, 4096 bytes, not " + bytes);
    }

    /** @return the MTU for an IBA enum code 1..5 */
    public static Mtu ofCode(int code) {
        for (Mtu m : values()) {
            if (m.code == code) {
                return m;
            }
        }
        throw new RdmaException(RdmaException.Errno.EINVAL, "MTU code must be 1..5, not " + code);
    }
}

package io.jrdma.verbs;

/** The IBA path MTU values, with their enum codes ({@code IB_MTU_256 = 1} ... {@code IB_MTU_4096 = 5}). */
public enum Mtu {
    /** 256 bytes per packet, code 1. */
    MTU_256(1, 256),
    /** 512 bytes per packet, code 2. */
    MTU_512(2, 512),
    /** 1024 bytes per packet, code 3. */
    MTU_1024(3, 1024),
    /** 2048 bytes per packet, code 4. */
    MTU_2048(4, 2048),
    /** 4096 bytes per packet, code 5. */
    MTU_4096(5, 4096);

    private final int code;
    private final int bytes;

    Mtu(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    /** {@return the IBA enum value, 1..5} */
    public int code() {
        return code;
    }

    /** {@return the payload bytes per packet} */
    public int bytes() {
        return bytes;
    }

    /**
     * {@return the MTU for a byte count}
     *
     * @param bytes 256, 512, 1024, 2048 or 4096
     * @throws RdmaException EINVAL for any other count
     */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) {
            if (m.bytes == bytes) {
                return m;
            }
        }
        throw new RdmaException(RdmaException.Errno.EINVAL,
                "path MTU must be one of 256, 512, 1024, 2048, 4096 bytes, not " + bytes);
    }

    /**
     * {@return the MTU for an IBA enum code}
     *
     * @param code 1..5
     * @throws RdmaException EINVAL for any other code
     */
    public static Mtu ofCode(int code) {
        for (Mtu m : values()) {
            if (m.code == code) {
                return m;
            }
        }
        throw new RdmaException(RdmaException.Errno.EINVAL, "MTU code must be 1..5, not " + code);
    }
}

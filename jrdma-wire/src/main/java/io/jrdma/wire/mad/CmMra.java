package io.jrdma.wire.mad;

/**
 * MessageReceiptAcknowledgement (MRA, attribute 0x0011): 0 local comm ID, 4 remote comm ID,
 * 8 message MRAed (2) | reserved (6), 9 service timeout (5) | reserved (3), 10 private data (222 bytes).
 *
 * @param messageMraed 0 REQ, 1 REP, 2 LAP
 * @param serviceTimeout how long the sender needs before it answers: 4.096 µs × 2^value
 */
public record CmMra(int localCommId, int remoteCommId, int messageMraed, int serviceTimeout, byte[] privateData)
        implements CmMessage {
    /** Bytes of private data an MRA carries. */
    public static final int PRIVATE_DATA = 222;

    /** Checks the widths; pads the private data (a copy). */
    public CmMra {
        byte[] p = new byte[PRIVATE_DATA];
        Bytes.putData(p, 0, privateData == null ? new byte[0] : privateData, PRIVATE_DATA);
        privateData = p;
        if ((messageMraed & ~3) != 0 || (serviceTimeout & ~0x1F) != 0) {
            throw new IllegalArgumentException("an MRA field does not fit its width");
        }
    }

    @Override
    public int attrId() {
        return ATTR_MRA;
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    static CmMra decode(byte[] b, int d) throws MadFormatException {
        int m = Bytes.u8(b, d + 8) >>> 6;
        Bytes.check(m != 3, "MRA message-MRAed code 3 is reserved");
        return new CmMra(Bytes.u32(b, d), Bytes.u32(b, d + 4), m, Bytes.u8(b, d + 9) >>> 3,
                Bytes.slice(b, d + 10, PRIVATE_DATA));
    }

    @Override
    public void encodeData(byte[] b, int d) {
        Bytes.put32(b, d, localCommId);
        Bytes.put32(b, d + 4, remoteCommId);
        Bytes.put8(b, d + 8, messageMraed << 6);
        Bytes.put8(b, d + 9, serviceTimeout << 3);
        System.arraycopy(privateData, 0, b, d + 10, PRIVATE_DATA);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmMra q && java.util.Arrays.equals(toMad(0), q.toMad(0));
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(toMad(0));
    }
}

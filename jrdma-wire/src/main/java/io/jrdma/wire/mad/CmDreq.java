package io.jrdma.wire.mad;

/**
 * DisconnectRequest (DREQ, attribute 0x0015): 0 local comm ID, 4 remote comm ID,
 * 8 remote QPN/EECN (24) | reserved, 12 private data (220 bytes).
 */
public record CmDreq(int localCommId, int remoteCommId, int remoteQpn, byte[] privateData) implements CmMessage {
    /** Bytes of private data a DREQ carries. */
    public static final int PRIVATE_DATA = 220;

    /** Pads the private data to 220 bytes (a copy). */
    public CmDreq {
        byte[] p = new byte[PRIVATE_DATA];
        Bytes.putData(p, 0, privateData == null ? new byte[0] : privateData, PRIVATE_DATA);
        privateData = p;
        if ((remoteQpn & ~0xFF_FFFF) != 0) {
            throw new IllegalArgumentException("a QPN is 24 bits");
        }
    }

    @Override
    public int attrId() {
        return ATTR_DREQ;
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    @Override
    public void encodeData(byte[] b, int d) {
        Bytes.put32(b, d, localCommId);
        Bytes.put32(b, d + 4, remoteCommId);
        Bytes.put32(b, d + 8, remoteQpn << 8);
        System.arraycopy(privateData, 0, b, d + 12, PRIVATE_DATA);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmDreq q && java.util.Arrays.equals(toMad(0), q.toMad(0));
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(toMad(0));
    }
}

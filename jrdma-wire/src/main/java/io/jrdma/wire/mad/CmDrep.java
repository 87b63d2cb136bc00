package io.jrdma.wire.mad;

/** DisconnectReply (DREP, attribute 0x0016): 0 local comm ID, 4 remote comm ID, 8 private data (224 bytes). */
public record CmDrep(int localCommId, int remoteCommId, byte[] privateData) implements CmMessage {
    /** Bytes of private data a DREP carries. */
    public static final int PRIVATE_DATA = 224;

    /** Pads the private data to 224 bytes (a copy). */
    public CmDrep {
        byte[] p = new byte[PRIVATE_DATA];
        Bytes.putData(p, 0, privateData == null ? new byte[0] : privateData, PRIVATE_DATA);
        privateData = p;
    }

    @Override
    public int attrId() {
        return ATTR_DREP;
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    @Override
    public void encodeData(byte[] b, int d) {
        Bytes.put32(b, d, localCommId);
        Bytes.put32(b, d + 4, remoteCommId);
        System.arraycopy(privateData, 0, b, d + 8, PRIVATE_DATA);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmDrep q && java.util.Arrays.equals(toMad(0), q.toMad(0));
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(toMad(0));
    }
}

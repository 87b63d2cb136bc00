package io.jrdma.wire.mad;

/**
 * ConnectReject (REJ, attribute 0x0012; IBA vol 1 §12.6.7): 0 local comm ID, 4 remote comm ID,
 * 8 message rejected (2) | reserved (6), 9 reject info length (7) | reserved (1), 10 reason (16),
 * 12 additional reject information (72 bytes), 84 private data (148 bytes).
 *
 * @param messageRejected {@link #REJECTED_REQ}, {@link #REJECTED_REP} or {@link #REJECTED_OTHER}
 */
public record CmRej(int localCommId, int remoteCommId, int messageRejected, int rejectInfoLength, int reason,
                    byte[] ari, byte[] privateData) implements CmMessage {
    /** Bytes of additional reject information. */
    public static final int ARI = 72;
    /** Bytes of private data a REJ carries. */
    public static final int PRIVATE_DATA = 148;
    /** The REQ was rejected. */
    public static final int REJECTED_REQ = 0;
    /** The REP was rejected. */
    public static final int REJECTED_REP = 1;
    /** No message in particular (e.g. a timeout while waiting for an RTU). */
    public static final int REJECTED_OTHER = 2;
    /** Reason: the peer timed out waiting (ARI: the CA GUID). */
    public static final int REASON_TIMEOUT = 4;
    /** Reason: nobody listens on the REQ's service ID. */
    public static final int REASON_INVALID_SERVICE_ID = 8;
    /** Reason: the transport service type is not one the listener takes. */
    public static final int REASON_INVALID_TRANSPORT_TYPE = 9;
    /** Reason: a connection with this comm ID or QPN is in time-wait or still up. */
    public static final int REASON_STALE_CONN = 10;
    /** Reason: the primary GID is not the receiver's (ARI: the GID it has). */
    public static final int REASON_INVALID_GID = 12;
    /** Reason: the path MTU is not one the receiver takes. */
    public static final int REASON_INVALID_MTU = 26;
    /** Reason: the application rejected (rdma_reject): the private data is its. */
    public static final int REASON_CONSUMER_DEFINED = 28;
    /** Reason: the class version is not the receiver's. */
    public static final int REASON_INVALID_CLASS_VERSION = 31;

    /** Checks the widths; pads the ARI and private data (copies). */
    public CmRej {
        byte[] a = new byte[ARI];
        Bytes.putData(a, 0, ari == null ? new byte[0] : ari, ARI);
        ari = a;
        byte[] p = new byte[PRIVATE_DATA];
        Bytes.putData(p, 0, privateData == null ? new byte[0] : privateData, PRIVATE_DATA);
        privateData = p;
        if ((messageRejected & ~3) != 0 || (rejectInfoLength & ~0x7F) != 0 || (reason & ~0xFFFF) != 0) {
            throw new IllegalArgumentException("a REJ field does not fit its width");
        }
    }

    @Override
    public int attrId() {
        return ATTR_REJ;
    }

    @Override
    public byte[] ari() {
        return ari.clone();
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    static CmRej decode(byte[] b, int d) throws MadFormatException {
        int m = Bytes.u8(b, d + 8) >>> 6;
        int len = Bytes.u8(b, d + 9) >>> 1;
        Bytes.check(m != 3, "REJ message-rejected code 3 is reserved");
        Bytes.check(len <= ARI, "REJ reject info length " + len + " exceeds 72");
        return new CmRej(Bytes.u32(b, d), Bytes.u32(b, d + 4), m, len, Bytes.u16(b, d + 10),
                Bytes.slice(b, d + 12, ARI), Bytes.slice(b, d + 84, PRIVATE_DATA));
    }

    @Override
    public void encodeData(byte[] b, int d) {
        Bytes.put32(b, d, localCommId);
        Bytes.put32(b, d + 4, remoteCommId);
        Bytes.put8(b, d + 8, messageRejected << 6);
        Bytes.put8(b, d + 9, rejectInfoLength << 1);
        Bytes.put16(b, d + 10, reason);
        System.arraycopy(ari, 0, b, d + 12, ARI);
        System.arraycopy(privateData, 0, b, d + 84, PRIVATE_DATA);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmRej q && java.util.Arrays.equals(toMad(0), q.toMad(0));
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(toMad(0));
    }
}

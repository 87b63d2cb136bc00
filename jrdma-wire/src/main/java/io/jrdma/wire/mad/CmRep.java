package io.jrdma.wire.mad;

/**
 * ConnectReply (REP, attribute 0x0013; IBA vol 1 §12.6.8). Class-data offsets: 0 local comm ID,
 * 4 remote comm ID, 8 local Q_Key, 12 local QPN (24) | reserved, 16 local EECN (24) | reserved,
 * 20 starting PSN (24) | reserved, 24 responder resources, 25 initiator depth,
 * 26 target ACK delay (5) | failover accepted (2) | end-to-end flow control (1),
 * 27 RNR retry count (3) | SRQ (1) | reserved (4), 28 local CA GUID, 36 private data (196 bytes).
 */
public record CmRep(int localCommId, int remoteCommId, int localQkey, int localQpn, int localEecn, int startingPsn,
                    int responderResources, int initiatorDepth, int targetAckDelay, int failoverAccepted,
                    boolean endToEndFlowControl, int rnrRetryCount, boolean srq, long localCaGuid,
                    byte[] privateData) implements CmMessage {
    /** Bytes of private data a REP carries. */
    public static final int PRIVATE_DATA = 196;

    /** Checks each field fits its width; pads the private data to 196 bytes (a copy). */
    public CmRep {
        byte[] p = new byte[PRIVATE_DATA];
        Bytes.putData(p, 0, privateData == null ? new byte[0] : privateData, PRIVATE_DATA);
        privateData = p;
        if ((localQpn & ~0xFF_FFFF) != 0 || (localEecn & ~0xFF_FFFF) != 0 || (startingPsn & ~0xFF_FFFF) != 0
                || (responderResources & ~0xFF) != 0 || (initiatorDepth & ~0xFF) != 0 || (targetAckDelay & ~0x1F) != 0
                || (failoverAccepted & ~3) != 0 || (rnrRetryCount & ~7) != 0) {
            throw new IllegalArgumentException("a REP field does not fit its width");
        }
    }

    @Override
    public int attrId() {
        return ATTR_REP;
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    static CmRep decode(byte[] b, int d) {
        int f = Bytes.u8(b, d + 26);
        int g = Bytes.u8(b, d + 27);
        return new CmRep(Bytes.u32(b, d), Bytes.u32(b, d + 4), Bytes.u32(b, d + 8), Bytes.u24(b, d + 12),
                Bytes.u24(b, d + 16), Bytes.u24(b, d + 20), Bytes.u8(b, d + 24), Bytes.u8(b, d + 25), f >>> 3,
                (f >>> 1) & 3, (f & 1) != 0, g >>> 5, (g & 0x10) != 0, Bytes.u64(b, d + 28),
                Bytes.slice(b, d + 36, PRIVATE_DATA));
    }

    @Override
    public void encodeData(byte[] b, int d) {
        Bytes.put32(b, d, localCommId);
        Bytes.put32(b, d + 4, remoteCommId);
        Bytes.put32(b, d + 8, localQkey);
        Bytes.put32(b, d + 12, localQpn << 8);
        Bytes.put32(b, d + 16, localEecn << 8);
        Bytes.put32(b, d + 20, startingPsn << 8);
        Bytes.put8(b, d + 24, responderResources);
        Bytes.put8(b, d + 25, initiatorDepth);
        Bytes.put8(b, d + 26, targetAckDelay << 3 | failoverAccepted << 1 | (endToEndFlowControl ? 1 : 0));
        Bytes.put8(b, d + 27, rnrRetryCount << 5 | (srq ? 0x10 : 0));
        Bytes.put64(b, d + 28, localCaGuid);
        System.arraycopy(privateData, 0, b, d + 36, PRIVATE_DATA);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmRep q && java.util.Arrays.equals(toMad(0), q.toMad(0));
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(toMad(0));
    }
}

package io.jrdma.wire.mad;

/**
 * ConnectRequest (REQ, attribute 0x0010; IBA vol 1 §12.6.5). Class-data offsets:
 * 0 local comm ID, 4 reserved, 8 service ID, 16 local CA GUID, 24 reserved, 28 local Q_Key,
 * 32 local QPN (24) | responder resources (8), 36 local EECN (24) | initiator depth (8),
 * 40 remote EECN (24) | remote CM response timeout (5) | transport service type (2) | end-to-end flow control (1),
 * 44 starting PSN (24) | local CM response timeout (5) | retry count (3), 48 P_Key,
 * 50 path MTU (4) | RDC exists (1) | RNR retry count (3), 51 max CM retries (4) | SRQ (1) | extended transport type (3),
 * 52 primary path, 96 alternate path, 140 private data (92 bytes).
 *
 * @param transportServiceType 0 RC, 1 UC, 3 XRC (with {@code extendedTransport})
 * @param privateData          all 92 bytes (rdma_cm: the {@link CmaHeader} then the application's 56)
 */
public record CmReq(int localCommId, long serviceId, long localCaGuid, int localQkey, int localQpn,
                    int responderResources, int localEecn, int initiatorDepth, int remoteEecn,
                    int remoteCmResponseTimeout, int transportServiceType, boolean endToEndFlowControl,
                    int startingPsn, int localCmResponseTimeout, int retryCount, int pkey, int pathMtu,
                    boolean rdcExists, int rnrRetryCount, int maxCmRetries, boolean srq, int extendedTransport,
                    CmPath primary, CmPath alternate, byte[] privateData) implements CmMessage {
    /** Bytes of private data a REQ carries. */
    public static final int PRIVATE_DATA = 92;
    /** Transport service type RC. */
    public static final int TRANSPORT_RC = 0;
    /** Transport service type UC. */
    public static final int TRANSPORT_UC = 1;

    /** Checks each field fits its width; pads the private data to 92 bytes (a copy). */
    public CmReq {
        privateData = pad(privateData);
        if ((localQpn & ~0xFF_FFFF) != 0 || (localEecn & ~0xFF_FFFF) != 0 || (remoteEecn & ~0xFF_FFFF) != 0
                || (startingPsn & ~0xFF_FFFF) != 0 || (responderResources & ~0xFF) != 0
                || (initiatorDepth & ~0xFF) != 0 || (remoteCmResponseTimeout & ~0x1F) != 0
                || (localCmResponseTimeout & ~0x1F) != 0 || (transportServiceType & ~3) != 0 || (retryCount & ~7) != 0
                || (rnrRetryCount & ~7) != 0 || (pathMtu & ~0xF) != 0 || (maxCmRetries & ~0xF) != 0
                || (extendedTransport & ~7) != 0 || (pkey & ~0xFFFF) != 0) {
            throw new IllegalArgumentException("a REQ field does not fit its width");
        }
        java.util.Objects.requireNonNull(primary, "primary path");
        java.util.Objects.requireNonNull(alternate, "alternate path (CmPath.NONE for none)");
    }

    private static byte[] pad(byte[] d) {
        byte[] p = new byte[PRIVATE_DATA];
        Bytes.putData(p, 0, d == null ? new byte[0] : d, PRIVATE_DATA);
        return p;
    }

    @Override
    public int attrId() {
        return ATTR_REQ;
    }

    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    static CmReq decode(byte[] b, int d) throws MadFormatException {
        int w40 = Bytes.u8(b, d + 43);
        int w44 = Bytes.u8(b, d + 47);
        int m = Bytes.u8(b, d + 50);
        int r = Bytes.u8(b, d + 51);
        Bytes.check((m >>> 4) >= 1 && (m >>> 4) <= 5, "REQ path MTU code " + (m >>> 4) + " is not 1..5");
        return new CmReq(Bytes.u32(b, d), Bytes.u64(b, d + 8), Bytes.u64(b, d + 16), Bytes.u32(b, d + 28),
                Bytes.u24(b, d + 32), Bytes.u8(b, d + 35), Bytes.u24(b, d + 36), Bytes.u8(b, d + 39),
                Bytes.u24(b, d + 40), w40 >>> 3, (w40 >>> 1) & 3, (w40 & 1) != 0,
                Bytes.u24(b, d + 44), w44 >>> 3, w44 & 7, Bytes.u16(b, d + 48),
                m >>> 4, (m & 0x08) != 0, m & 7, r >>> 4, (r & 0x08) != 0, r & 7,
                CmPath.decode(b, d + 52), CmPath.decode(b, d + 96), Bytes.slice(b, d + 140, PRIVATE_DATA));
    }

    @Override
    public void encodeData(byte[] b, int d) {
        Bytes.put32(b, d, localCommId);
        Bytes.put64(b, d + 8, serviceId);
        Bytes.put64(b, d + 16, localCaGuid);
        Bytes.put32(b, d + 28, localQkey);
        Bytes.put32(b, d + 32, localQpn << 8 | responderResources);
        Bytes.put32(b, d + 36, localEecn << 8 | initiatorDepth);
        Bytes.put32(b, d + 40, remoteEecn << 8 | remoteCmResponseTimeout << 3 | transportServiceType << 1
                | (endToEndFlowControl ? 1 : 0));
        Bytes.put32(b, d + 44, startingPsn << 8 | localCmResponseTimeout << 3 | retryCount);
        Bytes.put16(b, d + 48, pkey);
        Bytes.put8(b, d + 50, pathMtu << 4 | (rdcExists ? 0x08 : 0) | rnrRetryCount);
        Bytes.put8(b, d + 51, maxCmRetries << 4 | (srq ? 0x08 : 0) | extendedTransport);
        primary.encode(b, d + 52);
        alternate.encode(b, d + 96);
        System.arraycopy(privateData, 0, b, d + 140, PRIVATE_DATA);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmReq q && java.util.Arrays.equals(toMad(0), q.toMad(0));
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(toMad(0));
    }
}

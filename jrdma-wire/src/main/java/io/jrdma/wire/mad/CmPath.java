package io.jrdma.wire.mad;

/**
 * A path in a REQ (primary at class-data byte 52, alternate at 96; 44 bytes each):
 * local LID (2), remote LID (2), local GID (16), remote GID (16), flow label (20 bits) | reserved (6) |
 * packet rate (6), traffic class (1), hop limit (1), SL (4) | subnet local (1) | reserved (3),
 * local ACK timeout (5) | reserved (3).
 *
 * <p>On RoCE the LIDs are 0xFFFF (the permissive LID) and the GIDs the IP addresses
 * (IPv4-mapped for IPv4).
 */
public record CmPath(int localLid, int remoteLid, byte[] localGid, byte[] remoteGid, int flowLabel, int packetRate,
                     int trafficClass, int hopLimit, int sl, boolean subnetLocal, int localAckTimeout) {
    /** Bytes of a path. */
    public static final int LENGTH = 44;
    /** The permissive LID, what Linux puts in a RoCE REQ's LID fields. */
    public static final int PERMISSIVE_LID = 0xFFFF;
    /** An absent path (the alternate one of a REQ without one): all zero. */
    public static final CmPath NONE = new CmPath(0, 0, new byte[16], new byte[16], 0, 0, 0, 0, 0, false, 0);

    /** Copies the GIDs; checks each field fits. */
    public CmPath {
        localGid = Bytes.gid(localGid);
        remoteGid = Bytes.gid(remoteGid);
        if ((flowLabel & ~0xF_FFFF) != 0 || (packetRate & ~0x3F) != 0 || (sl & ~0xF) != 0
                || (localAckTimeout & ~0x1F) != 0 || (localLid & ~0xFFFF) != 0 || (remoteLid & ~0xFFFF) != 0
                || (trafficClass & ~0xFF) != 0 || (hopLimit & ~0xFF) != 0) {
            throw new IllegalArgumentException("a path field does not fit its width: " + this);
        }
    }

    @Override
    public byte[] localGid() {
        return localGid.clone();
    }

    @Override
    public byte[] remoteGid() {
        return remoteGid.clone();
    }

    static CmPath decode(byte[] b, int off) {
        int w = Bytes.u32(b, off + 36);
        return new CmPath(Bytes.u16(b, off), Bytes.u16(b, off + 2), Bytes.slice(b, off + 4, 16),
                Bytes.slice(b, off + 20, 16), w >>> 12, w & 0x3F, Bytes.u8(b, off + 40), Bytes.u8(b, off + 41),
                Bytes.u8(b, off + 42) >>> 4, (Bytes.u8(b, off + 42) & 0x08) != 0, Bytes.u8(b, off + 43) >>> 3);
    }

    void encode(byte[] b, int off) {
        Bytes.put16(b, off, localLid);
        Bytes.put16(b, off + 2, remoteLid);
        System.arraycopy(localGid, 0, b, off + 4, 16);
        System.arraycopy(remoteGid, 0, b, off + 20, 16);
        Bytes.put32(b, off + 36, flowLabel << 12 | packetRate);
        Bytes.put8(b, off + 40, trafficClass);
        Bytes.put8(b, off + 41, hopLimit);
        Bytes.put8(b, off + 42, sl << 4 | (subnetLocal ? 0x08 : 0));
        Bytes.put8(b, off + 43, localAckTimeout << 3);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CmPath p && localLid == p.localLid && remoteLid == p.remoteLid
                && java.util.Arrays.equals(localGid, p.localGid) && java.util.Arrays.equals(remoteGid, p.remoteGid)
                && flowLabel == p.flowLabel && packetRate == p.packetRate && trafficClass == p.trafficClass
                && hopLimit == p.hopLimit && sl == p.sl && subnetLocal == p.subnetLocal
                && localAckTimeout == p.localAckTimeout;
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(localGid) * 31 + java.util.Arrays.hashCode(remoteGid) + flowLabel;
    }
}

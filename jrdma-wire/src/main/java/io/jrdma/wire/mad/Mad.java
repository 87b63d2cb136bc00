package io.jrdma.wire.mad;

/**
 * The MAD common header (IBA vol 1 §13.4.2): the first 24 bytes of every 256-byte management
 * datagram, which travels as the payload of a UD SEND to QP 1 (the GSI) on RoCE.
 *
 * <pre>
 *  byte 0 base version (1) | 1 management class | 2 class version | 3 R bit + method
 *  4..5 status | 6..7 class specific | 8..15 transaction ID | 16..17 attribute ID
 *  18..19 reserved | 20..23 attribute modifier | 24..255 class data
 * </pre>
 *
 * @param baseVersion   1
 * @param mgmtClass     the management class ({@link #CLASS_CM} for the communication manager)
 * @param classVersion  the class version (2 for the CM)
 * @param method        the method, response bit (0x80) included
 * @param status        the status field
 * @param classSpecific the class-specific field
 * @param tid           the transaction ID
 * @param attrId        the attribute ID (for the CM: which message)
 * @param attrMod       the attribute modifier
 */
public record Mad(int baseVersion, int mgmtClass, int classVersion, int method, int status, int classSpecific,
                  long tid, int attrId, int attrMod) {
    /** Bytes of a MAD (header and data). */
    public static final int LENGTH = 256;
    /** Bytes of the common header. */
    public static final int HEADER = 24;
    /** Bytes of class data after the header. */
    public static final int DATA = LENGTH - HEADER;
    /** The base version this codec takes. */
    public static final int BASE_VERSION = 1;
    /** The management class of the communication manager. */
    public static final int CLASS_CM = 0x07;
    /** The CM class version Linux speaks. */
    public static final int CM_CLASS_VERSION = 2;
    /** Method Send(), the only one the CM uses for its messages. */
    public static final int METHOD_SEND = 0x03;

    /** @return a Send() header of the CM class for {@code attrId}, transaction {@code tid} */
    public static Mad cmSend(int attrId, long tid) {
        return new Mad(BASE_VERSION, CLASS_CM, CM_CLASS_VERSION, METHOD_SEND, 0, 0, tid, attrId, 0);
    }

    /**
     * Decodes the header at {@code off}.
     *
     * @param len bytes available from {@code off}; a MAD must have all {@link #LENGTH}
     * @throws MadFormatException for fewer than 256 bytes or a base version other than 1
     */
    public static Mad decode(byte[] b, int off, int len) throws MadFormatException {
        Bytes.check(len >= LENGTH, "a MAD is 256 bytes, this datagram carries " + len);
        Mad m = new Mad(Bytes.u8(b, off), Bytes.u8(b, off + 1), Bytes.u8(b, off + 2), Bytes.u8(b, off + 3),
                Bytes.u16(b, off + 4), Bytes.u16(b, off + 6), Bytes.u64(b, off + 8), Bytes.u16(b, off + 16),
                Bytes.u32(b, off + 20));
        Bytes.check(m.baseVersion == BASE_VERSION, "MAD base version " + m.baseVersion + ", not 1");
        return m;
    }

    /** Writes the 24 header bytes at {@code off} (the reserved field zero). */
    public void encode(byte[] b, int off) {
        Bytes.put8(b, off, baseVersion);
        Bytes.put8(b, off + 1, mgmtClass);
        Bytes.put8(b, off + 2, classVersion);
        Bytes.put8(b, off + 3, method);
        Bytes.put16(b, off + 4, status);
        Bytes.put16(b, off + 6, classSpecific);
        Bytes.put64(b, off + 8, tid);
        Bytes.put16(b, off + 16, attrId);
        Bytes.put16(b, off + 18, 0);
        Bytes.put32(b, off + 20, attrMod);
    }
}

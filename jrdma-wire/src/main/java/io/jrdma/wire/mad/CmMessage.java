package io.jrdma.wire.mad;

/**
 * A communication manager message (IBA vol 1 §12.6): the class data of a CM MAD. Offsets in the
 * records' documentation count from the start of the class data (MAD byte 24), as Linux's
 * {@code ibta_vol1_c12.h} does.
 */
public sealed interface CmMessage permits CmReq, CmRep, CmRtu, CmRej, CmMra, CmDreq, CmDrep {
    /** Attribute ID of a ConnectRequest. */
    int ATTR_REQ = 0x0010;
    /** Attribute ID of a MessageReceiptAcknowledgement. */
    int ATTR_MRA = 0x0011;
    /** Attribute ID of a ConnectReject. */
    int ATTR_REJ = 0x0012;
    /** Attribute ID of a ConnectReply. */
    int ATTR_REP = 0x0013;
    /** Attribute ID of a ReadyToUse. */
    int ATTR_RTU = 0x0014;
    /** Attribute ID of a DisconnectRequest. */
    int ATTR_DREQ = 0x0015;
    /** Attribute ID of a DisconnectReply. */
    int ATTR_DREP = 0x0016;

    /** {@return this message's attribute ID} */
    int attrId();

    /** {@return the sender's communication ID} */
    int localCommId();

    /** Writes the class data (232 bytes, reserved bits zero) at {@code off}. */
    void encodeData(byte[] b, int off);

    /** {@return a whole 256-byte CM MAD: a Send() header with transaction {@code tid}, then this message} */
    default byte[] toMad(long tid) {
        byte[] b = new byte[Mad.LENGTH];
        Mad.cmSend(attrId(), tid).encode(b, 0);
        encodeData(b, Mad.HEADER);
        return b;
    }

    /**
     * Decodes the CM message of the MAD at {@code off}; the header must be class 0x07, class version
     * 2, method Send(), and an attribute this codec knows.
     *
     * @param len bytes available from {@code off}
     * @throws MadFormatException for anything else, or a field out of range
     */
    static CmMessage decode(byte[] b, int off, int len) throws MadFormatException {
        Mad h = Mad.decode(b, off, len);
        Bytes.check(h.mgmtClass() == Mad.CLASS_CM, "management class 0x" + Integer.toHexString(h.mgmtClass())
                + " is not the CM's (0x07)");
        Bytes.check(h.classVersion() == Mad.CM_CLASS_VERSION, "CM class version " + h.classVersion() + ", not 2");
        Bytes.check(h.method() == Mad.METHOD_SEND, "CM method 0x" + Integer.toHexString(h.method()) + ", not Send()");
        int d = off + Mad.HEADER;
        return switch (h.attrId()) {
            case ATTR_REQ -> CmReq.decode(b, d);
            case ATTR_REP -> CmRep.decode(b, d);
            case ATTR_RTU -> new CmRtu(Bytes.u32(b, d), Bytes.u32(b, d + 4), Bytes.slice(b, d + 8, CmRtu.PRIVATE_DATA));
            case ATTR_REJ -> CmRej.decode(b, d);
            case ATTR_MRA -> CmMra.decode(b, d);
            case ATTR_DREQ -> new CmDreq(Bytes.u32(b, d), Bytes.u32(b, d + 4), Bytes.u24(b, d + 8),
                    Bytes.slice(b, d + 12, CmDreq.PRIVATE_DATA));
            case ATTR_DREP -> new CmDrep(Bytes.u32(b, d), Bytes.u32(b, d + 4), Bytes.slice(b, d + 8, CmDrep.PRIVATE_DATA));
            default -> throw new MadFormatException("CM attribute 0x" + Integer.toHexString(h.attrId())
                    + " is not one this CM takes (REQ, MRA, REJ, REP, RTU, DREQ, DREP)");
        };
    }
}

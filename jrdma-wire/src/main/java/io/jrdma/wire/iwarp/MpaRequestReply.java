package io.jrdma.wire.iwarp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A decoded MPA Request or Reply frame ({@link Mpa}), for the connection-setup path: it
 * copies the private data and reports malformed frames with an
 * {@link IwarpProtocolException} naming the problem.
 *
 * @param reply true for "MPA ID Rep Frame", false for "MPA ID Req Frame"
 * @param flags the flags byte as sent (M, C, R, H, reserved)
 * @param revision Rev (1 or 2)
 * @param privateData the private data; for revision 2 it starts with the
 *        {@link MpaEnhanced} block
 */
public record MpaRequestReply(boolean reply, int flags, int revision, byte[] privateData) {

    /** Validates the field ranges and copies the private data. */
    public MpaRequestReply {
        if (flags < 0 || flags > 0xFF || revision < 0 || revision > 0xFF) {
            throw new IllegalArgumentException("flags and revision are bytes");
        }
        if (privateData.length > Mpa.MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data longer than 512 bytes: "
                    + privateData.length);
        }
        privateData = privateData.clone();
    }

    /**
     * An RFC 6581 (revision 2, flag H) frame with the IRD/ORD block and up to
     * {@link Mpa#MAX_APPLICATION_DATA} bytes of application private data; no markers.
     * IRD and ORD must fit 14 bits; the four booleans are the RFC 6581 P, S, W, R bits.
     */
    public static MpaRequestReply enhanced(boolean reply, boolean crc, boolean reject, int ird,
            int ord, boolean peerToPeer, boolean rtrSend, boolean rtrWrite, boolean rtrRead,
            byte[] applicationData) {
        if (applicationData.length > Mpa.MAX_APPLICATION_DATA) {
            throw new IllegalArgumentException("application private data longer than "
                    + Mpa.MAX_APPLICATION_DATA + " bytes: " + applicationData.length);
        }
        if (ird < 0 || ird > MpaEnhanced.IRD_ORD_MASK
                || ord < 0 || ord > MpaEnhanced.IRD_ORD_MASK) {
            throw new IllegalArgumentException("IRD/ORD must fit 14 bits: " + ird + "/" + ord);
        }
        byte[] pd = new byte[MpaEnhanced.LENGTH + applicationData.length];
        MemorySegment seg = MemorySegment.ofArray(pd);
        MpaEnhanced.write(seg, 0, ird, ord, peerToPeer, rtrSend, rtrWrite, rtrRead);
        System.arraycopy(applicationData, 0, pd, MpaEnhanced.LENGTH, applicationData.length);
        int flags = Mpa.FLAG_ENHANCED | (crc ? Mpa.FLAG_CRC : 0) | (reject ? Mpa.FLAG_REJECT : 0);
        return new MpaRequestReply(reply, flags, Mpa.REVISION_2, pd);
    }

    /**
     * Decodes the Request ({@code reply == false}) or Reply at {@code off}, of which
     * {@code available} bytes are in the segment.
     *
     * @throws IwarpProtocolException if the frame is malformed or incomplete (then
     *         {@link IwarpError#MPA_FRAME_TRUNCATED}); see {@link Mpa#check}
     */
    public static MpaRequestReply decode(MemorySegment s, long off, long available,
            boolean reply) throws IwarpProtocolException {
        int r = Mpa.check(s, off, available, reply);
        if (r < 0) {
            IwarpError e = IwarpError.fromResult(r);
            throw new IwarpProtocolException(e, detail(e, s, off, available));
        }
        if (r == 0) {
            throw new IwarpProtocolException(IwarpError.MPA_FRAME_TRUNCATED,
                    available + " bytes, frame needs "
                            + (available < Mpa.HEADER_LENGTH ? "at least " + Mpa.HEADER_LENGTH
                                    : Mpa.HEADER_LENGTH + Mpa.privateDataLength(s, off)));
        }
        byte[] pd = s.asSlice(off + Mpa.PRIVATE_DATA_OFFSET, r - Mpa.HEADER_LENGTH)
                .toArray(ValueLayout.JAVA_BYTE);
        return new MpaRequestReply(reply, Mpa.flags(s, off), Mpa.revision(s, off), pd);
    }

    private static String detail(IwarpError e, MemorySegment s, long off, long available) {
        return switch (e) {
            case MPA_BAD_KEY, MPA_WRONG_KEY -> "key bytes " + HexFormat.of().formatHex(
                    s.asSlice(off, Mpa.KEY_LENGTH).toArray(ValueLayout.JAVA_BYTE));
            case MPA_BAD_REVISION -> "Rev " + Mpa.revision(s, off);
            case MPA_MARKERS_UNSUPPORTED -> String.format("flags 0x%02X", Mpa.flags(s, off));
            case MPA_PRIVATE_DATA_TOO_LONG, MPA_ENHANCED_DATA_MISSING ->
                    "PD_Length " + Mpa.privateDataLength(s, off);
            default -> "";
        };
    }

    /** Frame length: 20 + private data. */
    public int length() {
        return Mpa.HEADER_LENGTH + privateData.length;
    }

    /** Writes the frame at {@code off}; returns its length. */
    public int encode(MemorySegment s, long off) {
        Mpa.writeHeader(s, off, reply, flags, revision, privateData.length);
        MemorySegment.copy(privateData, 0, s, ValueLayout.JAVA_BYTE,
                off + Mpa.PRIVATE_DATA_OFFSET, privateData.length);
        return length();
    }

    /** The private data (a copy). */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    /** M: markers wanted. */
    public boolean markers() {
        return (flags & Mpa.FLAG_MARKERS) != 0;
    }

    /** C: CRC wanted. */
    public boolean crc() {
        return (flags & Mpa.FLAG_CRC) != 0;
    }

    /** R: rejected. */
    public boolean reject() {
        return (flags & Mpa.FLAG_REJECT) != 0;
    }

    /** H: enhanced flag (Linux convention with revision 2). */
    public boolean enhancedFlag() {
        return (flags & Mpa.FLAG_ENHANCED) != 0;
    }

    /** True if this is a revision 2 frame carrying the RFC 6581 block. */
    public boolean hasEnhancedBlock() {
        return revision == Mpa.REVISION_2 && privateData.length >= MpaEnhanced.LENGTH;
    }

    private MemorySegment block() {
        if (!hasEnhancedBlock()) {
            throw new IllegalStateException("not an RFC 6581 (revision 2) frame");
        }
        return MemorySegment.ofArray(privateData);
    }

    /** RFC 6581 IRD. */
    public int ird() {
        return MpaEnhanced.ird(block(), 0);
    }

    /** RFC 6581 ORD. */
    public int ord() {
        return MpaEnhanced.ord(block(), 0);
    }

    /** RFC 6581 IRD word (flags and IRD). */
    public int irdWord() {
        return MpaEnhanced.irdWord(block(), 0);
    }

    /** RFC 6581 ORD word (flags and ORD). */
    public int ordWord() {
        return MpaEnhanced.ordWord(block(), 0);
    }

    /** RFC 6581 peer-to-peer flag. */
    public boolean peerToPeer() {
        return MpaEnhanced.peerToPeer(block(), 0);
    }

    /** The application's private data: all of it (revision 1) or after the RFC 6581 block. */
    public byte[] applicationData() {
        int from = hasEnhancedBlock() ? MpaEnhanced.LENGTH : 0;
        return Arrays.copyOfRange(privateData, from, privateData.length);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MpaRequestReply m && m.reply == reply && m.flags == flags
                && m.revision == revision && Arrays.equals(m.privateData, privateData);
    }

    @Override
    public int hashCode() {
        return ((Boolean.hashCode(reply) * 31 + flags) * 31 + revision) * 31
                + Arrays.hashCode(privateData);
    }

    @Override
    public String toString() {
        return "MpaRequestReply[" + (reply ? "Reply" : "Request")
                + String.format(", flags=0x%02X", flags) + ", rev=" + revision
                + ", pd=" + HexFormat.of().formatHex(privateData) + "]";
    }
}

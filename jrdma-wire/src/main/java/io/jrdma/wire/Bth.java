package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE16;
import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * Base Transport Header (BTH), 12 bytes, the first header of every RoCEv2 packet after UDP.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |     OpCode    |S|M|Pad|  TVer |             P_Key             |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |F|B|   resv6a  |                 Destination QP                |  bytes 4-7
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |A|    resv7    |                      PSN                      |  bytes 8-11
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>S = solicited event (0x80 of byte 1), M = MigReq (0x40), PadCnt (0x30, two bits),
 * TVer (0x0F, transport header version, 0); F/B = FECN/BECN, which with resv6a form the
 * byte rxe calls {@code resv8a} (masked to 0xFF in the ICRC); A = AckReq (0x80 of byte 8).
 * Source: IBA Vol 1 §9.2 (Base Transport Header); Linux {@code rxe_hdr.h}
 * ({@code struct rxe_bth}, {@code BTH_SE_MASK 0x80}, {@code BTH_MIG_MASK 0x40},
 * {@code BTH_PAD_MASK 0x30}, {@code BTH_TVER_MASK 0x0f}, {@code BTH_QPN_MASK 0x00ffffff},
 * {@code BTH_ACK_MASK 0x80000000}, {@code BTH_PSN_MASK 0x00ffffff}); jrdma spec D2.
 *
 * <p>All methods are static, take the offset of the BTH in the segment, and never allocate.
 */
public final class Bth {
    private Bth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 12;

    /** Byte 1 flag: solicited event. */
    public static final int SE_MASK = 0x80;
    /** Byte 1 flag: migration request. */
    public static final int MIG_MASK = 0x40;
    /** Byte 1 field: pad count (two bits). */
    public static final int PAD_MASK = 0x30;
    /** Byte 1 field: transport header version. */
    public static final int TVER_MASK = 0x0F;
    /** Byte 4 flag: forward explicit congestion notification. */
    public static final int FECN_MASK = 0x80;
    /** Byte 4 flag: backward explicit congestion notification. */
    public static final int BECN_MASK = 0x40;
    /** Mask of the 24-bit destination QP number. */
    public static final int QPN_MASK = 0x00FF_FFFF;
    /** Mask of the 24-bit packet sequence number. */
    public static final int PSN_MASK = 0x00FF_FFFF;
    /** The AckReq bit in the big-endian word at byte 8. */
    public static final int ACK_MASK = 0x8000_0000;
    /** The default partition key. */
    public static final int DEFAULT_PKEY = 0xFFFF;

    /** OpCode, byte 0, 0..255. */
    public static int opcode(MemorySegment s, long off) {
        return s.get(U8, off) & 0xFF;
    }

    /** Solicited event flag. */
    public static boolean se(MemorySegment s, long off) {
        return (s.get(U8, off + 1) & SE_MASK) != 0;
    }

    /** MigReq flag. */
    public static boolean migReq(MemorySegment s, long off) {
        return (s.get(U8, off + 1) & MIG_MASK) != 0;
    }

    /** Pad count, 0..3: zero bytes appended to the payload to align it to 4 bytes. */
    public static int padCnt(MemorySegment s, long off) {
        return (s.get(U8, off + 1) & PAD_MASK) >>> 4;
    }

    /** Transport header version (0 for the current IBA). */
    public static int tver(MemorySegment s, long off) {
        return s.get(U8, off + 1) & TVER_MASK;
    }

    /** Partition key, 16 bits. */
    public static int pkey(MemorySegment s, long off) {
        return s.get(BE16, off + 2) & 0xFFFF;
    }

    /** Byte 4 as a whole: FECN, BECN and resv6a ({@code resv8a} in rxe). */
    public static int resv8a(MemorySegment s, long off) {
        return s.get(U8, off + 4) & 0xFF;
    }

    /** FECN flag (bit 0x80 of byte 4). */
    public static boolean fecn(MemorySegment s, long off) {
        return (s.get(U8, off + 4) & FECN_MASK) != 0;
    }

    /** BECN flag (bit 0x40 of byte 4). */
    public static boolean becn(MemorySegment s, long off) {
        return (s.get(U8, off + 4) & BECN_MASK) != 0;
    }

    /** Destination QP number, 24 bits. */
    public static int destQp(MemorySegment s, long off) {
        return s.get(BE32, off + 4) & QPN_MASK;
    }

    /** AckReq flag. */
    public static boolean ackReq(MemorySegment s, long off) {
        return (s.get(U8, off + 8) & 0x80) != 0;
    }

    /** Packet sequence number, 24 bits. */
    public static int psn(MemorySegment s, long off) {
        return s.get(BE32, off + 8) & PSN_MASK;
    }

    /**
     * Writes all 12 bytes. Reserved bits (byte 4, resv7) are zero and TVer is 0; values are
     * masked to their field widths.
     */
    public static void write(MemorySegment s, long off, int opcode, boolean se, boolean migReq,
            int padCnt, int pkey, int destQp, boolean ackReq, int psn) {
        int flags = (se ? SE_MASK : 0) | (migReq ? MIG_MASK : 0) | ((padCnt & 3) << 4);
        s.set(BE32, off, ((opcode & 0xFF) << 24) | (flags << 16) | (pkey & 0xFFFF));
        s.set(BE32, off + 4, destQp & QPN_MASK);
        s.set(BE32, off + 8, (ackReq ? ACK_MASK : 0) | (psn & PSN_MASK));
    }

    /** Sets the PSN, keeping byte 8 (AckReq and resv7) unchanged. */
    public static void psn(MemorySegment s, long off, int psn) {
        int w = s.get(BE32, off + 8);
        s.set(BE32, off + 8, (w & ~PSN_MASK) | (psn & PSN_MASK));
    }

    /** Sets or clears AckReq, keeping the PSN and resv7 unchanged. */
    public static void ackReq(MemorySegment s, long off, boolean a) {
        int b = s.get(U8, off + 8);
        s.set(U8, off + 8, (byte) (a ? (b | 0x80) : (b & 0x7F)));
    }

    /** Sets the opcode (byte 0). */
    public static void opcode(MemorySegment s, long off, int opcode) {
        s.set(U8, off, (byte) opcode);
    }

    /** Sets the pad count, keeping the other bits of byte 1. */
    public static void padCnt(MemorySegment s, long off, int padCnt) {
        int b = s.get(U8, off + 1);
        s.set(U8, off + 1, (byte) ((b & ~PAD_MASK) | ((padCnt & 3) << 4)));
    }

    /** Sets the solicited event flag, keeping the other bits of byte 1. */
    public static void se(MemorySegment s, long off, boolean se) {
        int b = s.get(U8, off + 1);
        s.set(U8, off + 1, (byte) (se ? (b | SE_MASK) : (b & ~SE_MASK)));
    }

    /** Sets byte 4 (FECN, BECN, resv6a) as a whole. */
    public static void resv8a(MemorySegment s, long off, int v) {
        s.set(U8, off + 4, (byte) v);
    }

    /** Sets the destination QP, keeping byte 4. */
    public static void destQp(MemorySegment s, long off, int destQp) {
        int w = s.get(BE32, off + 4);
        s.set(BE32, off + 4, (w & ~QPN_MASK) | (destQp & QPN_MASK));
    }
}

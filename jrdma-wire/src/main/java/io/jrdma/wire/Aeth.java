package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE32;
import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * ACK Extended Transport Header (AETH), 4 bytes: carried by ACKNOWLEDGE, ATOMIC ACKNOWLEDGE
 * and RDMA READ Response First/Last/Only.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |    Syndrome   |                      MSN                      |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>Syndrome: bits 7-5 are the type ({@code 000} ACK, {@code 001} RNR NAK, {@code 011} NAK,
 * {@code 010} reserved); bits 4-0 are the credit count (ACK, {@code 0x1F} = unlimited/invalid
 * credit), the RNR timer code (RNR NAK) or the NAK code. MSN = message sequence number,
 * the 24-bit count of completed requests.
 * Source: IBA Vol 1 §9.3 (AETH); Linux {@code rxe_hdr.h}
 * ({@code struct rxe_aeth { __be32 smsn; }}, {@code AETH_SYN_MASK 0xff000000},
 * {@code AETH_MSN_MASK 0x00ffffff}, {@code AETH_TYPE_MASK 0xe0}, {@code AETH_ACK 0x00},
 * {@code AETH_RNR_NAK 0x20}, {@code AETH_NAK 0x60}, {@code AETH_ACK_UNLIMITED 0x1f},
 * {@code AETH_NAK_PSN_SEQ_ERROR 0x60} ... {@code AETH_NAK_REM_OP_ERR 0x63});
 * RNR timer values from {@code enum ib_rnr_timeout} (ib_verbs.h); jrdma spec D5.
 */
public final class Aeth {
    private Aeth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 4;

    /** Mask of the type bits of the syndrome. */
    public static final int TYPE_MASK = 0xE0;
    /** Syndrome type: positive acknowledgement (low 5 bits = credit count). */
    public static final int ACK = 0x00;
    /** Syndrome type: receiver-not-ready NAK (low 5 bits = RNR timer code). */
    public static final int RNR_NAK = 0x20;
    /** Syndrome type: NAK (low 5 bits = NAK code). */
    public static final int NAK = 0x60;
    /** Credit count meaning "unlimited / no credit information". */
    public static final int CREDIT_UNLIMITED = 0x1F;
    /** ACK syndrome with unlimited credits, as rxe sends it. */
    public static final int ACK_UNLIMITED = ACK | CREDIT_UNLIMITED;
    /** NAK: PSN sequence error. */
    public static final int NAK_PSN_SEQ_ERR = 0x60;
    /** NAK: invalid request. */
    public static final int NAK_INVALID_REQUEST = 0x61;
    /** NAK: remote access error. */
    public static final int NAK_REMOTE_ACCESS = 0x62;
    /** NAK: remote operational error. */
    public static final int NAK_REMOTE_OP = 0x63;
    /** Mask of the 24-bit MSN. */
    public static final int MSN_MASK = 0x00FF_FFFF;

    /** Syndrome, 8 bits. */
    public static int syndrome(MemorySegment s, long off) {
        return s.get(U8, off) & 0xFF;
    }

    /** Message sequence number, 24 bits. */
    public static int msn(MemorySegment s, long off) {
        return s.get(BE32, off) & MSN_MASK;
    }

    /** Writes all 4 bytes. */
    public static void write(MemorySegment s, long off, int syndrome, int msn) {
        s.set(BE32, off, ((syndrome & 0xFF) << 24) | (msn & MSN_MASK));
    }

    /** True if the syndrome is an ACK. */
    public static boolean isAck(int syn) {
        return (syn & TYPE_MASK) == ACK;
    }

    /** True if the syndrome is an RNR NAK. */
    public static boolean isRnrNak(int syn) {
        return (syn & TYPE_MASK) == RNR_NAK;
    }

    /** True if the syndrome is a NAK (not RNR). */
    public static boolean isNak(int syn) {
        return (syn & TYPE_MASK) == NAK;
    }

    /** The RNR timer code of an RNR NAK syndrome (low 5 bits). */
    public static int rnrTimer(int syn) {
        return syn & 0x1F;
    }

    /** The credit count of an ACK syndrome (low 5 bits; {@link #CREDIT_UNLIMITED} = none). */
    public static int credits(int syn) {
        return syn & 0x1F;
    }

    /** Builds an RNR NAK syndrome for a 5-bit timer code. */
    public static int rnrNak(int timerCode) {
        return RNR_NAK | (timerCode & 0x1F);
    }

    private static final long[] RNR_TIMER_NANOS = {
        655_360_000L, 10_000L, 20_000L, 30_000L, 40_000L, 60_000L, 80_000L, 120_000L,
        160_000L, 240_000L, 320_000L, 480_000L, 640_000L, 960_000L, 1_280_000L, 1_920_000L,
        2_560_000L, 3_840_000L, 5_120_000L, 7_680_000L, 10_240_000L, 15_360_000L, 20_480_000L,
        30_720_000L, 40_960_000L, 61_440_000L, 81_920_000L, 122_880_000L, 163_840_000L,
        245_760_000L, 327_680_000L, 491_520_000L,
    };

    /** The RNR NAK timer for a 5-bit code, in nanoseconds (code 0 = 655.36 ms, 1 = 0.01 ms ...). */
    public static long rnrTimerNanos(int timerCode) {
        return RNR_TIMER_NANOS[timerCode & 0x1F];
    }
}

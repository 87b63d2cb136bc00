package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.U8;

import java.lang.foreign.MemorySegment;

/**
 * RDMAP control byte, opcodes and their use of the DDP header (RFC 5040 §4, RFC 7306
 * for opcodes 8 to 11). The control byte is the first RsvdULP byte of the DDP header, so
 * every method here takes the offset of the <b>DDP header</b>.
 *
 * <pre>
 *  0 1 2 3 4 5 6 7
 * +-+-+-+-+-+-+-+-+
 * | RV|Rsv| OpCode|   byte 1 of the DDP header
 * +-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>RV = RDMAP version (0xC0, must be 1), Rsv (0x30, zero), OpCode (0x0F).
 *
 * <pre>
 * opcode  message                          DDP      RDMAP header after the DDP header
 *   0     RDMA Write                       tagged   -
 *   1     RDMA Read Request                QN 1     {@link ReadRequest} (28 B)
 *   2     RDMA Read Response               tagged   -
 *   3     Send                             QN 0     -
 *   4     Send with Invalidate             QN 0     - (Invalidate STag in RsvdULP)
 *   5     Send with Solicited Event        QN 0     -
 *   6     Send with SE and Invalidate      QN 0     - (Invalidate STag in RsvdULP)
 *   7     Terminate                        QN 2     {@link Terminate} (4 B + optional)
 *   8     Immediate Data (RFC 7306)        QN 0     {@link ImmediateData} (8 B)
 *   9     Immediate Data with SE           QN 0     {@link ImmediateData} (8 B)
 *  10     Atomic Request (RFC 7306)        QN 1     {@link AtomicRequest} (52 B)
 *  11     Atomic Response (RFC 7306)       QN 3     {@link AtomicResponse} (12 B)
 * </pre>
 *
 * <p>Opcodes 0-7, QN 0-2: RFC 5040 §4 and Linux siw ({@code enum rdma_opcode},
 * {@code enum rdmap_untagged_qn}), confirmed by the siw captures. RFC 7306 (siw does not
 * implement it): Atomic Request 0x0A and Atomic Response 0x0B and their headers agree with
 * Wireshark's dissector, which decodes a jrdma capture with the values sent; Atomic Requests on
 * QN 1 (sharing the READ Requests' MSNs) and Atomic Responses on QN 3 agree with urdma's RFC 7306
 * atomics (Wireshark does not check queue numbers). Immediate Data (8, 9) on QN 0 with an 8-byte
 * header has no independent source here (Wireshark calls 8 and 9 "Unknown"): RFC 7306 as
 * recalled. The RFC text was not at hand when this was checked. See docs/iwarp-wire.md.
 */
public final class Rdmap {
    private Rdmap() {
    }

    /** RDMAP version carried in RV. */
    public static final int VERSION = 1;
    /** Control byte: version bits. */
    public static final int VERSION_MASK = 0xC0;
    /** Control byte: reserved bits. */
    public static final int RESERVED_MASK = 0x30;
    /** Control byte: opcode bits. */
    public static final int OPCODE_MASK = 0x0F;

    /** RDMA Write (tagged). */
    public static final int WRITE = 0;
    /** RDMA Read Request (untagged, QN 1). */
    public static final int READ_REQUEST = 1;
    /** RDMA Read Response (tagged). */
    public static final int READ_RESPONSE = 2;
    /** Send (QN 0). */
    public static final int SEND = 3;
    /** Send with Invalidate (QN 0). */
    public static final int SEND_INVALIDATE = 4;
    /** Send with Solicited Event (QN 0). */
    public static final int SEND_SE = 5;
    /** Send with Solicited Event and Invalidate (QN 0). */
    public static final int SEND_SE_INVALIDATE = 6;
    /** Terminate (QN 2). */
    public static final int TERMINATE = 7;
    /** RFC 7306 Immediate Data (QN 0). */
    public static final int IMMEDIATE_DATA = 8;
    /** RFC 7306 Immediate Data with Solicited Event (QN 0). */
    public static final int IMMEDIATE_DATA_SE = 9;
    /** RFC 7306 Atomic Request (QN 1, see the class comment). */
    public static final int ATOMIC_REQUEST = 10;
    /** RFC 7306 Atomic Response (QN 3, see the class comment). */
    public static final int ATOMIC_RESPONSE = 11;
    /** Number of defined opcodes; 12 to 15 are unassigned. */
    public static final int OPCODE_COUNT = 12;

    /** Untagged queue of Send, Send with Invalidate/SE and Immediate Data messages. */
    public static final int QN_SEND = 0;
    /** Untagged queue of RDMA Read Requests (and, RFC 7306, Atomic Requests). */
    public static final int QN_READ_REQUEST = 1;
    /** Untagged queue of Terminate messages. */
    public static final int QN_TERMINATE = 2;
    /** RFC 7306 untagged queue of Atomic Responses. */
    public static final int QN_ATOMIC_RESPONSE = 3;

    private static final String[] NAMES = {
        "WRITE", "READ_REQUEST", "READ_RESPONSE", "SEND", "SEND_INVALIDATE", "SEND_SE",
        "SEND_SE_INVALIDATE", "TERMINATE", "IMMEDIATE_DATA", "IMMEDIATE_DATA_SE",
        "ATOMIC_REQUEST", "ATOMIC_RESPONSE",
    };
    /** Expected QN per opcode, -1 for tagged opcodes. */
    private static final int[] QUEUE = {-1, 1, -1, 0, 0, 0, 0, 2, 0, 0, 1, 3};
    /** DDP + RDMAP header length per opcode (Terminate: fixed part only). */
    private static final int[] HEADER = {
        Ddp.TAGGED_HEADER_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH + ReadRequest.LENGTH,
        Ddp.TAGGED_HEADER_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH + Terminate.CONTROL_LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH + ImmediateData.LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH + ImmediateData.LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH + AtomicRequest.LENGTH,
        Ddp.UNTAGGED_HEADER_LENGTH + AtomicResponse.LENGTH,
    };

    /** The RDMAP control byte (byte 1 of the DDP header). */
    public static int control(MemorySegment s, long ddpOff) {
        return s.get(U8, ddpOff + Ddp.ULP_CONTROL_OFFSET) & 0xFF;
    }

    /** RV: RDMAP version (1). */
    public static int version(MemorySegment s, long ddpOff) {
        return (control(s, ddpOff) & VERSION_MASK) >>> 6;
    }

    /** OpCode, 0..15. */
    public static int opcode(MemorySegment s, long ddpOff) {
        return control(s, ddpOff) & OPCODE_MASK;
    }

    /** Invalidate STag of SEND with Invalidate (the untagged RsvdULP word). */
    public static int invalidateStag(MemorySegment s, long ddpOff) {
        return Ddp.ulpWord(s, ddpOff);
    }

    /** The control byte for an opcode: RV = 1, reserved bits zero. */
    public static int controlByte(int opcode) {
        return (VERSION << 6) | (opcode & OPCODE_MASK);
    }

    /** True for the opcodes defined by RFC 5040 and RFC 7306 (0..11). */
    public static boolean isDefined(int opcode) {
        return opcode >= 0 && opcode < OPCODE_COUNT;
    }

    /** True for the opcodes carried in tagged DDP segments (WRITE, READ_RESPONSE). */
    public static boolean isTagged(int opcode) {
        return opcode == WRITE || opcode == READ_RESPONSE;
    }

    /** The untagged queue number an opcode uses, -1 for tagged or undefined opcodes. */
    public static int queueNumber(int opcode) {
        return isDefined(opcode) ? QUEUE[opcode] : -1;
    }

    /**
     * Bytes from the start of the DDP header to the payload for an opcode, or -1 if it is
     * undefined. For TERMINATE this is the fixed part; see {@link Terminate#length}.
     */
    public static int headerLength(int opcode) {
        return isDefined(opcode) ? HEADER[opcode] : -1;
    }

    /** True for the opcodes that carry an Invalidate STag (4 and 6). */
    public static boolean carriesInvalidateStag(int opcode) {
        return opcode == SEND_INVALIDATE || opcode == SEND_SE_INVALIDATE;
    }

    /** True for the opcodes that ask for a solicited event (5, 6, 9). */
    public static boolean solicitedEvent(int opcode) {
        return opcode == SEND_SE || opcode == SEND_SE_INVALIDATE || opcode == IMMEDIATE_DATA_SE;
    }

    /** A name for logs ("WRITE", ...; "OPCODE_12" for undefined ones). */
    public static String name(int opcode) {
        return isDefined(opcode) ? NAMES[opcode] : "OPCODE_" + opcode;
    }

    /**
     * Checks the DDP and RDMAP headers of a ULPDU of {@code ulpduLength} bytes starting at
     * {@code ddpOff}, in this order: DDP version, RDMAP version, opcode defined, T bit
     * matching the opcode, queue number matching the opcode, ULPDU long enough for the
     * headers. Returns the offset of the payload from {@code ddpOff} (the DDP + RDMAP header
     * length; for TERMINATE including its optional parts) or a negative {@link IwarpError}
     * result. The caller guarantees {@code ulpduLength} bytes at {@code ddpOff}; nothing is
     * read beyond them, nothing is allocated, nothing is thrown.
     */
    public static int check(MemorySegment s, long ddpOff, int ulpduLength) {
        if (ulpduLength < Ddp.TAGGED_HEADER_LENGTH) {
            return IwarpError.ULPDU_TOO_SHORT.result();
        }
        boolean tagged = Ddp.tagged(s, ddpOff);
        if (Ddp.version(s, ddpOff) != Ddp.VERSION) {
            return tagged ? IwarpError.DDP_TAGGED_BAD_VERSION.result()
                    : IwarpError.DDP_UNTAGGED_BAD_VERSION.result();
        }
        int control = control(s, ddpOff);
        if ((control & VERSION_MASK) >>> 6 != VERSION) {
            return IwarpError.RDMAP_BAD_VERSION.result();
        }
        int opcode = control & OPCODE_MASK;
        if (opcode >= OPCODE_COUNT) {
            return IwarpError.RDMAP_UNKNOWN_OPCODE.result();
        }
        if (tagged != isTagged(opcode)) {
            return IwarpError.RDMAP_TAGGED_MISMATCH.result();
        }
        if (!tagged) {
            if (ulpduLength < Ddp.UNTAGGED_HEADER_LENGTH) {
                return IwarpError.ULPDU_TOO_SHORT.result();
            }
            if (Ddp.queueNumber(s, ddpOff) != QUEUE[opcode]) {
                return IwarpError.DDP_INVALID_QN.result();
            }
        }
        if (opcode == TERMINATE) {
            int t = Terminate.length(s, ddpOff + Ddp.UNTAGGED_HEADER_LENGTH,
                    ulpduLength - Ddp.UNTAGGED_HEADER_LENGTH);
            return t < 0 ? t : Ddp.UNTAGGED_HEADER_LENGTH + t;
        }
        int len = HEADER[opcode];
        return ulpduLength >= len ? len : IwarpError.ULPDU_TOO_SHORT.result();
    }
}

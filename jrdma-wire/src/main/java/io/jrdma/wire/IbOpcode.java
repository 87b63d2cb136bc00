package io.jrdma.wire;

/**
 * The IBA transport opcodes as data: which extended headers follow the BTH (and in which
 * order), whether there is a payload, and what the packet means to the requester and the
 * responder. One {@code int} mask per opcode in a {@code static int[256]} table (0 for
 * opcodes that are invalid or not supported: RD, CNP, manufacturer-specific, reserved, and
 * the FLUSH / ATOMIC WRITE extensions 0x1C / 0x1D).
 *
 * <p>An opcode is {@code transport prefix | operation}: prefix (bits 7-5) RC {@code 0x00},
 * UC {@code 0x20}, RD {@code 0x40}, UD {@code 0x60}, CNP {@code 0x80}, manufacturer
 * {@code 0xE0}; operation in bits 4-0. Extended headers appear after the BTH in the order
 * DETH, RETH, AETH, AtomicETH, AtomicAckETH, ImmDt, IETH (at most one of ImmDt/IETH).
 *
 * <p>Mask semantics follow rxe ({@code rxe_opcode.c}): {@link #REQ} = sent by a requester,
 * {@link #RESP} = sent by a responder (ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, READ responses);
 * {@link #FIRST}/{@link #MIDDLE}/{@link #LAST} position in a message ({@link #ONLY} =
 * FIRST|LAST; single-packet requests and all ACKs carry ONLY); {@link #SEND}/{@link #WRITE}
 * are on all packets of those request messages; {@link #READ} only on RDMA READ Request;
 * {@link #ATOMIC} only on COMPARE SWAP / FETCH ADD; {@link #READ_RESP} on the four READ
 * Response opcodes; {@link #ACK} on ACKNOWLEDGE and ATOMIC ACKNOWLEDGE; {@link #RWR} on packets
 * that consume a receive WQE (SEND First/Only*, RDMA WRITE Last/Only with immediate);
 * {@link #COMP} on packets that complete a receive (SEND Last/Only*, WRITE *with immediate).
 *
 * <p>Sources: IBA Vol 1 §9.2 (opcode field) and §9.3; Linux {@code include/rdma/ib_pack.h}
 * ({@code IB_OPCODE_*}), {@code drivers/infiniband/sw/rxe/rxe_opcode.c}; jrdma spec D4.
 * All methods are pure and allocation-free.
 */
public final class IbOpcode {
    private IbOpcode() {
    }

    // ---- transport prefixes ----
    /** Transport prefix: reliable connection. */
    public static final int TRANSPORT_RC = 0x00;
    /** Transport prefix: unreliable connection. */
    public static final int TRANSPORT_UC = 0x20;
    /** Transport prefix: reliable datagram (not supported). */
    public static final int TRANSPORT_RD = 0x40;
    /** Transport prefix: unreliable datagram. */
    public static final int TRANSPORT_UD = 0x60;
    /** Transport prefix: congestion notification packet (not supported). */
    public static final int TRANSPORT_CNP = 0x80;
    /** Transport prefix: manufacturer specific. */
    public static final int TRANSPORT_MANUFACTURER = 0xE0;
    /** Mask of the transport prefix. */
    public static final int TRANSPORT_MASK = 0xE0;
    /** Mask of the operation. */
    public static final int OPERATION_MASK = 0x1F;

    // ---- RC ----
    public static final int RC_SEND_FIRST = 0x00;
    public static final int RC_SEND_MIDDLE = 0x01;
    public static final int RC_SEND_LAST = 0x02;
    public static final int RC_SEND_LAST_WITH_IMMEDIATE = 0x03;
    public static final int RC_SEND_ONLY = 0x04;
    public static final int RC_SEND_ONLY_WITH_IMMEDIATE = 0x05;
    public static final int RC_RDMA_WRITE_FIRST = 0x06;
    public static final int RC_RDMA_WRITE_MIDDLE = 0x07;
    public static final int RC_RDMA_WRITE_LAST = 0x08;
    public static final int RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09;
    public static final int RC_RDMA_WRITE_ONLY = 0x0A;
    public static final int RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B;
    public static final int RC_RDMA_READ_REQUEST = 0x0C;
    public static final int RC_RDMA_READ_RESPONSE_FIRST = 0x0D;
    public static final int RC_RDMA_READ_RESPONSE_MIDDLE = 0x0E;
    public static final int RC_RDMA_READ_RESPONSE_LAST = 0x0F;
    public static final int RC_RDMA_READ_RESPONSE_ONLY = 0x10;
    public static final int RC_ACKNOWLEDGE = 0x11;
    public static final int RC_ATOMIC_ACKNOWLEDGE = 0x12;
    public static final int RC_COMPARE_SWAP = 0x13;
    public static final int RC_FETCH_ADD = 0x14;
    public static final int RC_SEND_LAST_WITH_INVALIDATE = 0x16;
    public static final int RC_SEND_ONLY_WITH_INVALIDATE = 0x17;

    // ---- UC ----
    public static final int UC_SEND_FIRST = 0x20;
    public static final int UC_SEND_MIDDLE = 0x21;
    public static final int UC_SEND_LAST = 0x22;
    public static final int UC_SEND_LAST_WITH_IMMEDIATE = 0x23;
    public static final int UC_SEND_ONLY = 0x24;
    public static final int UC_SEND_ONLY_WITH_IMMEDIATE = 0x25;
    public static final int UC_RDMA_WRITE_FIRST = 0x26;
    public static final int UC_RDMA_WRITE_MIDDLE = 0x27;
    public static final int UC_RDMA_WRITE_LAST = 0x28;
    public static final int UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29;
    public static final int UC_RDMA_WRITE_ONLY = 0x2A;
    public static final int UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2B;

    // ---- UD ----
    public static final int UD_SEND_ONLY = 0x64;
    public static final int UD_SEND_ONLY_WITH_IMMEDIATE = 0x65;

    // ---- mask bits: extended headers (low bits, one per header) ----
    /** RETH present. */
    public static final int RETH = 1;
    /** AETH present. */
    public static final int AETH = 1 << 1;
    /** AtomicETH present. */
    public static final int ATMETH = 1 << 2;
    /** AtomicAckETH present. */
    public static final int ATMACK = 1 << 3;
    /** ImmDt present. */
    public static final int IMMDT = 1 << 4;
    /** IETH present. */
    public static final int IETH = 1 << 5;
    /** DETH present. */
    public static final int DETH = 1 << 6;
    /** All extended-header bits. */
    public static final int HEADERS = RETH | AETH | ATMETH | ATMACK | IMMDT | IETH | DETH;

    // ---- mask bits: meaning ----
    /** The packet may carry payload. */
    public static final int PAYLOAD = 1 << 8;
    /** Sent by a requester. */
    public static final int REQ = 1 << 9;
    /** Sent by a responder: ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, READ responses. */
    public static final int RESP = 1 << 10;
    /** First packet of a message. */
    public static final int FIRST = 1 << 11;
    /** Middle packet of a message. */
    public static final int MIDDLE = 1 << 12;
    /** Last packet of a message. */
    public static final int LAST = 1 << 13;
    /** Only packet of a message ({@code FIRST | LAST}). */
    public static final int ONLY = FIRST | LAST;
    /** Part of a SEND message. */
    public static final int SEND = 1 << 14;
    /** Part of an RDMA WRITE message. */
    public static final int WRITE = 1 << 15;
    /** RDMA READ Request. */
    public static final int READ = 1 << 16;
    /** Atomic request (COMPARE SWAP, FETCH ADD). */
    public static final int ATOMIC = 1 << 17;
    /** Consumes a receive WQE. */
    public static final int RWR = 1 << 18;
    /** Completes a receive WQE. */
    public static final int COMP = 1 << 19;
    /** ACKNOWLEDGE or ATOMIC ACKNOWLEDGE. */
    public static final int ACK = 1 << 20;
    /** RDMA READ Response (First, Middle, Last, Only). */
    public static final int READ_RESP = 1 << 21;
    /** Carries immediate data (same as {@link #IMMDT}). */
    public static final int IMM = IMMDT;

    private static final int[] MASK = new int[256];
    private static final byte[] HEADER_LENGTH = new byte[256];
    /** [opcode * 8 + header index] -> offset from BTH start, or -1. */
    private static final byte[] OFFSET = new byte[256 * 8];
    private static final String[] NAME = new String[256];
    private static final String HEX = "0123456789ABCDEF";

    /** Header bits in wire order, and their lengths. */
    private static final int[] ORDER = {DETH, RETH, AETH, ATMETH, ATMACK, IMMDT, IETH};
    private static final int[] ORDER_LENGTH = {Deth.LENGTH, Reth.LENGTH, Aeth.LENGTH,
        AtomicEth.LENGTH, AtomicAckEth.LENGTH, ImmDt.LENGTH, Ieth.LENGTH};

    static {
        java.util.Arrays.fill(OFFSET, (byte) -1);
        for (int i = 0; i < 256; i++) {
            // not String.format: this runs when a context's first packet arrives, and a cold Formatter costs ms
            NAME[i] = "INVALID_0x" + HEX.charAt(i >>> 4) + HEX.charAt(i & 15);
        }
        // RC and UC share the SEND / WRITE families.
        for (int prefix : new int[] {TRANSPORT_RC, TRANSPORT_UC}) {
            String t = prefix == TRANSPORT_RC ? "RC_" : "UC_";
            def(prefix | 0x00, t + "SEND_FIRST", PAYLOAD | REQ | SEND | FIRST | RWR);
            def(prefix | 0x01, t + "SEND_MIDDLE", PAYLOAD | REQ | SEND | MIDDLE);
            def(prefix | 0x02, t + "SEND_LAST", PAYLOAD | REQ | SEND | LAST | COMP);
            def(prefix | 0x03, t + "SEND_LAST_WITH_IMMEDIATE",
                    IMMDT | PAYLOAD | REQ | SEND | LAST | COMP);
            def(prefix | 0x04, t + "SEND_ONLY", PAYLOAD | REQ | SEND | ONLY | RWR | COMP);
            def(prefix | 0x05, t + "SEND_ONLY_WITH_IMMEDIATE",
                    IMMDT | PAYLOAD | REQ | SEND | ONLY | RWR | COMP);
            def(prefix | 0x06, t + "RDMA_WRITE_FIRST", RETH | PAYLOAD | REQ | WRITE | FIRST);
            def(prefix | 0x07, t + "RDMA_WRITE_MIDDLE", PAYLOAD | REQ | WRITE | MIDDLE);
            def(prefix | 0x08, t + "RDMA_WRITE_LAST", PAYLOAD | REQ | WRITE | LAST);
            def(prefix | 0x09, t + "RDMA_WRITE_LAST_WITH_IMMEDIATE",
                    IMMDT | PAYLOAD | REQ | WRITE | LAST | RWR | COMP);
            def(prefix | 0x0A, t + "RDMA_WRITE_ONLY", RETH | PAYLOAD | REQ | WRITE | ONLY);
            def(prefix | 0x0B, t + "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
                    RETH | IMMDT | PAYLOAD | REQ | WRITE | ONLY | RWR | COMP);
        }
        def(RC_RDMA_READ_REQUEST, "RC_RDMA_READ_REQUEST", RETH | REQ | READ | ONLY);
        def(RC_RDMA_READ_RESPONSE_FIRST, "RC_RDMA_READ_RESPONSE_FIRST",
                AETH | PAYLOAD | RESP | READ_RESP | FIRST);
        def(RC_RDMA_READ_RESPONSE_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE",
                PAYLOAD | RESP | READ_RESP | MIDDLE);
        def(RC_RDMA_READ_RESPONSE_LAST, "RC_RDMA_READ_RESPONSE_LAST",
                AETH | PAYLOAD | RESP | READ_RESP | LAST);
        def(RC_RDMA_READ_RESPONSE_ONLY, "RC_RDMA_READ_RESPONSE_ONLY",
                AETH | PAYLOAD | RESP | READ_RESP | ONLY);
        def(RC_ACKNOWLEDGE, "RC_ACKNOWLEDGE", AETH | RESP | ACK | ONLY);
        def(RC_ATOMIC_ACKNOWLEDGE, "RC_ATOMIC_ACKNOWLEDGE", AETH | ATMACK | RESP | ACK | ONLY);
        def(RC_COMPARE_SWAP, "RC_COMPARE_SWAP", ATMETH | REQ | ATOMIC | ONLY);
        def(RC_FETCH_ADD, "RC_FETCH_ADD", ATMETH | REQ | ATOMIC | ONLY);
        def(RC_SEND_LAST_WITH_INVALIDATE, "RC_SEND_LAST_WITH_INVALIDATE",
                IETH | PAYLOAD | REQ | SEND | LAST | COMP);
        def(RC_SEND_ONLY_WITH_INVALIDATE, "RC_SEND_ONLY_WITH_INVALIDATE",
                IETH | PAYLOAD | REQ | SEND | ONLY | RWR | COMP);
        def(UD_SEND_ONLY, "UD_SEND_ONLY", DETH | PAYLOAD | REQ | SEND | ONLY | RWR | COMP);
        def(UD_SEND_ONLY_WITH_IMMEDIATE, "UD_SEND_ONLY_WITH_IMMEDIATE",
                DETH | IMMDT | PAYLOAD | REQ | SEND | ONLY | RWR | COMP);
    }

    private static void def(int opcode, String name, int mask) {
        MASK[opcode] = mask;
        NAME[opcode] = name;
        int off = Bth.LENGTH;
        for (int i = 0; i < ORDER.length; i++) {
            if ((mask & ORDER[i]) != 0) {
                OFFSET[opcode * 8 + Integer.numberOfTrailingZeros(ORDER[i])] = (byte) off;
                off += ORDER_LENGTH[i];
            }
        }
        HEADER_LENGTH[opcode] = (byte) off;
    }

    /** True if the opcode is defined and supported (RC, UC, UD as listed in this class). */
    public static boolean valid(int opcode) {
        return (opcode & ~0xFF) == 0 && MASK[opcode] != 0;
    }

    /** The mask bits of the opcode, 0 if invalid. */
    public static int mask(int opcode) {
        return (opcode & ~0xFF) == 0 ? MASK[opcode] : 0;
    }

    /** True if the opcode's mask has any of {@code bits}. */
    public static boolean has(int opcode, int bits) {
        return (mask(opcode) & bits) != 0;
    }

    /** BTH plus all extended headers, in bytes; 0 for an invalid opcode. */
    public static int headerLength(int opcode) {
        return (opcode & ~0xFF) == 0 ? HEADER_LENGTH[opcode] : 0;
    }

    /**
     * Byte offset, from the start of the BTH, of the extended header {@code headerBit} (one
     * of {@link #RETH}, {@link #AETH}, {@link #ATMETH}, {@link #ATMACK}, {@link #IMMDT},
     * {@link #IETH}, {@link #DETH}), or -1 if the opcode has no such header or is invalid.
     *
     * @throws IllegalArgumentException if {@code headerBit} is not exactly one header bit
     */
    public static int offset(int opcode, int headerBit) {
        if (Integer.bitCount(headerBit) != 1 || (headerBit & HEADERS) == 0) {
            throw new IllegalArgumentException("not a header bit: " + headerBit);
        }
        if ((opcode & ~0xFF) != 0) {
            return -1;
        }
        return OFFSET[opcode * 8 + Integer.numberOfTrailingZeros(headerBit)];
    }

    /**
     * The name, e.g. {@code "RC_RDMA_WRITE_FIRST"}, or {@code "INVALID_0xNN"} (for logs and
     * tools; the strings are interned in a table, no allocation).
     */
    public static String name(int opcode) {
        return NAME[opcode & 0xFF];
    }

    /** The transport prefix (bits 7-5). */
    public static int transport(int opcode) {
        return opcode & TRANSPORT_MASK;
    }

    /** The operation (bits 4-0). */
    public static int operation(int opcode) {
        return opcode & OPERATION_MASK;
    }

    /**
     * Payload bytes of a packet: {@code roceLength - headerLength - padCnt - 4 (ICRC)}, where
     * {@code roceLength} is the UDP payload length (BTH through ICRC). Negative means
     * malformed. For an invalid opcode the header length counts as the BTH only.
     */
    public static int payloadLength(int opcode, int padCnt, int roceLength) {
        int h = headerLength(opcode);
        return roceLength - (h == 0 ? Bth.LENGTH : h) - padCnt - Icrc.LENGTH;
    }
}

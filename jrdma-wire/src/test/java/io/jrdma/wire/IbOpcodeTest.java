package io.jrdma.wire;

import static io.jrdma.wire.IbOpcode.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The opcode table against spec D4 (ib_pack.h / rxe_opcode.c). */
class IbOpcodeTest {

    private static final int[] HEADER_BITS = {RETH, AETH, ATMETH, ATMACK, IMMDT, IETH, DETH};

    /** opcode -> {header bit, offset, header bit, offset, ...}, then headerLength, payload. */
    private record Row(String name, int headerLength, boolean payload, int... bitOffset) {
    }

    private static final Map<Integer, Row> D4 = new HashMap<>();

    private static void row(int op, String name, int hl, boolean payload, int... bitOffset) {
        D4.put(op, new Row(name, hl, payload, bitOffset));
    }

    static {
        for (int t : new int[] {0x00, 0x20}) {
            String p = t == 0 ? "RC_" : "UC_";
            row(t | 0x00, p + "SEND_FIRST", 12, true);
            row(t | 0x01, p + "SEND_MIDDLE", 12, true);
            row(t | 0x02, p + "SEND_LAST", 12, true);
            row(t | 0x03, p + "SEND_LAST_WITH_IMMEDIATE", 16, true, IMMDT, 12);
            row(t | 0x04, p + "SEND_ONLY", 12, true);
            row(t | 0x05, p + "SEND_ONLY_WITH_IMMEDIATE", 16, true, IMMDT, 12);
            row(t | 0x06, p + "RDMA_WRITE_FIRST", 28, true, RETH, 12);
            row(t | 0x07, p + "RDMA_WRITE_MIDDLE", 12, true);
            row(t | 0x08, p + "RDMA_WRITE_LAST", 12, true);
            row(t | 0x09, p + "RDMA_WRITE_LAST_WITH_IMMEDIATE", 16, true, IMMDT, 12);
            row(t | 0x0A, p + "RDMA_WRITE_ONLY", 28, true, RETH, 12);
            row(t | 0x0B, p + "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, true, RETH, 12, IMMDT, 28);
        }
        row(0x0C, "RC_RDMA_READ_REQUEST", 28, false, RETH, 12);
        row(0x0D, "RC_RDMA_READ_RESPONSE_FIRST", 16, true, AETH, 12);
        row(0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", 12, true);
        row(0x0F, "RC_RDMA_READ_RESPONSE_LAST", 16, true, AETH, 12);
        row(0x10, "RC_RDMA_READ_RESPONSE_ONLY", 16, true, AETH, 12);
        row(0x11, "RC_ACKNOWLEDGE", 16, false, AETH, 12);
        row(0x12, "RC_ATOMIC_ACKNOWLEDGE", 24, false, AETH, 12, ATMACK, 16);
        row(0x13, "RC_COMPARE_SWAP", 40, false, ATMETH, 12);
        row(0x14, "RC_FETCH_ADD", 40, false, ATMETH, 12);
        row(0x16, "RC_SEND_LAST_WITH_INVALIDATE", 16, true, IETH, 12);
        row(0x17, "RC_SEND_ONLY_WITH_INVALIDATE", 16, true, IETH, 12);
        row(0x64, "UD_SEND_ONLY", 20, true, DETH, 12);
        row(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", 24, true, DETH, 12, IMMDT, 20);
    }

    @Test
    void everyOpcodeHasTheRightHeaders() {
        for (int op = 0; op < 256; op++) {
            Row r = D4.get(op);
            if (r == null) {
                assertFalse(valid(op), "opcode " + op + " must be invalid");
                assertEquals(0, mask(op));
                assertEquals(0, headerLength(op));
                for (int bit : HEADER_BITS) {
                    assertEquals(-1, offset(op, bit));
                }
                continue;
            }
            assertTrue(valid(op), r.name());
            assertEquals(r.name(), name(op));
            assertEquals(r.headerLength(), headerLength(op), r.name());
            assertEquals(r.payload(), (mask(op) & PAYLOAD) != 0, r.name() + " payload");
            int expectedHeaders = 0;
            for (int i = 0; i < r.bitOffset().length; i += 2) {
                int bit = r.bitOffset()[i];
                expectedHeaders |= bit;
                assertEquals(r.bitOffset()[i + 1], offset(op, bit), r.name() + " offset of " + bit);
            }
            assertEquals(expectedHeaders, mask(op) & HEADERS, r.name() + " headers");
            for (int bit : HEADER_BITS) {
                if ((expectedHeaders & bit) == 0) {
                    assertEquals(-1, offset(op, bit), r.name());
                }
            }
        }
    }

    @Test
    void examplesFromTheBrief() {
        assertEquals(12, offset(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, RETH));
        assertEquals(28, offset(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, IMMDT));
        assertEquals(32, headerLength(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE));
        assertEquals(12, offset(RC_ATOMIC_ACKNOWLEDGE, AETH));
        assertEquals(16, offset(RC_ATOMIC_ACKNOWLEDGE, ATMACK));
        assertEquals(24, headerLength(RC_ATOMIC_ACKNOWLEDGE));
        assertEquals(12, offset(UD_SEND_ONLY_WITH_IMMEDIATE, DETH));
        assertEquals(20, offset(UD_SEND_ONLY_WITH_IMMEDIATE, IMMDT));
    }

    @Test
    void constants() {
        assertEquals(0x00, RC_SEND_FIRST);
        assertEquals(0x14, RC_FETCH_ADD);
        assertEquals(0x16, RC_SEND_LAST_WITH_INVALIDATE);
        assertEquals(0x17, RC_SEND_ONLY_WITH_INVALIDATE);
        assertEquals(0x20, UC_SEND_FIRST);
        assertEquals(0x2B, UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
        assertEquals(0x64, UD_SEND_ONLY);
        assertEquals(0x65, UD_SEND_ONLY_WITH_IMMEDIATE);
        assertEquals(FIRST | LAST, ONLY);
        assertEquals(TRANSPORT_UD, transport(UD_SEND_ONLY));
        assertEquals(0x04, operation(UD_SEND_ONLY));
        assertEquals("INVALID_0x15", name(0x15));
        assertFalse(valid(0x1C), "FLUSH is not supported");
        assertFalse(valid(0x1D), "ATOMIC WRITE is not supported");
        assertFalse(valid(-1));
        assertFalse(valid(0x100));
        assertEquals(-1, offset(0x100, RETH));
        assertThrows(IllegalArgumentException.class, () -> offset(RC_SEND_ONLY, PAYLOAD));
        assertThrows(IllegalArgumentException.class, () -> offset(RC_SEND_ONLY, RETH | AETH));
    }

    @Test
    void semanticMasks() {
        // consume a receive WQE (rxe RXE_RWR_MASK)
        int[] rwr = {RC_SEND_FIRST, RC_SEND_ONLY, RC_SEND_ONLY_WITH_IMMEDIATE,
            RC_SEND_ONLY_WITH_INVALIDATE, RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
            RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, UC_SEND_FIRST, UC_SEND_ONLY,
            UC_SEND_ONLY_WITH_IMMEDIATE, UC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
            UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, UD_SEND_ONLY, UD_SEND_ONLY_WITH_IMMEDIATE};
        // complete a receive (rxe RXE_COMP_MASK)
        int[] comp = {RC_SEND_LAST, RC_SEND_LAST_WITH_IMMEDIATE, RC_SEND_LAST_WITH_INVALIDATE,
            RC_SEND_ONLY, RC_SEND_ONLY_WITH_IMMEDIATE, RC_SEND_ONLY_WITH_INVALIDATE,
            RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            UC_SEND_LAST, UC_SEND_LAST_WITH_IMMEDIATE, UC_SEND_ONLY, UC_SEND_ONLY_WITH_IMMEDIATE,
            UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            UD_SEND_ONLY, UD_SEND_ONLY_WITH_IMMEDIATE};
        assertSet(RWR, rwr);
        assertSet(COMP, comp);
        assertSet(ACK, new int[] {RC_ACKNOWLEDGE, RC_ATOMIC_ACKNOWLEDGE});
        assertSet(RESP, new int[] {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12});
        assertSet(READ_RESP, new int[] {0x0D, 0x0E, 0x0F, 0x10});
        assertSet(READ, new int[] {RC_RDMA_READ_REQUEST});
        assertSet(ATOMIC, new int[] {RC_COMPARE_SWAP, RC_FETCH_ADD});
        assertSet(MIDDLE, new int[] {0x01, 0x07, 0x0E, 0x21, 0x27});
        for (int op = 0; op < 256; op++) {
            if (valid(op)) {
                int m = mask(op);
                assertTrue(((m & REQ) != 0) ^ ((m & RESP) != 0), name(op) + " REQ xor RESP");
                assertTrue(Integer.bitCount(m & (SEND | WRITE | READ | ATOMIC)) <= 1, name(op));
                assertEquals((m & IMMDT) != 0, name(op).contains("IMMEDIATE"), name(op));
                assertEquals((m & IETH) != 0, name(op).contains("INVALIDATE"), name(op));
                boolean first = name(op).endsWith("FIRST");
                boolean middle = name(op).endsWith("MIDDLE");
                boolean last = name(op).contains("LAST");
                assertEquals(first, (m & ONLY) == FIRST, name(op));
                assertEquals(middle, (m & MIDDLE) != 0, name(op));
                assertEquals(last, (m & ONLY) == LAST, name(op));
                assertEquals(!first && !middle && !last, (m & ONLY) == ONLY, name(op));
            }
        }
    }

    private static void assertSet(int bit, int[] ops) {
        java.util.Set<Integer> expected = new java.util.HashSet<>();
        for (int op : ops) {
            expected.add(op);
        }
        for (int op = 0; op < 256; op++) {
            assertEquals(expected.contains(op), (mask(op) & bit) != 0,
                    name(op) + " bit " + Integer.toHexString(bit));
        }
    }
}

package io.jrdma.wire.iwarp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * RFC 7306 (RDMA Protocol Extensions) pinned byte for byte. Every case writes the bytes by hand,
 * field by field in the order of the RFC 7306 header layouts, decodes them with the codec, encodes
 * the same values with the codec and compares. The layouts are those Wireshark's dissector
 * ({@code epan/dissectors/packet-iwarp-ddp-rdmap.c}, {@code dissect_iwarp_atomic}) and urdma's
 * RFC 7306 atomics ({@code include/proto.h}) read and write; docs/iwarp-wire.md says what each
 * source confirms and what still rests on the RFC as recalled (Immediate Data, Swap = 1).
 */
class Rfc7306Test {
    private static final HexFormat HEX = HexFormat.of();

    private static MemorySegment bytes(String... hexFields) {
        return MemorySegment.ofArray(HEX.parseHex(String.join("", hexFields)));
    }

    private static byte[] array(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_BYTE);
    }

    /** An untagged DDP header (RFC 5041 §4.3): control, RDMAP control, RsvdULP 0, QN, MSN, MO. */
    private static String untagged(int opcode, int qn, int msn, int mo) {
        return "41" + HEX.toHexDigits((byte) (0x40 | opcode)) + "00000000" + HEX.toHexDigits(qn)
                + HEX.toHexDigits(msn) + HEX.toHexDigits(mo);
    }

    @Test
    void opcodesAndQueueNumbers() {
        // RDMAP opcodes: 1000b Immediate Data, 1001b Immediate Data with SE, 1010b Atomic Request,
        // 1011b Atomic Response (Wireshark: RDMA_ATOMIC_REQUEST 0x0A, RDMA_ATOMIC_RESPONSE 0x0B)
        assertEquals(0b1000, Rdmap.IMMEDIATE_DATA);
        assertEquals(0b1001, Rdmap.IMMEDIATE_DATA_SE);
        assertEquals(0b1010, Rdmap.ATOMIC_REQUEST);
        assertEquals(0b1011, Rdmap.ATOMIC_RESPONSE);
        assertEquals(0x48, Rdmap.controlByte(Rdmap.IMMEDIATE_DATA));
        assertEquals(0x49, Rdmap.controlByte(Rdmap.IMMEDIATE_DATA_SE));
        assertEquals(0x4A, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST));
        assertEquals(0x4B, Rdmap.controlByte(Rdmap.ATOMIC_RESPONSE));
        // all four untagged; Immediate Data on the Send queue, Atomic Requests on the RDMA Read
        // Request queue (QN 1, its MSNs shared with READ Requests), Atomic Responses on QN 3,
        // the one queue RFC 7306 adds
        for (int op = Rdmap.IMMEDIATE_DATA; op <= Rdmap.ATOMIC_RESPONSE; op++) {
            assertFalse(Rdmap.isTagged(op), Rdmap.name(op));
            assertFalse(Rdmap.carriesInvalidateStag(op), Rdmap.name(op));
        }
        assertEquals(Rdmap.QN_SEND, Rdmap.queueNumber(Rdmap.IMMEDIATE_DATA));
        assertEquals(Rdmap.QN_SEND, Rdmap.queueNumber(Rdmap.IMMEDIATE_DATA_SE));
        assertEquals(Rdmap.QN_READ_REQUEST, Rdmap.queueNumber(Rdmap.ATOMIC_REQUEST));
        assertEquals(Rdmap.QN_ATOMIC_RESPONSE, Rdmap.queueNumber(Rdmap.ATOMIC_RESPONSE));
        assertEquals(0, Rdmap.QN_SEND);
        assertEquals(1, Rdmap.QN_READ_REQUEST);
        assertEquals(3, Rdmap.QN_ATOMIC_RESPONSE);
        assertTrue(Rdmap.solicitedEvent(Rdmap.IMMEDIATE_DATA_SE));
        assertFalse(Rdmap.solicitedEvent(Rdmap.IMMEDIATE_DATA));
        assertEquals(18 + 8, Rdmap.headerLength(Rdmap.IMMEDIATE_DATA));
        assertEquals(18 + 8, Rdmap.headerLength(Rdmap.IMMEDIATE_DATA_SE));
        assertEquals(18 + 52, Rdmap.headerLength(Rdmap.ATOMIC_REQUEST));
        assertEquals(18 + 12, Rdmap.headerLength(Rdmap.ATOMIC_RESPONSE));
        // atomic operation codes: FetchAdd 0000b, Swap 0001b, CompareSwap 0010b (Wireshark's
        // value table: 0 FetchAdd, 2 CmpSwap; Swap as recalled)
        assertEquals(0, AtomicRequest.FETCH_ADD);
        assertEquals(1, AtomicRequest.SWAP);
        assertEquals(2, AtomicRequest.COMPARE_SWAP);
    }

    @Test
    void atomicRequestCompareSwap() {
        // every field a different byte pattern, so a swapped or shifted field cannot pass
        MemorySegment wire = bytes(
                untagged(0b1010, 1, 0x0000_0007, 0),
                "0000000" + "2",                // Reserved (28 bits) | AOpCode = CompareSwap
                "01020304",                     // Request Identifier
                "11121314",                     // Remote STag
                "2122232425262728",             // Remote Tagged Offset (64)
                "3132333435363738",             // Add or Swap Data: the swap data
                "4142434445464748",             // Add or Swap Mask: the swap mask
                "5152535455565758",             // Compare Data
                "6162636465666768");            // Compare Mask
        assertEquals(18 + 52, wire.byteSize());
        assertEquals(18 + 52, Rdmap.check(wire, 0, 70), "header length: no payload follows");
        assertEquals(Rdmap.ATOMIC_REQUEST, Rdmap.opcode(wire, 0));
        assertTrue(Ddp.last(wire, 0));
        assertEquals(1, Ddp.queueNumber(wire, 0));
        assertEquals(7, Ddp.msn(wire, 0));
        int a = Ddp.UNTAGGED_HEADER_LENGTH;
        assertEquals(AtomicRequest.COMPARE_SWAP, AtomicRequest.atomicOpcode(wire, a));
        assertEquals(0x01020304, AtomicRequest.requestId(wire, a));
        assertEquals(0x11121314, AtomicRequest.remoteStag(wire, a));
        assertEquals(0x2122232425262728L, AtomicRequest.remoteTaggedOffset(wire, a));
        assertEquals(0x3132333435363738L, AtomicRequest.addOrSwapData(wire, a));
        assertEquals(0x4142434445464748L, AtomicRequest.addOrSwapMask(wire, a));
        assertEquals(0x5152535455565758L, AtomicRequest.compareData(wire, a));
        assertEquals(0x6162636465666768L, AtomicRequest.compareMask(wire, a));

        MemorySegment out = MemorySegment.ofArray(new byte[70]);
        Ddp.writeUntagged(out, 0, true, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST), 0, Rdmap.QN_READ_REQUEST, 7, 0);
        AtomicRequest.write(out, a, AtomicRequest.COMPARE_SWAP, 0x01020304, 0x11121314, 0x2122232425262728L,
                0x3132333435363738L, 0x4142434445464748L, 0x5152535455565758L, 0x6162636465666768L);
        assertArrayEquals(array(wire), array(out));
    }

    @Test
    void atomicRequestFetchAddAndSwap() {
        // FetchAdd: the add data, an Add Mask of 0 (no bit stops the carry: a plain 64-bit add),
        // Compare Data and Compare Mask unused (zero)
        MemorySegment fetchAdd = bytes(untagged(0b1010, 1, 1, 0),
                "00000000", "00000001", "0000abcd", "0000000000001000",
                "0000000100000002", "0000000000000000", "0000000000000000", "0000000000000000");
        int a = Ddp.UNTAGGED_HEADER_LENGTH;
        assertEquals(AtomicRequest.FETCH_ADD, AtomicRequest.atomicOpcode(fetchAdd, a));
        assertEquals(0x1_0000_0002L, AtomicRequest.addOrSwapData(fetchAdd, a));
        assertEquals(0, AtomicRequest.addOrSwapMask(fetchAdd, a));
        MemorySegment out = MemorySegment.ofArray(new byte[70]);
        Ddp.writeUntagged(out, 0, true, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST), 0, Rdmap.QN_READ_REQUEST, 1, 0);
        AtomicRequest.write(out, a, AtomicRequest.FETCH_ADD, 1, 0xABCD, 0x1000L, 0x1_0000_0002L, 0, 0, 0);
        assertArrayEquals(array(fetchAdd), array(out));

        // Swap: AOpCode 0001b, the swap data and its mask
        MemorySegment swap = bytes(untagged(0b1010, 1, 2, 0),
                "00000001", "00000002", "0000abcd", "0000000000001000",
                "ffeeddccbbaa9988", "ffffffffffffffff", "0000000000000000", "0000000000000000");
        assertEquals(AtomicRequest.SWAP, AtomicRequest.atomicOpcode(swap, a));
        Ddp.writeUntagged(out, 0, true, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST), 0, Rdmap.QN_READ_REQUEST, 2, 0);
        AtomicRequest.write(out, a, AtomicRequest.SWAP, 2, 0xABCD, 0x1000L, 0xFFEEDDCCBBAA9988L, -1L, 0, 0);
        assertArrayEquals(array(swap), array(out));
    }

    @Test
    void atomicOpcodeIsTheLowNibbleOfTheFirstWord() {
        // the 28 reserved bits are not part of the opcode (Wireshark: masks 0xFFFFFFF0 / 0x0000000F);
        // the encoder sends them as zero
        MemorySegment s = bytes("fffffff2", "00".repeat(48));
        assertEquals(AtomicRequest.COMPARE_SWAP, AtomicRequest.atomicOpcode(s, 0));
        AtomicRequest.write(s, 0, 0xF2, 0, 0, 0, 0, 0, 0, 0);
        assertEquals("00000002", HEX.formatHex(array(s.asSlice(0, 4))));
    }

    @Test
    void atomicResponse() {
        MemorySegment wire = bytes(
                untagged(0b1011, 3, 1, 0),
                "0a0b0c0d",                     // Original Request Identifier
                "1112131415161718");            // Original Remote Data Value (64)
        assertEquals(18 + 12, wire.byteSize());
        assertEquals(30, Rdmap.check(wire, 0, 30));
        int a = Ddp.UNTAGGED_HEADER_LENGTH;
        assertEquals(0x0A0B0C0D, AtomicResponse.originalRequestId(wire, a));
        assertEquals(0x1112131415161718L, AtomicResponse.originalValue(wire, a));
        MemorySegment out = MemorySegment.ofArray(new byte[30]);
        Ddp.writeUntagged(out, 0, true, Rdmap.controlByte(Rdmap.ATOMIC_RESPONSE), 0, Rdmap.QN_ATOMIC_RESPONSE, 1, 0);
        AtomicResponse.write(out, a, 0x0A0B0C0D, 0x1112131415161718L);
        assertArrayEquals(array(wire), array(out));
        assertEquals(IwarpError.ULPDU_TOO_SHORT.result(), Rdmap.check(wire, 0, 29));
    }

    @Test
    void immediateData() {
        for (int op : new int[] {Rdmap.IMMEDIATE_DATA, Rdmap.IMMEDIATE_DATA_SE}) {
            MemorySegment wire = bytes(untagged(op, 0, 5, 0), "0001020304050607"); // Immediate Data (64)
            assertEquals(26, Rdmap.check(wire, 0, 26), Rdmap.name(op));
            assertEquals(0x0001020304050607L, ImmediateData.value(wire, Ddp.UNTAGGED_HEADER_LENGTH));
            MemorySegment out = MemorySegment.ofArray(new byte[26]);
            Ddp.writeUntagged(out, 0, true, Rdmap.controlByte(op), 0, Rdmap.QN_SEND, 5, 0);
            ImmediateData.write(out, Ddp.UNTAGGED_HEADER_LENGTH, 0x0001020304050607L);
            assertArrayEquals(array(wire), array(out));
            assertEquals(IwarpError.ULPDU_TOO_SHORT.result(), Rdmap.check(wire, 0, 25));
        }
        // jrdma's SEND_WITH_IMM (a jrdma extension, docs/iwarp-design.md): payload after the header;
        // check returns where it starts
        MemorySegment withPayload = bytes(untagged(Rdmap.IMMEDIATE_DATA, 0, 1, 0), "00000000cafebabe",
                "5246432037333036", "20696d6d21212100"); // "RFC 7306 imm!!!" and a NUL
        assertEquals(26, Rdmap.check(withPayload, 0, (int) withPayload.byteSize()));
    }

    @Test
    void eachMessageOnlyOnItsQueue() {
        int bad = IwarpError.DDP_INVALID_QN.result();
        assertEquals(bad, Rdmap.check(bytes(untagged(0b1010, 3, 1, 0), "00".repeat(52)), 0, 70),
                "Atomic Request on QN 3");
        assertEquals(bad, Rdmap.check(bytes(untagged(0b1010, 0, 1, 0), "00".repeat(52)), 0, 70),
                "Atomic Request on QN 0");
        assertEquals(bad, Rdmap.check(bytes(untagged(0b1011, 1, 1, 0), "00".repeat(12)), 0, 30),
                "Atomic Response on QN 1");
        assertEquals(bad, Rdmap.check(bytes(untagged(0b1011, 2, 1, 0), "00".repeat(12)), 0, 30),
                "Atomic Response on QN 2");
        assertEquals(bad, Rdmap.check(bytes(untagged(0b1000, 1, 1, 0), "00".repeat(8)), 0, 26),
                "Immediate Data on QN 1");
        assertEquals(bad, Rdmap.check(bytes(untagged(0b1001, 3, 1, 0), "00".repeat(8)), 0, 26),
                "Immediate Data with SE on QN 3");
        // a Read Request on QN 3 is as wrong as before RFC 7306
        assertEquals(bad, Rdmap.check(bytes(untagged(0b0001, 3, 1, 0), "00".repeat(28)), 0, 46));
        // tagged (T = 1) RFC 7306 messages do not exist
        MemorySegment tagged = bytes("c14a", "00".repeat(68));
        assertEquals(IwarpError.RDMAP_TAGGED_MISMATCH.result(), Rdmap.check(tagged, 0, 70));
    }
}

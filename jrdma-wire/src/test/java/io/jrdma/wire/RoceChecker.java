package io.jrdma.wire;

import io.jrdma.wire.internal.Layouts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Decodes every RoCEv2 packet of a capture with the codecs, re-encodes it from the decoded
 * values and checks it is byte-identical, and checks the ICRC three ways.
 */
final class RoceChecker {
    private RoceChecker() {
    }

    /** The decoded fields of one packet. */
    record Packet(int frame, EthernetIp.Udp udp, int ipSrc, int ipDst, int ipId, int opcode, boolean se,
            boolean migReq, int padCnt, int pkey, int destQp, boolean ackReq, int psn,
            long rethVa, int rethRkey, int rethDmaLength, int aethSyndrome, int aethMsn,
            long atomicVa, int atomicRkey, long atomicSwapAdd, long atomicCompare,
            long atomicAckOrig, int imm, int iethRkey, int dethQkey, int dethSrcQp,
            int headerLength, int payloadLength, byte[] payload, int icrc) {
        boolean is(int op) {
            return opcode == op;
        }
    }

    /** Result for one file. */
    record Result(String file, int frames, List<Packet> packets, Map<String, Integer> opcodes) {
    }

    static Result check(Captures.PcapFile file) {
        Icrc icrc = new Icrc();
        List<Packet> packets = new ArrayList<>();
        Map<String, Integer> ops = new TreeMap<>();
        for (PcapReader.Record rec : file.records()) {
            String where = file.name() + " frame " + (rec.index() + 1);
            ByteBuffer frame = rec.directBuffer();
            EthernetIp.Udp udp = EthernetIp.parseUdp(frame, file.linkType());
            if (udp == null || udp.dstPort() != RoceV2.UDP_PORT) {
                continue;
            }
            Packet p = checkPacket(where, rec.index() + 1, frame, udp, icrc);
            packets.add(p);
            ops.merge(IbOpcode.name(p.opcode()), 1, Integer::sum);
        }
        return new Result(file.name(), file.records().size(), packets, ops);
    }

    private static final Ipv4IdSolver solver = new Ipv4IdSolver();

    static Packet checkPacket(String where, int frameNo, ByteBuffer frame, EthernetIp.Udp udp, Icrc icrc) {
        MemorySegment s = MemorySegment.ofBuffer(frame);
        long b = udp.payloadOffset();
        int roceLen = udp.payloadLength();
        assertTrue(roceLen >= Bth.LENGTH + Icrc.LENGTH, where + ": too short");

        // ---- decode ----
        int op = Bth.opcode(s, b);
        assertTrue(IbOpcode.valid(op), where + ": invalid opcode " + op);
        boolean se = Bth.se(s, b);
        boolean mig = Bth.migReq(s, b);
        int pad = Bth.padCnt(s, b);
        int tver = Bth.tver(s, b);
        int pkey = Bth.pkey(s, b);
        int resv8a = Bth.resv8a(s, b);
        int qp = Bth.destQp(s, b);
        boolean ack = Bth.ackReq(s, b);
        int psn = Bth.psn(s, b);
        assertEquals(0, tver, where + ": TVer");
        assertEquals(0, resv8a, where + ": resv8a");

        int mask = IbOpcode.mask(op);
        int hl = IbOpcode.headerLength(op);
        long rethVa = 0;
        int rethRkey = 0;
        int rethLen = 0;
        int syn = 0;
        int msn = 0;
        long aVa = 0;
        int aRkey = 0;
        long aSwap = 0;
        long aCmp = 0;
        long orig = 0;
        int imm = 0;
        int ieth = 0;
        int qkey = 0;
        int sqp = 0;
        int o;
        if ((o = IbOpcode.offset(op, IbOpcode.RETH)) >= 0) {
            rethVa = Reth.va(s, b + o);
            rethRkey = Reth.rkey(s, b + o);
            rethLen = Reth.dmaLength(s, b + o);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.AETH)) >= 0) {
            syn = Aeth.syndrome(s, b + o);
            msn = Aeth.msn(s, b + o);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.ATMETH)) >= 0) {
            aVa = AtomicEth.va(s, b + o);
            aRkey = AtomicEth.rkey(s, b + o);
            aSwap = AtomicEth.swapAdd(s, b + o);
            aCmp = AtomicEth.compare(s, b + o);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.ATMACK)) >= 0) {
            orig = AtomicAckEth.originalData(s, b + o);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.IMMDT)) >= 0) {
            imm = ImmDt.imm(s, b + o);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.IETH)) >= 0) {
            ieth = Ieth.rkey(s, b + o);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.DETH)) >= 0) {
            qkey = Deth.qkey(s, b + o);
            sqp = Deth.srcQp(s, b + o);
        }
        int payload = IbOpcode.payloadLength(op, pad, roceLen);
        assertTrue(payload >= 0, where + ": negative payload " + payload);
        assertEquals(roceLen, hl + payload + pad + Icrc.LENGTH, where + ": length");
        assertEquals(RoceV2.padCount(payload), pad, where + ": pad count");
        assertEquals(roceLen, RoceV2.packetLength(op, payload), where + ": packetLength");
        if ((mask & IbOpcode.PAYLOAD) == 0) {
            assertEquals(0, payload, where + ": payload on a no-payload opcode");
        }
        if ((mask & IbOpcode.LAST) == 0) {
            assertEquals(0, pad, where + ": pad on a non-last packet");
        }
        for (int i = 0; i < pad; i++) {
            assertEquals(0, s.get(Layouts.U8, b + hl + payload + i), where + ": pad byte");
        }
        byte[] payloadBytes = new byte[payload];
        MemorySegment.copy(s, b + hl, MemorySegment.ofArray(payloadBytes), 0, payload);

        // ---- ICRC: from the real headers, and from the values ----
        int wireIcrc = Icrc.read(s, b + roceLen - Icrc.LENGTH);
        int oldPos = 3;
        int oldLim = frame.limit() - 1;
        frame.limit(oldLim).position(oldPos);
        int fromHeader = icrc.computeFromIpHeader(frame, udp.ipOffset(), roceLen - Icrc.LENGTH);
        assertEquals(oldPos, frame.position(), where + ": position not restored");
        assertEquals(oldLim, frame.limit(), where + ": limit not restored");
        frame.clear();
        assertEquals(wireIcrc, fromHeader, where + ": ICRC from IP header");

        // ---- re-encode from the decoded values ----
        byte[] out = new byte[roceLen];
        MemorySegment e = MemorySegment.ofArray(out);
        Bth.write(e, 0, op, se, mig, pad, pkey, qp, ack, psn);
        if ((o = IbOpcode.offset(op, IbOpcode.RETH)) >= 0) {
            Reth.write(e, o, rethVa, rethRkey, rethLen);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.AETH)) >= 0) {
            Aeth.write(e, o, syn, msn);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.ATMETH)) >= 0) {
            AtomicEth.write(e, o, aVa, aRkey, aSwap, aCmp);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.ATMACK)) >= 0) {
            AtomicAckEth.write(e, o, orig);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.IMMDT)) >= 0) {
            ImmDt.write(e, o, imm);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.IETH)) >= 0) {
            Ieth.write(e, o, ieth);
        }
        if ((o = IbOpcode.offset(op, IbOpcode.DETH)) >= 0) {
            Deth.write(e, o, qkey, sqp);
        }
        MemorySegment.copy(MemorySegment.ofArray(payloadBytes), 0, e, hl, payload);

        // ICRC computed from the values (as a sender would), over a direct buffer at an offset
        if (udp.ipVersion() == 4) {
            int ip = udp.ipOffset();
            int src = EthernetIp.ipv4Src(frame, ip);
            int dst = EthernetIp.ipv4Dst(frame, ip);
            int id = EthernetIp.ipv4Id(frame, ip);
            assertEquals(0x4000, EthernetIp.ipv4FlagsFragment(frame, ip), where + ": DF");
            ByteBuffer send = ByteBuffer.allocateDirect(roceLen + 7);
            send.put(5, out, 0, roceLen);
            int sent = icrc.computeIpv4(src, dst, id, udp.srcPort(), udp.dstPort(), send, 5,
                    roceLen - Icrc.LENGTH);
            assertEquals(wireIcrc, sent, where + ": computeIpv4 with the real IP ID");
            int zero = icrc.computeIpv4(src, dst, 0, udp.srcPort(), udp.dstPort(), send, 5,
                    roceLen - Icrc.LENGTH);
            if (id != 0) {
                assertNotEquals(wireIcrc, zero, where + ": ICRC must cover the IP ID");
            }
            // the receiver's view: only the ID-0 ICRC and the received one; the ID is solved for
            assertEquals(id, solver.solve(zero, wireIcrc, roceLen - Icrc.LENGTH), where + ": solved IPv4 ID");
            assertEquals(-1, solver.solve(zero, wireIcrc ^ 0x00010000, roceLen - Icrc.LENGTH),
                    where + ": a corrupted ICRC has no ID that explains it");
            Icrc.write(e, roceLen - Icrc.LENGTH, sent);
        } else {
            Icrc.write(e, roceLen - Icrc.LENGTH, fromHeader);
        }

        byte[] captured = new byte[roceLen];
        MemorySegment.copy(s, b, MemorySegment.ofArray(captured), 0, roceLen);
        assertArrayEquals(captured, out, where + ": re-encoded packet differs");

        boolean v4 = udp.ipVersion() == 4;
        int ipId = v4 ? EthernetIp.ipv4Id(frame, udp.ipOffset()) : -1;
        int ipSrc = v4 ? EthernetIp.ipv4Src(frame, udp.ipOffset()) : 0;
        int ipDst = v4 ? EthernetIp.ipv4Dst(frame, udp.ipOffset()) : 0;
        return new Packet(frameNo, udp, ipSrc, ipDst, ipId, op, se, mig, pad, pkey, qp, ack, psn, rethVa, rethRkey,
                rethLen, syn, msn, aVa, aRkey, aSwap, aCmp, orig, imm, ieth, qkey, sqp, hl,
                payload, payloadBytes, wireIcrc);
    }
}

package io.jrdma.engine.roce;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Counters;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.link.PacketSink;
import io.jrdma.wire.Bth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.Ipv4IdSolver;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The packet receiver of the IB transport (rxe's {@code rxe_recv.c}): checks every datagram the
 * link delivers (length, opcode and version, ICRC with the IPv4 Identification taken as 0 or
 * solved, P_Key, destination QP, source address) and hands requests to the {@link Responder} and
 * responses to the {@link Completer}. A packet that fails a check is dropped and counted under
 * rxe's counter names. Engine thread only; allocates nothing.
 */
final class PacketReceiver implements PacketSink {
    private final RoceTransport roce;
    private final Engine engine;
    private final Counters counters;
    private final Icrc icrc = new Icrc();
    private final Ipv4IdSolver idSolver = new Ipv4IdSolver();
    private final boolean anyIpv4Id;

    PacketReceiver(RoceTransport roce) {
        this.roce = roce;
        this.engine = roce.engine;
        this.counters = roce.counters;
        this.anyIpv4Id = SoftRoceOptions.of(roce.context.options).anyIpv4Id();
    }

    @Override
    public void onPacket(ByteBuffer buf, MemorySegment seg, int len, Endpoint src, Endpoint dst) {
        counters.increment(Counter.RCVD_PKTS);
        counters.add(Counter.RCVD_BYTES, len);
        if (len < Bth.LENGTH + Icrc.LENGTH) {
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int opcode = Bth.opcode(seg, 0);
        if (!IbOpcode.valid(opcode) || Bth.tver(seg, 0) != 0) {
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int hdr = IbOpcode.headerLength(opcode);
        int payload = len - hdr - Bth.padCnt(seg, 0) - Icrc.LENGTH;
        int mask = IbOpcode.mask(opcode);
        if (payload < 0 || ((mask & IbOpcode.PAYLOAD) == 0 && payload != 0)) {
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int expected = icrc(icrc, src, dst, buf, len - Icrc.LENGTH);
        int received = Icrc.read(seg, len - Icrc.LENGTH);
        if (expected != received) {
            if (src.isIpv6() || !anyIpv4Id || idSolver.solve(expected, received, len - Icrc.LENGTH) < 0) {
                counters.increment(Counter.RCVD_ICRC_ERR);
                return;
            }
            counters.increment(Counter.ICRC_IPV4_ID_SOLVED);
        }
        int pkey = Bth.pkey(seg, 0);
        if ((pkey & 0x7FFF) != 0x7FFF) { // default P_Key only
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        int destQp = Bth.destQp(seg, 0);
        if (destQp == 1) { // the GSI: MADs for the IB CM (copied into its ring; dropped and counted when full)
            roce.ibcm.gsi().onPacket(seg, opcode, hdr, payload, src, dst);
            return;
        }
        RoceQp qp = (RoceQp) engine.qps.get(destQp); // every QP of a RoCE context is one
        if (qp == null) {
            counters.increment(Counter.RCVD_UNKNOWN_QP);
            return;
        }
        if ((opcode & IbOpcode.TRANSPORT_MASK) != qp.opcodeTransport) { // rxe check_type_state: RC to RC, UC to UC...
            counters.increment(Counter.RCVD_MALFORMED);
            return;
        }
        if (qp.opcodeTransport == IbOpcode.TRANSPORT_UD) { // a datagram may come from anyone
            try {
                roce.responder.onDatagram(qp, seg, opcode, hdr, payload, src, dst);
            } catch (RuntimeException e) {
                counters.increment(Counter.ENGINE_ERRORS);
            }
            return;
        }
        if (qp.remote == null || !src.sameAddress(qp.remote)) {
            counters.increment(Counter.RCVD_BAD_ADDR);
            return;
        }
        counters.increment(qp.stats, QpCounter.RCVD_PKTS);
        counters.add(qp.stats, QpCounter.RCVD_BYTES, len);
        try {
            if ((mask & IbOpcode.REQ) != 0) {
                roce.responder.onRequest(qp, seg, opcode, mask, hdr, payload);
            } else {
                roce.completer.onResponse(qp, seg, opcode, mask, hdr, payload);
            }
        } catch (RuntimeException e) {
            // e.g. a region whose memory was freed under it: the packet is dropped, the engine goes on
            counters.increment(Counter.ENGINE_ERRORS);
        }
    }

    /** The ICRC of {@code buf[0, len)} sent from {@code from} to {@code to}; IPv4 with the ID taken as 0 (docs/wire.md). */
    static int icrc(Icrc icrc, Endpoint from, Endpoint to, ByteBuffer buf, int len) {
        return from.isIpv6()
                ? icrc.computeIpv6(from.ipv6Bytes(), to.ipv6Bytes(), from.port(), to.port(), buf, 0, len)
                : icrc.computeIpv4(from.ipv4(), to.ipv4(), 0, from.port(), to.port(), buf, 0, len);
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Cq;
import io.jrdma.engine.core.Pd;
import io.jrdma.engine.core.Qp;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpType;
import io.jrdma.wire.IbOpcode;

/**
 * A QP of the IB transport (RC, UC or UD): the core's queues and attributes plus the state of each
 * role, as rxe's {@code struct rxe_qp} holds {@code req}, {@code comp} and {@code resp}. Each
 * role writes only its own part; shared facts (PSNs agreed at modify, MTU, destination QPN,
 * timeouts) are the core's attributes.
 */
final class RoceQp extends Qp {
    /** rxe's RXE_MAX_UNACKED_PSNS: the requester's window. */
    static final int MAX_UNACKED_PSNS = 128;
    /** rxe's RXE_MAX_PKT_PER_ACK: AckReq at least this often. */
    static final int MAX_PKT_PER_ACK = 64;

    final RequesterState req = new RequesterState();
    final CompleterState comp = new CompleterState();
    final ResponderState resp = new ResponderState();
    /**
     * The peer's responder ACKs packets that did not ask for one by itself, within its coalescing
     * delay (a jrdma peer; the connection manager negotiates it). The requester then sets AckReq
     * only where something waits for the ACK: a signaled WQE, a send queue half full, every
     * {@link #MAX_PKT_PER_ACK} packets, half a window. Off, AckReq goes on every message, as rxe does.
     * An attribute: set on the control path before RTS.
     */
    boolean peerAcksUnrequested;

    /** The transport bits of the BTH opcodes this QP sends and takes ({@link IbOpcode#TRANSPORT_RC}, UC or UD). */
    final int opcodeTransport;
    /** UC or UD: no ACKs, no retransmission; a WQE completes once its last packet is sent. */
    final boolean unreliable;
    /** in SQD: SQ_DRAINED was raised for this drain (cleared by each move to SQD) */
    boolean drainedRaised;

    RoceQp(Context context, Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
        super(context, pd, qpn, init, sendCq, recvCq);
        opcodeTransport = switch (init.type()) {
            case RC -> IbOpcode.TRANSPORT_RC;
            case UC -> IbOpcode.TRANSPORT_UC;
            case UD -> IbOpcode.TRANSPORT_UD;
        };
        unreliable = init.type() != QpType.RC;
    }
}

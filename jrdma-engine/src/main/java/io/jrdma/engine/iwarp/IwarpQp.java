package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Cq;
import io.jrdma.engine.core.Pd;
import io.jrdma.engine.core.Qp;
import io.jrdma.verbs.QpInitAttr;

/**
 * A QP of the iWARP transport: the core's queues and attributes plus its TCP stream (siw's
 * {@code struct siw_qp} with its tx and rx contexts, which live in {@link IwarpStream}) and the
 * transmitter's place in the send queue.
 */
final class IwarpQp extends Qp {
    /** the connected stream; null before the connection manager attaches one and after release */
    IwarpStream iw;
    /** the send-queue index of the WQE being sent, and the byte offset within it */
    long reqIndex;
    long reqOffset;
    /** READ/atomic requests sent and not yet completed (bounded by the QP's ORD) */
    int rdAtomicInFlight;

    IwarpQp(Context context, Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
        super(context, pd, qpn, init, sendCq, recvCq);
        refusedOps = IwarpEngine.EXTENSION_OPS; // iWARP (RFC 5040) has neither; only jrdma peers agree on RFC 7306-style ones
    }
}

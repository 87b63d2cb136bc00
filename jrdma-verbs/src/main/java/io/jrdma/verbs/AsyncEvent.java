package io.jrdma.verbs;

/**
 * An asynchronous event ({@code ibv_async_event}): something that happened to a QP, CQ, SRQ, port or the
 * device outside any work request. {@link DeviceContext#pollAsyncEvent} and
 * {@link DeviceContext#awaitAsyncEvent} fill an object the caller owns and reuses, as polling completions does.
 *
 * <p>There is no {@code ibv_ack_async_event}: libibverbs needs it so that destroying a QP waits until
 * nobody holds a pointer to it from an event; here the event holds a Java reference, which stays valid
 * (a closed object answers its getters and refuses verbs), so nothing is acknowledged.
 */
public final class AsyncEvent {
    /** Which kind of object an event concerns. */
    public enum Element {
        /** A queue pair: {@link AsyncEvent#queuePair()}. */
        QP,
        /** A completion queue: {@link AsyncEvent#completionQueue()}. */
        CQ,
        /** A shared receive queue: {@link AsyncEvent#srq()}. */
        SRQ,
        /** A port: {@link AsyncEvent#portNum()}. */
        PORT,
        /** The device itself. */
        DEVICE
    }

    /** Event types, in the order and meaning of {@code ibv_event_type}. */
    public enum Type {
        /** A CQ overran or could not be written; its QPs go to ERROR. */
        CQ_ERR(Element.CQ),
        /** A QP hit an error that is not a work request's own (a bad packet it could not complete by a status); it is in ERROR. */
        QP_FATAL(Element.QP),
        /** A responder QP saw an invalid request (a transport error the requester caused); it is in ERROR. */
        QP_REQ_ERR(Element.QP),
        /** A responder QP saw a request violate access (bad rkey, range or rights) without a NAK to carry it; it is in ERROR. */
        QP_ACCESS_ERR(Element.QP),
        /** The first packet reached a QP in RTR: the connection is established (a cue to move to RTS). */
        COMM_EST(Element.QP),
        /** A QP moved to SQD has drained its send queue: no request is outstanding any more. */
        SQ_DRAINED(Element.QP),
        /** Path migration succeeded (automatic path migration; jrdma's providers have no alternate paths). */
        PATH_MIG(Element.QP),
        /** Path migration failed (automatic path migration; jrdma's providers have no alternate paths). */
        PATH_MIG_ERR(Element.QP),
        /** The device failed: every object of the context is unusable; close it. */
        DEVICE_FATAL(Element.DEVICE),
        /** A port became active (for jrdma: its network interface came up). */
        PORT_ACTIVE(Element.PORT),
        /** A port left the active state (for jrdma: its network interface went down). */
        PORT_ERR(Element.PORT),
        /** A port's LID changed (InfiniBand only). */
        LID_CHANGE(Element.PORT),
        /** A port's P_Key table changed. */
        PKEY_CHANGE(Element.PORT),
        /** A port's subnet manager changed (InfiniBand only). */
        SM_CHANGE(Element.PORT),
        /** An SRQ failed; the QPs using it go to ERROR. */
        SRQ_ERR(Element.SRQ),
        /** An SRQ fell below its armed limit ({@link SrqAttr#srqLimit()}); the limit is now disarmed. */
        SRQ_LIMIT_REACHED(Element.SRQ),
        /** A QP with an SRQ, in ERROR, has no receive left in progress: it can be destroyed safely. */
        QP_LAST_WQE_REACHED(Element.QP),
        /** The subnet manager asks clients to register again (InfiniBand only). */
        CLIENT_REREGISTER(Element.PORT),
        /** A port's GID table changed (for jrdma: an address of its interface came or went). */
        GID_CHANGE(Element.PORT),
        /** A work queue failed (libibverbs' {@code IBV_EVENT_WQ_FATAL}; jrdma has no WQ objects). */
        WQ_FATAL(Element.QP);

        private final Element element;

        Type(Element element) {
            this.element = element;
        }

        /** {@return the kind of object events of this type concern} */
        public Element element() {
            return element;
        }
    }

    private Type type;
    private QueuePair qp;
    private CompletionQueue cq;
    private SharedReceiveQueue srq;
    private int portNum;

    /** An empty event, to be filled by {@link DeviceContext#pollAsyncEvent} and reused. */
    public AsyncEvent() {
    }

    /**
     * Fills the event for a QP; called by providers.
     *
     * @param type an event whose {@link Type#element()} is QP
     * @param qp   the QP
     * @return this event
     * @throws IllegalArgumentException if the type does not concern a QP
     */
    public AsyncEvent setQp(Type type, QueuePair qp) {
        return set(type, Element.QP, qp, null, null, 0);
    }

    /**
     * Fills the event for a CQ; called by providers.
     *
     * @param type an event whose {@link Type#element()} is CQ
     * @param cq   the CQ
     * @return this event
     * @throws IllegalArgumentException if the type does not concern a CQ
     */
    public AsyncEvent setCq(Type type, CompletionQueue cq) {
        return set(type, Element.CQ, null, cq, null, 0);
    }

    /**
     * Fills the event for an SRQ; called by providers.
     *
     * @param type an event whose {@link Type#element()} is SRQ
     * @param srq  the SRQ
     * @return this event
     * @throws IllegalArgumentException if the type does not concern an SRQ
     */
    public AsyncEvent setSrq(Type type, SharedReceiveQueue srq) {
        return set(type, Element.SRQ, null, null, srq, 0);
    }

    /**
     * Fills the event for a port, or for the device (port 0); called by providers.
     *
     * @param type    an event whose {@link Type#element()} is PORT or DEVICE
     * @param portNum the port (1), or 0 for a DEVICE event
     * @return this event
     * @throws IllegalArgumentException if the type concerns a QP, CQ or SRQ
     */
    public AsyncEvent setPort(Type type, int portNum) {
        return set(type, type.element == Element.DEVICE ? Element.DEVICE : Element.PORT, null, null, null, portNum);
    }

    private AsyncEvent set(Type t, Element want, QueuePair q, CompletionQueue c, SharedReceiveQueue s, int port) {
        if (t.element != want) {
            throw new IllegalArgumentException(t + " concerns a " + t.element + ", not a " + want);
        }
        this.type = t;
        this.qp = q;
        this.cq = c;
        this.srq = s;
        this.portNum = port;
        return this;
    }

    /** {@return the event type, or null for an event never filled} */
    public Type type() {
        return type;
    }

    /** {@return the QP it concerns ({@code element.qp}), or null when it concerns no QP} */
    public QueuePair queuePair() {
        return qp;
    }

    /** {@return the CQ it concerns ({@code element.cq}), or null when it concerns no CQ} */
    public CompletionQueue completionQueue() {
        return cq;
    }

    /** {@return the SRQ it concerns ({@code element.srq}), or null when it concerns no SRQ} */
    public SharedReceiveQueue srq() {
        return srq;
    }

    /** {@return the port it concerns ({@code element.port_num}), 0 when it concerns no port} */
    public int portNum() {
        return portNum;
    }

    @Override
    public String toString() {
        if (type == null) {
            return "AsyncEvent{}";
        }
        String what = switch (type.element) {
            case QP -> qp == null ? "qp=null" : "qp=0x" + Integer.toHexString(qp.qpn());
            case CQ -> "cq=" + cq;
            case SRQ -> "srq=" + srq;
            case PORT, DEVICE -> "port=" + portNum;
        };
        return "AsyncEvent{" + type + ", " + what + '}';
    }
}

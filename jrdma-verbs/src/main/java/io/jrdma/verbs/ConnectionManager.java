package io.jrdma.verbs;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * Sets up connected QPs between two devices (the role of {@code librdmacm}): exchanges QPN,
 * PSN, address, MTU, READ/atomic depths and private data, and moves both QPs to RTS.
 * Rejections are {@link ConnectionRejectedException}s (ECONNREFUSED, with the server's private
 * data); timeouts are {@link RdmaException}s with ETIMEDOUT.
 */
public interface ConnectionManager {
    /**
     * Listens for connection requests on a TCP address of this host.
     *
     * @param address a local address and port; port 0 picks a free one ({@link Listener#address()} tells which)
     * @return the listener; close it to stop listening
     * @throws RdmaException EADDRINUSE if the address cannot be bound (in use, or not this host's)
     */
    Listener listen(InetSocketAddress address);

    /**
     * Connects a QP in RESET (or INIT) state to a listening peer and waits until both sides are
     * ready; on return the QP is in RTS. Blocks the calling thread up to {@code timeout}.
     *
     * @param qp      a QP of this connection manager's device context, in RESET or INIT
     * @param server  the peer's listening TCP address
     * @param param   this side's parameters and private data (up to 256 bytes) for the server
     * @param timeout how long to wait for the server's answer
     * @return the established connection, with the peer's parameters and private data
     * @throws ConnectionRejectedException ECONNREFUSED if the server rejected the request (with its private data)
     * @throws RdmaException ECONNREFUSED if nothing listens there; ETIMEDOUT if no answer came in time;
     *                       EINVAL for a QP of another context or in another state; EPROTO if the peer is
     *                       not a jrdma connection manager; ENETUNREACH if the route to the server leaves
     *                       from an address the QP's device does not own
     */
    Connection connect(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout);

    /** A listening endpoint. */
    interface Listener extends AutoCloseable {
        /** {@return the TCP address it listens on (with the real port when 0 was asked for)} */
        InetSocketAddress address();

        /**
         * Waits for the next connection request.
         *
         * @param timeout how long to wait; {@link Duration#ZERO} only takes one already waiting
         * @return the next connection request, or null when none came before the timeout
         * @throws RdmaException EIO if the listening socket failed
         */
        ConnectRequest poll(Duration timeout);

        /** Stops listening; requests not yet polled are dropped. Idempotent. */
        @Override
        void close();
    }

    /** A request from a client, to accept with a QP or reject. */
    interface ConnectRequest {
        /** {@return the client's parameters, private data included} */
        ConnParam peerParam();

        /** {@return the client's TCP address} */
        InetSocketAddress peerAddress();

        /**
         * Accepts: moves {@code qp} to RTS, replies with {@code param} and returns once the reply is
         * sent: the calling thread does not wait for the client's ready-to-use, so a client that goes
         * silent after its request cannot hold up the next accept. The InfiniBand CM and jrdma's TCP
         * side channel end the connection when its RTU (on the InfiniBand CM, or a first request on the
         * QP) does not come within {@code timeout} (its QP to ERROR, {@link Connection#pollEvent}
         * DISCONNECTED then TIMEWAIT_EXIT); MPA has no ready-to-use.
         *
         * @param qp      a QP of the listener's device context, in RESET or INIT
         * @param param   this side's parameters and private data (up to 256 bytes) for the client
         * @param timeout how long the client has to confirm with its ready-to-use
         * @return the connection
         * @throws RdmaException ETIMEDOUT if the request timed out before it was accepted;
         *                       ECONNRESET if its TCP connection broke; EINVAL if the request was already
         *                       answered, the private data is too long, or the QP is of another context or state
         */
        Connection accept(QueuePair qp, ConnParam param, Duration timeout);

        /**
         * Rejects: the client's {@code connect} throws a {@link ConnectionRejectedException} carrying
         * {@code privateData}.
         *
         * @param privateData up to 256 bytes for the client (may be empty)
         * @throws RdmaException EINVAL if the request was already answered or the data is too long
         */
        void reject(byte[] privateData);
    }

    /**
     * An established connection. Closing it disconnects, as {@code rdma_disconnect}: this side's QP
     * moves to ERROR (its queued requests complete with WR_FLUSH_ERR) and stops answering, so the
     * peer's next requests fail with RETRY_EXC_ERR.
     */
    interface Connection extends AutoCloseable {
        /** {@return the local QP this connection moved to RTS} */
        QueuePair qp();

        /** {@return what the peer sent, private data included} */
        ConnParam peerParam();

        /** {@return the peer QP's number} */
        int peerQpn();

        /**
         * Waits for the next event on this connection, as {@code rdma_get_cm_event} does for an
         * established {@code rdma_cm_id}: {@link Event#DISCONNECTED} once, when the peer disconnected
         * (its DREQ, its end of the stream closed, or a disconnect of this side that the peer
         * answered or that timed out), then {@link Event#TIMEWAIT_EXIT} once, when the connection's
         * identifiers may be reused. After the peer disconnected the local QP is in ERROR. Events
         * are kept until taken; after {@code TIMEWAIT_EXIT} there are no more (null).
         *
         * @param timeout how long to wait; {@link Duration#ZERO} only takes one already there
         * @return the next event, or null when none came before the timeout
         */
        Event pollEvent(Duration timeout);

        /**
         * Disconnects, as {@code rdma_disconnect}: the local QP moves to ERROR. Idempotent. The QP
         * itself stays open: close it (and its CQs, regions and PD) afterwards. The connection's
         * events ({@link #pollEvent}) can still be taken after it.
         */
        @Override
        void close();
    }

    /**
     * What happens to an established connection ({@code enum rdma_cm_event_type}'s share of it).
     * Establishment itself is what {@code connect} and {@code accept} return; a rejection, an
     * unreachable peer or a timeout is what they throw ({@link ConnectionRejectedException}, ETIMEDOUT).
     */
    enum Event {
        /** {@code RDMA_CM_EVENT_DISCONNECTED}: the connection is down (the peer's disconnect, or the answer to ours). */
        DISCONNECTED,
        /** {@code RDMA_CM_EVENT_TIMEWAIT_EXIT}: the connection left time-wait: its QP may be reused or destroyed. */
        TIMEWAIT_EXIT
    }
}

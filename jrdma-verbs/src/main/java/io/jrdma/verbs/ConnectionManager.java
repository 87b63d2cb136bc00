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
    /** Listens for connection requests on a TCP address of this host (port 0 = any free port). */
    Listener listen(InetSocketAddress address);

    /**
     * Connects a QP in RESET (or INIT) state to a listening peer; on return the QP is in RTS.
     *
     * @return the established connection, with the peer's parameters and private data
     */
    Connection connect(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout);

    /** A listening endpoint. */
    interface Listener extends AutoCloseable {
        /** @return the TCP address it listens on (with the real port when 0 was asked for) */
        InetSocketAddress address();

        /** @return the next connection request, or null when none came before the timeout */
        ConnectRequest poll(Duration timeout);

        @Override
        void close();
    }

    /** A request from a client, to accept with a QP or reject. */
    interface ConnectRequest {
        /** @return the client's parameters, private data included */
        ConnParam peerParam();

        /** @return the client's TCP address */
        InetSocketAddress peerAddress();

        /** Accepts: moves {@code qp} to RTS, replies with {@code param}, and waits for the client's ready-to-use. */
        Connection accept(QueuePair qp, ConnParam param, Duration timeout);

        /** Rejects with up to 256 bytes of private data for the client. */
        void reject(byte[] privateData);
    }

    /**
     * An established connection. Closing it disconnects, as {@code rdma_disconnect}: this side's QP
     * moves to ERROR (its queued requests complete with WR_FLUSH_ERR) and stops answering, so the
     * peer's next requests fail with RETRY_EXC_ERR.
     */
    interface Connection extends AutoCloseable {
        QueuePair qp();

        /** @return what the peer sent, private data included */
        ConnParam peerParam();

        /** @return the peer QP's number */
        int peerQpn();

        @Override
        void close();
    }
}

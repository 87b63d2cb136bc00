package io.jrdma.verbs;

import java.util.Arrays;

/**
 * Connection parameters ({@code rdma_conn_param}): what one side offers the other when a
 * connection is set up.
 *
 * @param privateData        up to 256 bytes for the peer application
 * @param responderResources incoming READ/atomic requests this side can hold (its IRD)
 * @param initiatorDepth     outstanding READ/atomic requests this side wants to issue (its ORD)
 * @param retryCount         transport retries, 0..7
 * @param rnrRetryCount      RNR retries, 0..7 (7 = forever)
 * @param mtu                the largest path MTU this side wants (the smaller of both is used; over the InfiniBand
 *                           CM, whose REP carries no MTU, the client's is used and a server that wants less rejects)
 */
public record ConnParam(byte[] privateData, int responderResources, int initiatorDepth, int retryCount,
                        int rnrRetryCount, Mtu mtu) {
    /** The most private data a connection message carries, in bytes (as librdmacm over TCP-based CMs). */
    public static final int MAX_PRIVATE_DATA = 256;

    /**
     * Validates and makes the parameters; the private data is copied (null means none).
     *
     * @throws RdmaException EINVAL for more than 256 bytes of private data, a retry count outside
     *                       0..7, or a READ/atomic depth outside 0..255
     */
    public ConnParam {
        privateData = privateData == null ? new byte[0] : privateData.clone();
        if (privateData.length > MAX_PRIVATE_DATA) {
            throw new RdmaException(RdmaException.Errno.EINVAL,
                    "private data is limited to " + MAX_PRIVATE_DATA + " bytes, not " + privateData.length);
        }
        if (retryCount < 0 || retryCount > 7 || rnrRetryCount < 0 || rnrRetryCount > 7) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "retry counts must be 0..7");
        }
        if (responderResources < 0 || responderResources > 255 || initiatorDepth < 0 || initiatorDepth > 255) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "READ/atomic depths must be 0..255");
        }
    }

    /**
     * {@return the defaults: 16 READ/atomics each way, 7 retries, infinite RNR retry, a 4096-byte
     * MTU, no private data}
     */
    public static ConnParam defaults() {
        return new ConnParam(new byte[0], 16, 16, 7, 7, Mtu.MTU_4096);
    }

    /**
     * {@return these parameters with other private data}
     *
     * @param data up to 256 bytes for the peer (copied; null means none)
     * @throws RdmaException EINVAL for more than 256 bytes
     */
    public ConnParam withPrivateData(byte[] data) {
        return new ConnParam(data, responderResources, initiatorDepth, retryCount, rnrRetryCount, mtu);
    }

    /**
     * {@return these parameters with another MTU wish}
     *
     * @param m the largest path MTU this side wants; the connection uses the smaller of both sides' and the port's
     *          (over the InfiniBand CM the client's: an accept that wants less rejects the request with invalid MTU)
     */
    public ConnParam withMtu(Mtu m) {
        return new ConnParam(privateData, responderResources, initiatorDepth, retryCount, rnrRetryCount, m);
    }

    /**
     * {@return these parameters with other retry counts}
     *
     * @param retry    transport retries after a timeout, 0..7
     * @param rnrRetry retries after an RNR NAK, 0..7 (7 = forever)
     * @throws RdmaException EINVAL outside 0..7
     */
    public ConnParam withRetry(int retry, int rnrRetry) {
        return new ConnParam(privateData, responderResources, initiatorDepth, retry, rnrRetry, mtu);
    }

    /**
     * {@return these parameters with other READ/atomic depths}
     *
     * @param responder incoming READ/atomic requests this side can hold (IRD), 0..255
     * @param initiator outstanding READ/atomic requests this side wants to issue (ORD), 0..255
     * @throws RdmaException EINVAL outside 0..255
     */
    public ConnParam withRdAtomic(int responder, int initiator) {
        return new ConnParam(privateData, responder, initiator, retryCount, rnrRetryCount, mtu);
    }

    /** {@return a copy of the private data (empty when none)} */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnParam c && Arrays.equals(privateData, c.privateData)
                && responderResources == c.responderResources && initiatorDepth == c.initiatorDepth
                && retryCount == c.retryCount && rnrRetryCount == c.rnrRetryCount && mtu == c.mtu;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(privateData) * 31 + responderResources * 7 + initiatorDepth;
    }

    @Override
    public String toString() {
        return "ConnParam{privateData=" + privateData.length + " B, responderResources=" + responderResources
                + ", initiatorDepth=" + initiatorDepth + ", retry=" + retryCount + ", rnrRetry=" + rnrRetryCount
                + ", mtu=" + mtu.bytes() + '}';
    }
}

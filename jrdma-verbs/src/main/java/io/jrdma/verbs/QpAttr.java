package io.jrdma.verbs;

/**
 * Attributes for {@link QueuePair#modify(QpAttr)} ({@code ibv_qp_attr} with its mask): each
 * setter records its field in {@link #mask()}, so only what was set is applied. The
 * transitions and the attributes each one requires follow IBA 10.3 / {@code ibv_modify_qp(3)}:
 * <ul>
 * <li>RESET→INIT: state, pkeyIndex, portNum, accessFlags</li>
 * <li>INIT→RTR: state, av, pathMtu, destQpn, rqPsn, maxDestRdAtomic, minRnrTimer</li>
 * <li>RTR→RTS: state, sqPsn, timeout, retryCnt, rnrRetry, maxRdAtomic</li>
 * </ul>
 * A UC QP needs the same minus what reliability and READs need: RESET→INIT state, pkeyIndex, portNum,
 * accessFlags; INIT→RTR state, av, pathMtu, destQpn, rqPsn; RTR→RTS state, sqPsn. A UD QP has no peer
 * and no path: RESET→INIT state, pkeyIndex, portNum, qkey; INIT→RTR state; RTR→RTS state, sqPsn (each
 * send names its destination: {@link SendWorkRequest#ud}).
 * {@link QueuePair#query()} returns a fully populated instance.
 */
public final class QpAttr {
    /** Mask bit: {@link #state(QpState)} was set ({@code IBV_QP_STATE}). */
    public static final int STATE = 1;
    /** Mask bit: the current state is asserted ({@code IBV_QP_CUR_STATE}); not settable here. */
    public static final int CUR_STATE = 1 << 1;
    /** Mask bit: {@link #accessFlags(int)} was set ({@code IBV_QP_ACCESS_FLAGS}). */
    public static final int ACCESS_FLAGS = 1 << 3;
    /** Mask bit: {@link #qkey(int)} was set ({@code IBV_QP_QKEY}). */
    public static final int QKEY = 1 << 6;
    /** Mask bit: {@link #pkeyIndex(int)} was set ({@code IBV_QP_PKEY_INDEX}). */
    public static final int PKEY_INDEX = 1 << 4;
    /** Mask bit: {@link #portNum(int)} was set ({@code IBV_QP_PORT}). */
    public static final int PORT = 1 << 5;
    /** Mask bit: {@link #av(AddressVector)} was set ({@code IBV_QP_AV}). */
    public static final int AV = 1 << 7;
    /** Mask bit: {@link #pathMtu(Mtu)} was set ({@code IBV_QP_PATH_MTU}). */
    public static final int PATH_MTU = 1 << 8;
    /** Mask bit: {@link #timeout(int)} was set ({@code IBV_QP_TIMEOUT}). */
    public static final int TIMEOUT = 1 << 9;
    /** Mask bit: {@link #retryCnt(int)} was set ({@code IBV_QP_RETRY_CNT}). */
    public static final int RETRY_CNT = 1 << 10;
    /** Mask bit: {@link #rnrRetry(int)} was set ({@code IBV_QP_RNR_RETRY}). */
    public static final int RNR_RETRY = 1 << 11;
    /** Mask bit: {@link #rqPsn(int)} was set ({@code IBV_QP_RQ_PSN}). */
    public static final int RQ_PSN = 1 << 12;
    /** Mask bit: {@link #maxRdAtomic(int)} was set ({@code IBV_QP_MAX_QP_RD_ATOMIC}). */
    public static final int MAX_QP_RD_ATOMIC = 1 << 13;
    /** Mask bit: {@link #minRnrTimer(int)} was set ({@code IBV_QP_MIN_RNR_TIMER}). */
    public static final int MIN_RNR_TIMER = 1 << 15;
    /** Mask bit: {@link #sqPsn(int)} was set ({@code IBV_QP_SQ_PSN}). */
    public static final int SQ_PSN = 1 << 16;
    /** Mask bit: {@link #maxDestRdAtomic(int)} was set ({@code IBV_QP_MAX_DEST_RD_ATOMIC}). */
    public static final int MAX_DEST_RD_ATOMIC = 1 << 17;
    /** Mask bit: {@link #destQpn(int)} was set ({@code IBV_QP_DEST_QPN}). */
    public static final int DEST_QPN = 1 << 20;

    private int mask;
    private QpState state = QpState.RESET;
    private int accessFlags;
    private int pkeyIndex;
    private int portNum = 1;
    private AddressVector av;
    private Mtu pathMtu = Mtu.MTU_1024;
    private int timeout = 14;
    private int retryCnt = 7;
    private int rnrRetry = 7;
    private int rqPsn;
    private int sqPsn;
    private int maxRdAtomic = 1;
    private int maxDestRdAtomic = 1;
    private int minRnrTimer = 12;
    private int destQpn;
    private int qkey;

    /** Attributes with nothing set (an empty mask) and libibverbs-like defaults in every field. */
    public QpAttr() {
    }

    /** {@return the fields set, as a combination of this class's mask constants} */
    public int mask() {
        return mask;
    }

    /**
     * {@return true if every bit of {@code bits} was set}
     *
     * @param bits one or more mask constants, OR-ed
     */
    public boolean has(int bits) {
        return (mask & bits) == bits;
    }

    /**
     * Sets the state to move to.
     *
     * @param state the target state; the transitions allowed are those of IBA 10.3
     * @return this object
     */
    public QpAttr state(QpState state) {
        this.state = state;
        mask |= STATE;
        return this;
    }

    /**
     * Sets the remote access the QP allows as responder.
     *
     * @param accessFlags a combination of {@link Access#REMOTE_WRITE}, {@link Access#REMOTE_READ} and
     *                    {@link Access#REMOTE_ATOMIC}; a request of a kind not allowed is NAKed with
     *                    a remote access error
     * @return this object
     */
    public QpAttr accessFlags(int accessFlags) {
        this.accessFlags = accessFlags;
        mask |= ACCESS_FLAGS;
        return this;
    }

    /**
     * Sets the partition key index. jrdma's devices have one P_Key, the default 0xffff, at index 0.
     *
     * @param pkeyIndex the index in the port's P_Key table: 0 (modify refuses another with EINVAL)
     * @return this object
     */
    public QpAttr pkeyIndex(int pkeyIndex) {
        this.pkeyIndex = pkeyIndex;
        mask |= PKEY_INDEX;
        return this;
    }

    /**
     * Sets the port the QP is on ({@code IBV_QP_PORT}, given at RESET→INIT): 1 to the device's
     * {@link DeviceAttr#physPortCnt()} (jrdma's software devices have one port, number 1; an rdma-core NIC may have
     * more). An address vector given later without a port is on this one, and its {@code sgidIndex} is an index of
     * this port's GID table ({@link DeviceContext#gid(int, int)}); a provider refuses a port the device lacks with
     * EINVAL.
     *
     * @param portNum the port number
     * @return this object
     */
    public QpAttr portNum(int portNum) {
        this.portNum = portNum;
        mask |= PORT;
        return this;
    }

    /**
     * Sets the path to the peer: its GID, the local GID index and the UDP port (INIT to RTR).
     *
     * @param av the address vector
     * @return this object
     */
    public QpAttr av(AddressVector av) {
        this.av = av;
        mask |= AV;
        return this;
    }

    /**
     * Sets the path MTU: the payload bytes per packet for this connection (INIT to RTR).
     *
     * @param pathMtu at most the port's active MTU
     * @return this object
     */
    public QpAttr pathMtu(Mtu pathMtu) {
        this.pathMtu = pathMtu;
        mask |= PATH_MTU;
        return this;
    }

    /**
     * Sets the local ACK timeout: 4.096 &micro;s &times; 2<sup>timeout</sup>; 0 waits forever (IBA 11.2.4.2).
     *
     * @param timeout 0..31 (14 is about 67 ms)
     * @return this object
     * @throws RdmaException EINVAL outside 0..31
     */
    public QpAttr timeout(int timeout) {
        check(timeout, 0, 31, "timeout");
        this.timeout = timeout;
        mask |= TIMEOUT;
        return this;
    }

    /**
     * Sets how often a request is retried after a timeout or a sequence error NAK before it
     * completes with {@link WcStatus#RETRY_EXC_ERR}.
     *
     * @param retryCnt 0..7
     * @return this object
     * @throws RdmaException EINVAL outside 0..7
     */
    public QpAttr retryCnt(int retryCnt) {
        check(retryCnt, 0, 7, "retry count");
        this.retryCnt = retryCnt;
        mask |= RETRY_CNT;
        return this;
    }

    /**
     * Sets how often a request is retried after an RNR NAK (the peer had no receive posted)
     * before it completes with {@link WcStatus#RNR_RETRY_EXC_ERR}.
     *
     * @param rnrRetry 0..7; 7 retries forever
     * @return this object
     * @throws RdmaException EINVAL outside 0..7
     */
    public QpAttr rnrRetry(int rnrRetry) {
        check(rnrRetry, 0, 7, "RNR retry");
        this.rnrRetry = rnrRetry;
        mask |= RNR_RETRY;
        return this;
    }

    /**
     * Sets the first packet sequence number the receive side expects: the peer's send PSN (INIT to RTR).
     *
     * @param rqPsn a 24-bit PSN; higher bits are dropped
     * @return this object
     */
    public QpAttr rqPsn(int rqPsn) {
        this.rqPsn = rqPsn & 0xFFFFFF;
        mask |= RQ_PSN;
        return this;
    }

    /**
     * Sets the first packet sequence number the send side uses (RTR to RTS).
     *
     * @param sqPsn a 24-bit PSN; higher bits are dropped
     * @return this object
     */
    public QpAttr sqPsn(int sqPsn) {
        this.sqPsn = sqPsn & 0xFFFFFF;
        mask |= SQ_PSN;
        return this;
    }

    /**
     * Sets how many RDMA READ and atomic requests this QP may have outstanding as initiator (ORD).
     *
     * @param maxRdAtomic 0..255
     * @return this object
     * @throws RdmaException EINVAL outside 0..255
     */
    public QpAttr maxRdAtomic(int maxRdAtomic) {
        check(maxRdAtomic, 0, 255, "max_rd_atomic");
        this.maxRdAtomic = maxRdAtomic;
        mask |= MAX_QP_RD_ATOMIC;
        return this;
    }

    /**
     * Sets how many incoming RDMA READ and atomic requests this QP can hold as responder (IRD).
     *
     * @param maxDestRdAtomic 0..255
     * @return this object
     * @throws RdmaException EINVAL outside 0..255
     */
    public QpAttr maxDestRdAtomic(int maxDestRdAtomic) {
        check(maxDestRdAtomic, 0, 255, "max_dest_rd_atomic");
        this.maxDestRdAtomic = maxDestRdAtomic;
        mask |= MAX_DEST_RD_ATOMIC;
        return this;
    }

    /**
     * Sets the RNR NAK timer code this QP sends as responder when no receive is posted: how long
     * the requester waits before retrying (IBA table 45; 12 is 0.64 ms).
     *
     * @param minRnrTimer 0..31
     * @return this object
     * @throws RdmaException EINVAL outside 0..31
     */
    public QpAttr minRnrTimer(int minRnrTimer) {
        check(minRnrTimer, 0, 31, "min RNR timer");
        this.minRnrTimer = minRnrTimer;
        mask |= MIN_RNR_TIMER;
        return this;
    }

    /**
     * Sets the peer QP's number (INIT to RTR).
     *
     * @param destQpn a 24-bit QP number; higher bits are dropped
     * @return this object
     */
    public QpAttr destQpn(int destQpn) {
        this.destQpn = destQpn & 0xFFFFFF;
        mask |= DEST_QPN;
        return this;
    }

    /**
     * Sets the Q_Key of a UD QP (RESET to INIT, or later): an incoming datagram is delivered only when the
     * Q_Key it carries (the sender's {@link SendWorkRequest#ud} remote Q_Key) equals it; others are dropped
     * without a completion and counted. Keys with the high bit set are controlled Q_Keys (IBA 10.2.4): a
     * send request may not use one unless it is the QP's own.
     *
     * @param qkey the 32-bit Q_Key
     * @return this object
     */
    public QpAttr qkey(int qkey) {
        this.qkey = qkey;
        mask |= QKEY;
        return this;
    }

    /** {@return the Q_Key (UD QPs)} */
    public int qkey() {
        return qkey;
    }

    /** {@return the state (the target state, or the current one in a {@link QueuePair#query()} result)} */
    public QpState state() {
        return state;
    }

    /** {@return the remote access flags, a combination of {@link Access} constants} */
    public int accessFlags() {
        return accessFlags;
    }

    /** {@return the partition key index} */
    public int pkeyIndex() {
        return pkeyIndex;
    }

    /** {@return the port number} */
    public int portNum() {
        return portNum;
    }

    /** {@return the path to the peer, or null if none was set} */
    public AddressVector av() {
        return av;
    }

    /** {@return the path MTU} */
    public Mtu pathMtu() {
        return pathMtu;
    }

    /** {@return the local ACK timeout exponent, 0..31} */
    public int timeout() {
        return timeout;
    }

    /** {@return the retry count, 0..7} */
    public int retryCnt() {
        return retryCnt;
    }

    /** {@return the RNR retry count, 0..7 (7: forever)} */
    public int rnrRetry() {
        return rnrRetry;
    }

    /** {@return the receive side's first expected PSN (24 bits)} */
    public int rqPsn() {
        return rqPsn;
    }

    /** {@return the send side's first PSN (24 bits)} */
    public int sqPsn() {
        return sqPsn;
    }

    /** {@return the outstanding READ/atomic requests allowed as initiator} */
    public int maxRdAtomic() {
        return maxRdAtomic;
    }

    /** {@return the incoming READ/atomic requests held as responder} */
    public int maxDestRdAtomic() {
        return maxDestRdAtomic;
    }

    /** {@return the RNR NAK timer code, 0..31} */
    public int minRnrTimer() {
        return minRnrTimer;
    }

    /** {@return the peer QP's number} */
    public int destQpn() {
        return destQpn;
    }

    private static void check(int v, int min, int max, String what) {
        if (v < min || v > max) {
            throw new RdmaException(RdmaException.Errno.EINVAL, what + " must be " + min + ".." + max + ", not " + v);
        }
    }

    @Override
    public String toString() {
        return "QpAttr{state=" + state + ", mtu=" + pathMtu.bytes() + ", destQpn=0x" + Integer.toHexString(destQpn)
                + ", rqPsn=" + rqPsn + ", sqPsn=" + sqPsn + ", timeout=" + timeout + ", retryCnt=" + retryCnt
                + ", rnrRetry=" + rnrRetry + ", minRnrTimer=" + minRnrTimer + ", maxRdAtomic=" + maxRdAtomic
                + ", maxDestRdAtomic=" + maxDestRdAtomic + ((mask & QKEY) != 0 ? ", qkey=0x" + Integer.toHexString(qkey) : "") + ", access=" + Access.toString(accessFlags) + ", av=" + av + '}';
    }
}

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
 * {@link QueuePair#query()} returns a fully populated instance.
 */
public final class QpAttr {
    public static final int STATE = 1;
    public static final int CUR_STATE = 1 << 1;
    public static final int ACCESS_FLAGS = 1 << 3;
    public static final int PKEY_INDEX = 1 << 4;
    public static final int PORT = 1 << 5;
    public static final int AV = 1 << 7;
    public static final int PATH_MTU = 1 << 8;
    public static final int TIMEOUT = 1 << 9;
    public static final int RETRY_CNT = 1 << 10;
    public static final int RNR_RETRY = 1 << 11;
    public static final int RQ_PSN = 1 << 12;
    public static final int MAX_QP_RD_ATOMIC = 1 << 13;
    public static final int MIN_RNR_TIMER = 1 << 15;
    public static final int SQ_PSN = 1 << 16;
    public static final int MAX_DEST_RD_ATOMIC = 1 << 17;
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

    /** @return the fields set, as a combination of this class's mask constants */
    public int mask() {
        return mask;
    }

    /** @return true if every bit of {@code bits} was set */
    public boolean has(int bits) {
        return (mask & bits) == bits;
    }

    public QpAttr state(QpState state) {
        this.state = state;
        mask |= STATE;
        return this;
    }

    /** Remote access the QP allows as responder: {@link Access#REMOTE_WRITE}, REMOTE_READ, REMOTE_ATOMIC. */
    public QpAttr accessFlags(int accessFlags) {
        this.accessFlags = accessFlags;
        mask |= ACCESS_FLAGS;
        return this;
    }

    public QpAttr pkeyIndex(int pkeyIndex) {
        this.pkeyIndex = pkeyIndex;
        mask |= PKEY_INDEX;
        return this;
    }

    public QpAttr portNum(int portNum) {
        this.portNum = portNum;
        mask |= PORT;
        return this;
    }

    public QpAttr av(AddressVector av) {
        this.av = av;
        mask |= AV;
        return this;
    }

    public QpAttr pathMtu(Mtu pathMtu) {
        this.pathMtu = pathMtu;
        mask |= PATH_MTU;
        return this;
    }

    /** Local ACK timeout: 4.096 µs × 2^timeout; 0 waits forever (IBA 11.2.4.2). */
    public QpAttr timeout(int timeout) {
        check(timeout, 0, 31, "timeout");
        this.timeout = timeout;
        mask |= TIMEOUT;
        return this;
    }

    /** Retries after a timeout or sequence error NAK before RETRY_EXC_ERR, 0..7. */
    public QpAttr retryCnt(int retryCnt) {
        check(retryCnt, 0, 7, "retry count");
        this.retryCnt = retryCnt;
        mask |= RETRY_CNT;
        return this;
    }

    /** Retries after an RNR NAK before RNR_RETRY_EXC_ERR, 0..7; 7 retries forever. */
    public QpAttr rnrRetry(int rnrRetry) {
        check(rnrRetry, 0, 7, "RNR retry");
        this.rnrRetry = rnrRetry;
        mask |= RNR_RETRY;
        return this;
    }

    public QpAttr rqPsn(int rqPsn) {
        this.rqPsn = rqPsn & 0xFFFFFF;
        mask |= RQ_PSN;
        return this;
    }

    public QpAttr sqPsn(int sqPsn) {
        this.sqPsn = sqPsn & 0xFFFFFF;
        mask |= SQ_PSN;
        return this;
    }

    /** Outstanding RDMA READ/atomic requests this QP may have as initiator (ORD). */
    public QpAttr maxRdAtomic(int maxRdAtomic) {
        check(maxRdAtomic, 0, 255, "max_rd_atomic");
        this.maxRdAtomic = maxRdAtomic;
        mask |= MAX_QP_RD_ATOMIC;
        return this;
    }

    /** Incoming RDMA READ/atomic requests this QP can hold as responder (IRD). */
    public QpAttr maxDestRdAtomic(int maxDestRdAtomic) {
        check(maxDestRdAtomic, 0, 255, "max_dest_rd_atomic");
        this.maxDestRdAtomic = maxDestRdAtomic;
        mask |= MAX_DEST_RD_ATOMIC;
        return this;
    }

    /** The RNR NAK timer code (0..31) this QP sends as responder, IBA table 45. */
    public QpAttr minRnrTimer(int minRnrTimer) {
        check(minRnrTimer, 0, 31, "min RNR timer");
        this.minRnrTimer = minRnrTimer;
        mask |= MIN_RNR_TIMER;
        return this;
    }

    public QpAttr destQpn(int destQpn) {
        this.destQpn = destQpn & 0xFFFFFF;
        mask |= DEST_QPN;
        return this;
    }

    public QpState state() {
        return state;
    }

    public int accessFlags() {
        return accessFlags;
    }

    public int pkeyIndex() {
        return pkeyIndex;
    }

    public int portNum() {
        return portNum;
    }

    public AddressVector av() {
        return av;
    }

    public Mtu pathMtu() {
        return pathMtu;
    }

    public int timeout() {
        return timeout;
    }

    public int retryCnt() {
        return retryCnt;
    }

    public int rnrRetry() {
        return rnrRetry;
    }

    public int rqPsn() {
        return rqPsn;
    }

    public int sqPsn() {
        return sqPsn;
    }

    public int maxRdAtomic() {
        return maxRdAtomic;
    }

    public int maxDestRdAtomic() {
        return maxDestRdAtomic;
    }

    public int minRnrTimer() {
        return minRnrTimer;
    }

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
                + ", maxDestRdAtomic=" + maxDestRdAtomic + ", access=" + Access.toString(accessFlags) + ", av=" + av + '}';
    }
}

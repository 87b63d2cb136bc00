package io.jrdma.tck;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ThreadingMode;

import java.net.InetAddress;
import java.util.Optional;

/**
 * What a provider tells the TCK: which device to open for two peers in one JVM, on which
 * address they meet, and how each side's context runs. The TCK opens two contexts of
 * {@link #device()}: a passive <em>server</em> (it listens and accepts in a separate thread)
 * and an active <em>client</em> (it connects and posts from the test thread).
 *
 * <p>The typical pair is a {@link ThreadingMode#DEDICATED} server and an
 * {@link ThreadingMode#INVOKER} client, which the defaults give; override
 * {@link #clientOptions()} for a fixture with both sides dedicated. When a side runs in
 * INVOKER mode the TCK drives it with {@code progress()} from the test thread whenever it waits.
 */
public abstract class ProviderFixture {
    /** For providers. */
    protected ProviderFixture() {
    }

    /** {@return the device both peers open (one context each)} */
    public abstract Device device();

    /** {@return the local address the server listens on and the client connects to} */
    public InetAddress address() {
        return InetAddress.getLoopbackAddress();
    }

    /** {@return options of the passive side: a dedicated engine thread by default} */
    public DeviceOptions serverOptions() {
        return DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED);
    }

    /** {@return options of the active side: INVOKER mode (driven by the test thread) by default} */
    public DeviceOptions clientOptions() {
        return DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER);
    }

    /**
     * Optional hook: the private data a rejected {@code connect} received with its rejection.
     * The verbs API carries rejections as {@link RdmaException} with ECONNREFUSED only; a
     * provider whose exception carries the data can expose it here so the TCK checks it.
     *
     * @param rejection the exception the client's {@code connect} threw
     * @return the rejection's private data, or empty when the provider does not expose it
     */
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return Optional.empty();
    }

    /**
     * Whether the completion of an RDMA WRITE means its data is in the remote memory. True for the
     * InfiniBand transport, where the completion follows the responder's acknowledgement. False for
     * iWARP, where a WRITE (like a SEND) completes once handed to TCP (RFC 5040 §5, as Linux siw):
     * the TCK then waits, with its usual deadline, for the data to appear before checking it.
     *
     * @return true when a WRITE's completion implies remote placement
     */
    public boolean writeCompletionMeansPlaced() {
        return true;
    }

    /**
     * Whether a request the peer refuses (bad rkey, bounds, no or too small a receive, peer gone)
     * completes with the remote error status itself. True for the InfiniBand transport (NAKs,
     * retry and RNR counters). False for iWARP: a SEND or WRITE has already completed once handed
     * to TCP, the peer's TERMINATE (or the closed connection) then moves the QP to ERROR and the
     * requests behind it are flushed; only READs and atomics, which wait for a response, fail
     * themselves. The TCK checks that behaviour instead where it applies.
     *
     * @return true when remote errors complete the failing SEND/WRITE with their status
     */
    public boolean remoteErrorsFailTheRequest() {
        return true;
    }

    /** {@return true when a SEND without a posted receive is retried (IB RNR); iWARP has no RNR} */
    public boolean hasRnrRetry() {
        return true;
    }

    /**
     * The longest private data with which the connection manager still learns the peer's QPN. The
     * InfiniBand CM always carries it. iWARP has no QPNs on the wire: jrdma peers exchange theirs in
     * a trailer after the application's private data, which is left out when it would take the
     * MPA private data past the 256 bytes Linux siw accepts.
     *
     * @return a private data length, at most {@link io.jrdma.verbs.ConnParam#MAX_PRIVATE_DATA}
     */
    public int maxPrivateDataWithPeerQpn() {
        return io.jrdma.verbs.ConnParam.MAX_PRIVATE_DATA;
    }

    /**
     * The most private data the connection manager carries, when the provider declares
     * {@link Deviation#LESS_PRIVATE_DATA}: the TCK then sends this many bytes in its largest case and checks
     * that one byte more is refused (EINVAL).
     *
     * @return a private data length, at most {@link io.jrdma.verbs.ConnParam#MAX_PRIVATE_DATA}
     */
    public int maxPrivateData() {
        return io.jrdma.verbs.ConnParam.MAX_PRIVATE_DATA;
    }

    /**
     * How many QPs {@code SrqTck.oneSrqSharedByAThousandQps} makes and connects: 1,000 by default. A provider
     * whose QPs are slow to make (a device emulated in software) may lower it, saying so where it is run.
     *
     * @return a count of QPs, at least 2
     */
    public int manyQps() {
        return 1000;
    }

    /**
     * The GID by which a peer reaches {@code ctx}, a context of {@link #device()}: by default the
     * fixture's {@link #address()} (soft-RoCE, soft-iWARP: a GID is an IP address). The shared-memory
     * provider's GID names a process and its control segment instead: each context's GID 0.
     *
     * @param ctx a context of the device
     * @return the GID, which is in {@code ctx}'s GID table
     */
    public Gid gid(DeviceContext ctx) {
        return Gid.of(address());
    }

    /**
     * The inline data a post may carry on {@code qp}, when the provider declares {@link Deviation#LESS_INLINE_DATA}.
     *
     * @param qp    a QP of the fixture's device
     * @param asked the {@code maxInlineData} its {@code QpInitAttr} asked
     * @return the bytes of inline data the QP took (by default what was asked)
     */
    public int maxInlineData(io.jrdma.verbs.QueuePair qp, int asked) {
        return asked;
    }

    /**
     * Ways a real device differs from what the TCK checks by default, where the specification allows it or
     * the device cannot be changed. A provider declares each that its device has, with the reason, in
     * {@link #deviation}; the TCK then checks the device's behaviour instead (named in each constant), or, where
     * nothing is left to check, skips the test with the reason. Nothing is declared by default.
     */
    public enum Deviation {
        /**
         * {@code register(..., Access.REMOTE_INVALIDATE)} does not make a region that a peer's SEND_WITH_INV may
         * invalidate (libibverbs has no such access flag; its devices invalidate only memory windows and
         * fast-registered regions). The TCK invalidates a type 2 memory window instead, or skips.
         */
        NO_REMOTELY_INVALIDATABLE_REGIONS,
        /**
         * A SEND_WITH_INV naming a key that may not be invalidated is acknowledged (its sender completes it
         * SUCCESS) and only the receive fails ({@link io.jrdma.verbs.WcStatus#REM_INV_REQ_ERR}, the receiver's QP
         * then in ERROR), where the TCK expects the sender to learn it as REM_ACCESS_ERR. The key stays valid.
         */
        REFUSED_INVALIDATION_FAILS_ONLY_THE_RECEIVE,
        /**
         * A WRITE whose SGE has a bad lkey completes {@link io.jrdma.verbs.WcStatus#LOC_QP_OP_ERR} rather than
         * LOC_PROT_ERR (a READ into one still LOC_PROT_ERR).
         */
        BAD_LKEY_IS_LOC_QP_OP_ERR,
        /**
         * A SEND into a receive too small for it may complete REM_OP_ERR at the sender and LOC_QP_OP_ERR at the
         * receiver (the device takes it as a malformed receive) rather than REM_INV_REQ_ERR and LOC_LEN_ERR: the
         * TCK accepts either pair.
         */
        LENGTH_ERROR_MAY_BE_REM_OP_ERR,
        /** {@code struct ibv_wc} has no solicited flag: completions never carry {@link io.jrdma.verbs.WorkCompletion#SOLICITED}. */
        NO_SOLICITED_FLAG,
        /** A CQ armed for solicited completions only is not notified of an error completion. */
        NO_SOLICITED_EVENT_FOR_ERRORS,
        /** Over IPv4 the TTL a datagram arrives with is not the hop limit of its address handle. */
        IPV4_TTL_IS_NOT_THE_HOP_LIMIT,
        /** A QP taking receives from an SRQ of another PD checks their lkeys against its own PD, not the SRQ's. */
        SRQ_RECEIVES_CHECKED_AGAINST_THE_QPS_PD,
        /**
         * An SRQ resize rounds the depth up first and refuses it only when the posted receives do not fit the
         * rounded depth, so a resize to one less than the receives posted may be taken; and a modify that sets
         * depth and limit at once checks each against the SRQ's current other one, not the new.
         */
        SRQ_RESIZE_CHECKS_THE_ROUNDED_DEPTH,
        /**
         * An access through a memory window is checked against the bounds of the window's region, not of the
         * window: a peer reaches bytes of the region outside the window. The TCK does not check those bounds.
         */
        WINDOW_BOUNDS_NOT_ENFORCED,
        /**
         * A QP on an SRQ that moves to ERROR raises no QP_LAST_WQE_REACHED event. The TCK checks the QP's state,
         * then skips the event with the reason.
         */
        NO_LAST_WQE_EVENT,
        /**
         * The device has no immediate data (iWARP without RFC 7306's extensions, as Linux siw): SEND_WITH_IMM and
         * RDMA_WRITE_WITH_IMM are refused at post. The TCK skips the tests that need them, with the reason.
         */
        NO_IMMEDIATE_DATA,
        /**
         * The connection manager carries less private data than {@link io.jrdma.verbs.ConnParam#MAX_PRIVATE_DATA}:
         * at most {@link ProviderFixture#maxPrivateData()} bytes (librdmacm's {@code private_data_len} is a
         * {@code uint8_t}). The TCK sends that many in its largest case and checks that one more is refused.
         */
        LESS_PRIVATE_DATA,
        /**
         * A QP in RTR that receives its first packet raises no COMM_EST event. The TCK checks that the receive
         * completes in RTR, then skips the event.
         */
        NO_COMM_EST_EVENT,
        /**
         * A READ (or atomic) that the peer refuses with a TERMINATE completes {@link io.jrdma.verbs.WcStatus#WR_FLUSH_ERR}
         * rather than with the remote error's status (REM_ACCESS_ERR...): the device acts on the TERMINATE by closing
         * the connection and flushing its queues. The TCK accepts WR_FLUSH_ERR there and still checks the QP's ERROR.
         */
        TERMINATE_FLUSHES_THE_REFUSED_REQUEST,
        /**
         * A request posted while the QP is failing (after the device moved it to ERROR on a TERMINATE or a lost
         * connection, before the provider learned it) may never complete. The TCK posts the requests it expects
         * flushed only once the QP reports ERROR, and checks them then.
         */
        REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST,
        /**
         * A receive whose SGE the device cannot write (a bad lkey, or one of another PD) completes
         * {@link io.jrdma.verbs.WcStatus#GENERAL_ERR} rather than LOC_PROT_ERR. The TCK accepts GENERAL_ERR there.
         */
        RECEIVE_PROTECTION_ERROR_IS_GENERAL_ERR,
        /**
         * The transport has no retry counts (iWARP retransmits in TCP): the QP reports 0 for retry_cnt and rnr_retry
         * whatever the connection parameters gave. The TCK checks the QP connected and reports 0.
         */
        NO_RETRY_COUNTS,
        /**
         * A QP whose connect was rejected is left in ERROR (and cannot connect again): the TCK checks that state, that
         * a second connect of it is EINVAL, and that a new QP connects.
         */
        A_REJECTED_CONNECT_LEAVES_THE_QP_IN_ERROR,
        /**
         * A connected QP cannot be moved back to RESET: the modify is EINVAL (the device leaves RTS only to ERROR).
         * The TCK checks that refusal and the move to ERROR instead.
         */
        NO_RESET_OF_A_CONNECTED_QP,
        /**
         * A QP may get less inline data than its {@code QpInitAttr} asked: {@link ProviderFixture#maxInlineData}
         * says how much. The TCK writes that many bytes inline and checks that one more is refused at post (EINVAL).
         */
        LESS_INLINE_DATA,
        /**
         * An RDMA READ from a region registered without REMOTE_READ is served. The TCK checks that the READ completes
         * (and, when it succeeds, that it read the region's bytes) instead of the refusal.
         */
        REMOTE_READ_NOT_ENFORCED
    }

    /**
     * Whether the device behaves as {@code d} says, and why.
     *
     * @param d a deviation the TCK knows
     * @return the reason (what the device does and why it is allowed or cannot change), or empty when the
     *         device behaves as the TCK checks by default (the default for every deviation)
     */
    public Optional<String> deviation(Deviation d) {
        return Optional.empty();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{server=" + serverOptions().threadingMode() + ", client="
                + clientOptions().threadingMode() + '}';
    }
}

package io.jrdma.rdmacore.tck;

import io.jrdma.rdmacore.RdmaCoreDevice;
import io.jrdma.rdmacore.RdmaCoreProvider;
import io.jrdma.tck.ProviderFixture;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;
import org.junit.jupiter.api.Assumptions;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.Optional;

/**
 * The TCK fixture for an rdma-core device, named by the system property {@value #DEVICE_PROPERTY}
 * ({@code -Djrdma.tck.rdmacore.device=rxe0}); both peers open a context of it and meet on its first IPv4
 * address (its IPv4-mapped GID), or on {@value #ADDRESS_PROPERTY} when given; on RoCE they connect through
 * jrdma's TCP exchange, on iWARP through rdma_cm (librdmacm), as {@code connectionManager()} does. Without the
 * property, or when the device is not there (no rdma-core device on this host), every test is skipped saying so.
 */
public final class RdmaCoreFixture extends ProviderFixture {
    /** The system property naming the device. */
    public static final String DEVICE_PROPERTY = "jrdma.tck.rdmacore.device";
    /** The system property giving the address both peers meet on (default: the device's first IPv4 GID). */
    public static final String ADDRESS_PROPERTY = "jrdma.tck.rdmacore.address";

    /**
     * The system property lowering how many QPs {@code SrqTck.oneSrqSharedByAThousandQps} makes (default 1,000):
     * interop/rdmacore-tck.sh gives a few dozen in its emulated guests, where making and connecting one QP takes
     * about half a second.
     */
    public static final String MANY_QPS_PROPERTY = "jrdma.tck.rdmacore.manyQps";

    /** The fixture every TCK subclass here uses. */
    public static final RdmaCoreFixture INSTANCE = new RdmaCoreFixture();

    private RdmaCoreDevice device;
    private InetAddress address;

    private RdmaCoreFixture() {
    }

    /** {@return the device, or aborts (skips) the calling test saying why there is none} */
    public static RdmaCoreDevice requireDevice() {
        String name = System.getProperty(DEVICE_PROPERTY);
        Assumptions.assumeTrue(name != null && !name.isEmpty(), "skipped: needs an rdma-core device; run with -D"
                + DEVICE_PROPERTY + "=rxe0 (or siw0, or a NIC) on a host that has one (interop/rdmacore-tck.sh"
                + " does in the interop guests)");
        RdmaCoreProvider p = new RdmaCoreProvider();
        String why = p.unavailableReason();
        Assumptions.assumeTrue(why == null, () -> "skipped: " + name + " asked for, but " + why);
        for (Device d : p.devices()) {
            if (d.name().equals(name)) {
                return (RdmaCoreDevice) d;
            }
        }
        Assumptions.abort("skipped: rdma-core lists no device " + name + " (it lists " + p.devices() + ")");
        return null;
    }

    @Override
    public synchronized Device device() {
        if (device == null) {
            device = requireDevice();
        }
        return device; // on iWARP, connectionManager() is rdma_cm (librdmacm): the kernel's iWARP CM connects the QPs
    }

    /**
     * {@return the GID a peer reaches {@code ctx} by: on RoCE the fixture's address (an IPv4-mapped GID), on iWARP the
     * port's GID 0 (siw's is its interface's MAC address, not an IP address)}
     */
    @Override
    public Gid gid(io.jrdma.verbs.DeviceContext ctx) {
        if (device().transport() == Transport.IWARP) {
            return ctx.queryPort().gids().get(0);
        }
        return super.gid(ctx);
    }

    @Override
    public synchronized InetAddress address() {
        if (address == null) {
            address = findAddress(); // once: a thousand-QP test asks for every QP
        }
        return address;
    }

    private InetAddress findAddress() {
        String given = System.getProperty(ADDRESS_PROPERTY);
        try {
            if (given != null && !given.isEmpty()) {
                return InetAddress.getByName(given);
            }
            InetAddress a = ipv4Of(device());
            if (a != null) {
                return a;
            }
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException(ADDRESS_PROPERTY + "=" + given + ": " + e.getMessage(), e);
        }
        Assumptions.abort("skipped: " + device().name() + " has no IPv4 address found; give -D" + ADDRESS_PROPERTY);
        return null;
    }

    /**
     * {@return the device's first IPv4 address, or null: its first IPv4-mapped GID (RoCE), else (iWARP, whose GID is
     * the interface's MAC address padded with zeros, as siw's) the first IPv4 address of the interface with that MAC}
     *
     * @param device an rdma-core device
     */
    public static InetAddress ipv4Of(Device device) {
        for (Gid g : device.gids()) {
            if (g.toInetAddress() instanceof Inet4Address a) {
                return a;
            }
        }
        try {
            for (Gid g : device.gids()) {
                byte[] mac = java.util.Arrays.copyOf(g.raw(), 6);
                for (java.net.NetworkInterface nif : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
                    if (java.util.Arrays.equals(mac, nif.getHardwareAddress())) {
                        for (InetAddress a : java.util.Collections.list(nif.getInetAddresses())) {
                            if (a instanceof Inet4Address) {
                                return a;
                            }
                        }
                    }
                }
            }
        } catch (java.net.SocketException e) {
            return null;
        }
        return null;
    }

    /** {@code vendor_id} of Linux rxe ({@code RXE_VENDOR_ID} in the kernel's rxe_param.h). */
    static final int RXE_VENDOR_ID = 0xFFFFFF;

    /** {@code vendor_id} of Linux siw ({@code SIW_VENDOR_ID} in the kernel's siw_main.c, ASCII "bmt"). */
    static final int SIW_VENDOR_ID = 0x626d74;

    private Integer vendor;

    private synchronized int vendor() {
        if (vendor == null) {
            try (io.jrdma.verbs.DeviceContext c = device().open()) {
                vendor = c.queryDevice().vendorId();
            }
        }
        return vendor;
    }

    /** {@return true when the device is Linux rxe (its vendor id), asked once} */
    private boolean rxe() {
        return vendor() == RXE_VENDOR_ID;
    }

    /** {@return true when the device is Linux siw (its vendor id)} */
    private boolean siw() {
        return vendor() == SIW_VENDOR_ID;
    }

    /**
     * What rdma-core devices do differently from the TCK's defaults: two things libibverbs itself lacks, for
     * every device, and what Linux rxe (kernel 6.1, the interop guests') was seen doing on 2026-11-26; each
     * reason says which. docs/rdmacore-design.md has the table of these decisions.
     */
    @Override
    public Optional<String> deviation(Deviation d) {
        String why = switch (d) {
            case NO_REMOTELY_INVALIDATABLE_REGIONS -> "libibverbs has no IBV_ACCESS_REMOTE_INVALIDATE: ibv_reg_mr"
                    + " regions cannot be invalidated by a peer (rdma-core devices invalidate memory windows and"
                    + " fast-registered regions only)";
            case NO_SOLICITED_FLAG -> "struct ibv_wc has no solicited flag (enum ibv_wc_flags: GRH, WITH_IMM,"
                    + " IP_CSUM_OK, WITH_INV, TM_*)";
            case REFUSED_INVALIDATION_FAILS_ONLY_THE_RECEIVE -> rxe() ? "Linux rxe acknowledges a SEND_WITH_INV"
                    + " before it tries the invalidation, then completes the receive REM_INV_REQ_ERR and moves its QP"
                    + " to ERROR: the sender never learns it" : siw() ? "Linux siw completes the SEND_WITH_INV once"
                    + " handed to TCP; at the receiver siw_rdmap_complete completes the receive REM_INV_REQ_ERR and"
                    + " leaves the QP connected (its TERMINATE only prepared), which the provider then moves to ERROR"
                    + " (seen on siw0, kernel 6.1)" : null;
            case BAD_LKEY_IS_LOC_QP_OP_ERR -> rxe() ? "Linux rxe completes a WRITE whose SGE has a bad lkey"
                    + " LOC_QP_OP_ERR (its requester fails to copy the payload and reports that status; a READ into a"
                    + " bad lkey is LOC_PROT_ERR)" : siw() ? "Linux siw completes a WRITE whose SGE has a bad lkey"
                    + " LOC_QP_OP_ERR (seen on siw0, kernel 6.1)" : null;
            case LENGTH_ERROR_MAY_BE_REM_OP_ERR -> rxe() ? "Linux rxe's responder takes a SEND that overflows its"
                    + " receive as a malformed receive WQE: NAK Remote Operational Error (REM_OP_ERR at the sender,"
                    + " seen for one-packet and longer SENDs)" : null;
            case NO_SOLICITED_EVENT_FOR_ERRORS -> rxe() ? "Linux rxe notifies a CQ armed solicited-only for"
                    + " completions of packets with the SE bit only, not for error completions" : siw() ? "Linux siw"
                    + " notifies a CQ armed solicited-only for solicited completions only, not for error completions"
                    + " (seen on siw0, kernel 6.1)" : null;
            case NO_LAST_WQE_EVENT -> rxe() ? "Linux rxe (kernel 6.1) raises no QP_LAST_WQE_REACHED when a QP on"
                    + " an SRQ moves to ERROR (none within 10 s on rxe0 at 035a91e; a known gap of rxe's)" : siw()
                    ? "Linux siw raises no QP_LAST_WQE_REACHED (its only QP events are QP_FATAL, QP_ACCESS_ERR and"
                    + " SQ_DRAINED; none within 10 s on siw0 at 035a91e)" : null;
            case NO_IMMEDIATE_DATA -> siw() ? "Linux siw implements iWARP without immediate data (RFC 5040; not"
                    + " RFC 7306's extensions): its post_send refuses SEND_WITH_IMM and RDMA_WRITE_WITH_IMM with EINVAL"
                    + " (seen on siw0, kernel 6.1)" : null;
            case IPV4_TTL_IS_NOT_THE_HOP_LIMIT -> rxe() ? "Linux rxe sends RoCEv2 over IPv4 with TTL 64 whatever the"
                    + " address handle's hop limit (seen in the GRH of a datagram sent with hop limit 9)" : null;
            case SRQ_RECEIVES_CHECKED_AGAINST_THE_QPS_PD -> rxe() ? "Linux rxe's responder checks the lkeys of a"
                    + " receive against the QP's PD, also when the receive comes from an SRQ of another PD" : null;
            case SRQ_RESIZE_CHECKS_THE_ROUNDED_DEPTH -> rxe() ? "Linux rxe rounds an SRQ's depth up to a power of"
                    + " two minus one before it checks that the posted receives fit, and checks a new limit against"
                    + " the current depth (a limit above the new depth was taken)" : null;
            case LESS_PRIVATE_DATA -> device().transport() == Transport.IWARP ? "rdma_cm on iWARP: librdmacm's"
                    + " struct rdma_conn_param has a uint8_t private_data_len (255 at most), an MPA frame carries"
                    + " 256 bytes of private data (Linux siw's MPA_MAX_PRIVDATA) of which MPA revision 2, siw's"
                    + " default, takes 4 for IRD and ORD, and siw_send_mpareqrep adds those 4 to the data's length in"
                    + " a u8: 251 (bisected on siw0, kernel 6.1: 251 connects, 252 is rejected)" : null;
            case NO_COMM_EST_EVENT -> rxe() ? "Linux rxe raises no COMM_EST when a QP in RTR receives its first"
                    + " packet (none came within 10 s on rxe0, the receive itself completed)" : null;
            case WINDOW_BOUNDS_NOT_ENFORCED -> rxe() ? "Linux rxe (kernel 6.1) checks an access through a memory"
                    + " window against its region's bounds, not the window's (a UC WRITE before a type 2 window's"
                    + " start was placed)" : null;
            case TERMINATE_FLUSHES_THE_REFUSED_REQUEST -> siw() ? "Linux siw acts on a TERMINATE by dropping the"
                    + " connection (siw_proc_terminate returns ECONNRESET, no completion is run) and flushing its queues:"
                    + " a READ the peer refused completes WR_FLUSH_ERR, not REM_ACCESS_ERR" : null;
            case REQUESTS_POSTED_AS_THE_QP_FAILS_MAY_BE_LOST -> siw() ? "Linux siw flushes its user-mapped send"
                    + " and receive queues only when the QP moves to ERROR; a request posted after that (its doorbell"
                    + " in ERROR flushes nothing) would never complete; this provider completes such a request"
                    + " WR_FLUSH_ERR itself once it knows of the ERROR (rdma_cm's DISCONNECTED), not in between" : null;
            case RECEIVE_PROTECTION_ERROR_IS_GENERAL_ERR -> siw() ? "Linux siw completes a receive whose SGE fails its"
                    + " lkey check GENERAL_ERR (siw_proc_send sets no status; siw_rdmap_complete turns the error into"
                    + " GENERAL_ERR), raises QP_ACCESS_ERR and terminates the connection" : null;
            case NO_RETRY_COUNTS -> device().transport() == Transport.IWARP ? "iWARP retransmits in TCP: rdma_cm's"
                    + " retry counts do not reach an iWARP QP, and Linux siw's ibv_query_qp reports retry_cnt and"
                    + " rnr_retry 0" : null;
            case A_REJECTED_CONNECT_LEAVES_THE_QP_IN_ERROR -> siw() ? "Linux siw releases the connection end point of"
                    + " a rejected connect with siw_qp_llp_close, which moves the QP to ERROR; siw has no way out of"
                    + " ERROR (a second connect failed CONNECT_ERROR -22 at 035a91e): the provider reports ERROR and"
                    + " refuses a second connect (EINVAL)" : null;
            case NO_RESET_OF_A_CONNECTED_QP -> siw() ? "Linux siw leaves RTS only to ERROR (or closing) and never"
                    + " leaves ERROR: the provider refuses RTS to RESET (EINVAL) rather than report a RESET siw does"
                    + " not make" : null;
            case REMOTE_READ_NOT_ENFORCED -> siw() ? "Linux siw serves an RDMA READ from a region registered"
                    + " without REMOTE_READ: it checks a READ response's source with no access bits"
                    + " (siw_check_sgl_tx(qp->pd, wqe, 0) in siw_qp_tx.c; seen on siw0, kernel 6.1)" : null;
            case LESS_INLINE_DATA -> siw() ? "Linux siw takes at most 80 bytes of inline data (SIW_MAX_INLINE, five"
                    + " 16-byte SGEs' room); the provider creates the QP with the most the device takes" : null;
        };
        return Optional.ofNullable(why);
    }

    @Override
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return rejection instanceof ConnectionRejectedException r ? Optional.of(r.privateData()) : Optional.empty();
    }

    @Override
    public boolean writeCompletionMeansPlaced() {
        return device().transport() != Transport.IWARP;
    }

    @Override
    public boolean remoteErrorsFailTheRequest() {
        return device().transport() != Transport.IWARP;
    }

    /**
     * {@return on iWARP, the longest private data that leaves room for the 16-byte jrdma trailer carrying the QPN
     * within the 251 bytes an iWARP connection carries; on RoCE (jrdma's TCP exchange) all of it}
     */
    @Override
    public int maxPrivateDataWithPeerQpn() {
        return device().transport() == Transport.IWARP ? 235 : super.maxPrivateDataWithPeerQpn();
    }

    /** {@return on iWARP, 251 bytes (declared: LESS_PRIVATE_DATA); on RoCE, jrdma's TCP exchange's} */
    @Override
    public int maxPrivateData() {
        return device().transport() == Transport.IWARP ? 251 : super.maxPrivateData();
    }

    /** {@return {@value #MANY_QPS_PROPERTY} when given (at least 2), else the TCK's 1,000} */
    @Override
    public int manyQps() {
        return Math.max(2, Integer.getInteger(MANY_QPS_PROPERTY, super.manyQps()));
    }

    /** {@return the inline data the provider's QP took ({@code cap.max_inline_data}), which may be less than asked} */
    @Override
    public int maxInlineData(io.jrdma.verbs.QueuePair qp, int asked) {
        return RdmaCoreProvider.maxInlineData(qp);
    }

    @Override
    public boolean hasRnrRetry() {
        return device().transport() != Transport.IWARP;
    }
}

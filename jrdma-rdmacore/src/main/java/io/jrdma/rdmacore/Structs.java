package io.jrdma.rdmacore;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The layouts of the verbs.h structs the object verbs and the data path write and read (LP64, C
 * alignment), written from rdma-core's {@code infiniband/verbs.h} (ABI 1); {@code LayoutTest} pins
 * every offset used here to the value a C compiler gives for that header. Offsets are constants so
 * that the data path reads and writes with plain {@code MemorySegment.get/set} at fixed places.
 */
final class Structs {
    private Structs() {
    }

    private static final MemoryLayout PTHREAD_MUTEX = MemoryLayout.sequenceLayout(40, JAVA_BYTE); // x86-64/aarch64 glibc
    private static final MemoryLayout PTHREAD_COND = MemoryLayout.sequenceLayout(48, JAVA_BYTE);

    /** {@code struct ibv_context_ops}: 32 function pointers, most of them {@code _compat_} placeholders. */
    static final String[] CONTEXT_OPS = {"_compat_query_device", "_compat_query_port", "_compat_alloc_pd",
            "_compat_dealloc_pd", "_compat_reg_mr", "_compat_rereg_mr", "_compat_dereg_mr", "alloc_mw", "bind_mw",
            "dealloc_mw", "_compat_create_cq", "poll_cq", "req_notify_cq", "_compat_cq_event", "_compat_resize_cq",
            "_compat_destroy_cq", "_compat_create_srq", "_compat_modify_srq", "_compat_query_srq",
            "_compat_destroy_srq", "post_srq_recv", "_compat_create_qp", "_compat_query_qp", "_compat_modify_qp",
            "_compat_destroy_qp", "post_send", "post_recv", "_compat_create_ah", "_compat_destroy_ah",
            "_compat_attach_mcast", "_compat_detach_mcast", "_compat_async_event"};

    static final StructLayout IBV_CONTEXT_OPS = MemoryLayout.structLayout(
            java.util.Arrays.stream(CONTEXT_OPS).map(ADDRESS::withName).toArray(MemoryLayout[]::new))
            .withName("ibv_context_ops");

    /** {@code struct ibv_context}: device, ops, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat. 328 bytes. */
    static final StructLayout IBV_CONTEXT = MemoryLayout.structLayout(
            ADDRESS.withName("device"), IBV_CONTEXT_OPS.withName("ops"), JAVA_INT.withName("cmd_fd"),
            JAVA_INT.withName("async_fd"), JAVA_INT.withName("num_comp_vectors"), MemoryLayout.paddingLayout(4),
            PTHREAD_MUTEX.withName("mutex"), ADDRESS.withName("abi_compat")).withName("ibv_context");

    static final long CTX_OPS = off(IBV_CONTEXT, "ops");
    static final long CTX_ASYNC_FD = off(IBV_CONTEXT, "async_fd");

    /** {@return the offset in {@code struct ibv_context} of the function pointer {@code op} of its ops} */
    static long opOffset(String op) {
        return CTX_OPS + off(IBV_CONTEXT_OPS, op);
    }

    /** {@code struct ibv_pd}: context, handle. */
    static final StructLayout IBV_PD = MemoryLayout.structLayout(ADDRESS.withName("context"), JAVA_INT.withName("handle"),
            MemoryLayout.paddingLayout(4)).withName("ibv_pd");

    /** {@code struct ibv_mr}: context, pd, addr, length, handle, lkey, rkey. 48 bytes. */
    static final StructLayout IBV_MR = MemoryLayout.structLayout(ADDRESS.withName("context"), ADDRESS.withName("pd"),
            ADDRESS.withName("addr"), JAVA_LONG.withName("length"), JAVA_INT.withName("handle"),
            JAVA_INT.withName("lkey"), JAVA_INT.withName("rkey"), MemoryLayout.paddingLayout(4)).withName("ibv_mr");
    static final long MR_LKEY = off(IBV_MR, "lkey");
    static final long MR_RKEY = off(IBV_MR, "rkey");

    /** {@code struct ibv_mw}: context, pd, rkey, handle, type. 32 bytes. */
    static final StructLayout IBV_MW = MemoryLayout.structLayout(ADDRESS.withName("context"), ADDRESS.withName("pd"),
            JAVA_INT.withName("rkey"), JAVA_INT.withName("handle"), JAVA_INT.withName("type"),
            MemoryLayout.paddingLayout(4)).withName("ibv_mw");
    static final long MW_RKEY = off(IBV_MW, "rkey");
    static final long MW_TYPE = off(IBV_MW, "type");

    /** {@code struct ibv_mw_bind_info}: mr, addr, length, mw_access_flags. 32 bytes. */
    static final StructLayout IBV_MW_BIND_INFO = MemoryLayout.structLayout(ADDRESS.withName("mr"),
            JAVA_LONG.withName("addr"), JAVA_LONG.withName("length"), JAVA_INT.withName("mw_access_flags"),
            MemoryLayout.paddingLayout(4)).withName("ibv_mw_bind_info");

    /** {@code struct ibv_mw_bind}: wr_id, send_flags, bind_info. 48 bytes. */
    static final StructLayout IBV_MW_BIND = MemoryLayout.structLayout(JAVA_LONG.withName("wr_id"),
            JAVA_INT.withName("send_flags"), MemoryLayout.paddingLayout(4), IBV_MW_BIND_INFO.withName("bind_info"))
            .withName("ibv_mw_bind");
    static final long MWB_WR_ID = off(IBV_MW_BIND, "wr_id");
    static final long MWB_SEND_FLAGS = off(IBV_MW_BIND, "send_flags");
    static final long MWB_MR = off(IBV_MW_BIND, "bind_info.mr");
    static final long MWB_ADDR = off(IBV_MW_BIND, "bind_info.addr");
    static final long MWB_LENGTH = off(IBV_MW_BIND, "bind_info.length");
    static final long MWB_ACCESS = off(IBV_MW_BIND, "bind_info.mw_access_flags");

    /** {@code struct ibv_comp_channel}: context, fd, refcnt. */
    static final StructLayout IBV_COMP_CHANNEL = MemoryLayout.structLayout(ADDRESS.withName("context"),
            JAVA_INT.withName("fd"), JAVA_INT.withName("refcnt")).withName("ibv_comp_channel");
    static final long CHANNEL_FD = off(IBV_COMP_CHANNEL, "fd");

    /** {@code struct ibv_cq}: context, channel, cq_context, handle, cqe, mutex, cond, two event counts. 128 bytes. */
    static final StructLayout IBV_CQ = MemoryLayout.structLayout(ADDRESS.withName("context"),
            ADDRESS.withName("channel"), ADDRESS.withName("cq_context"), JAVA_INT.withName("handle"),
            JAVA_INT.withName("cqe"), PTHREAD_MUTEX.withName("mutex"), PTHREAD_COND.withName("cond"),
            JAVA_INT.withName("comp_events_completed"), JAVA_INT.withName("async_events_completed")).withName("ibv_cq");
    static final long CQ_CQE = off(IBV_CQ, "cqe");

    /** {@code struct ibv_qp}: context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state, qp_type, ... 160 bytes. */
    static final StructLayout IBV_QP = MemoryLayout.structLayout(ADDRESS.withName("context"),
            ADDRESS.withName("qp_context"), ADDRESS.withName("pd"), ADDRESS.withName("send_cq"),
            ADDRESS.withName("recv_cq"), ADDRESS.withName("srq"), JAVA_INT.withName("handle"),
            JAVA_INT.withName("qp_num"), JAVA_INT.withName("state"), JAVA_INT.withName("qp_type"),
            PTHREAD_MUTEX.withName("mutex"), PTHREAD_COND.withName("cond"), JAVA_INT.withName("events_completed"),
            MemoryLayout.paddingLayout(4)).withName("ibv_qp");
    static final long QP_NUM = off(IBV_QP, "qp_num");

    /** {@code struct ibv_qp_cap}: five {@code uint32_t}. */
    static final StructLayout IBV_QP_CAP = MemoryLayout.structLayout(JAVA_INT.withName("max_send_wr"),
            JAVA_INT.withName("max_recv_wr"), JAVA_INT.withName("max_send_sge"), JAVA_INT.withName("max_recv_sge"),
            JAVA_INT.withName("max_inline_data")).withName("ibv_qp_cap");

    /** {@code struct ibv_qp_init_attr}: qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all. 64 bytes. */
    static final StructLayout IBV_QP_INIT_ATTR = MemoryLayout.structLayout(ADDRESS.withName("qp_context"),
            ADDRESS.withName("send_cq"), ADDRESS.withName("recv_cq"), ADDRESS.withName("srq"),
            IBV_QP_CAP.withName("cap"), JAVA_INT.withName("qp_type"), JAVA_INT.withName("sq_sig_all"),
            MemoryLayout.paddingLayout(4)).withName("ibv_qp_init_attr");

    /** {@code struct ibv_global_route}: dgid, flow_label, sgid_index, hop_limit, traffic_class. 24 bytes. */
    static final StructLayout IBV_GLOBAL_ROUTE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("dgid"), JAVA_INT.withName("flow_label"),
            JAVA_BYTE.withName("sgid_index"), JAVA_BYTE.withName("hop_limit"), JAVA_BYTE.withName("traffic_class"),
            MemoryLayout.paddingLayout(1)).withName("ibv_global_route");

    /** {@code struct ibv_ah_attr}: grh, dlid, sl, src_path_bits, static_rate, is_global, port_num. 32 bytes. */
    static final StructLayout IBV_AH_ATTR = MemoryLayout.structLayout(IBV_GLOBAL_ROUTE.withName("grh"),
            JAVA_SHORT.withName("dlid"), JAVA_BYTE.withName("sl"), JAVA_BYTE.withName("src_path_bits"),
            JAVA_BYTE.withName("static_rate"), JAVA_BYTE.withName("is_global"), JAVA_BYTE.withName("port_num"),
            MemoryLayout.paddingLayout(1)).withName("ibv_ah_attr");

    /** {@code struct ibv_qp_attr}. 144 bytes. */
    static final StructLayout IBV_QP_ATTR = MemoryLayout.structLayout(JAVA_INT.withName("qp_state"),
            JAVA_INT.withName("cur_qp_state"), JAVA_INT.withName("path_mtu"), JAVA_INT.withName("path_mig_state"),
            JAVA_INT.withName("qkey"), JAVA_INT.withName("rq_psn"), JAVA_INT.withName("sq_psn"),
            JAVA_INT.withName("dest_qp_num"), JAVA_INT.withName("qp_access_flags"), IBV_QP_CAP.withName("cap"),
            IBV_AH_ATTR.withName("ah_attr"), IBV_AH_ATTR.withName("alt_ah_attr"), JAVA_SHORT.withName("pkey_index"),
            JAVA_SHORT.withName("alt_pkey_index"), JAVA_BYTE.withName("en_sqd_async_notify"),
            JAVA_BYTE.withName("sq_draining"), JAVA_BYTE.withName("max_rd_atomic"),
            JAVA_BYTE.withName("max_dest_rd_atomic"), JAVA_BYTE.withName("min_rnr_timer"),
            JAVA_BYTE.withName("port_num"), JAVA_BYTE.withName("timeout"), JAVA_BYTE.withName("retry_cnt"),
            JAVA_BYTE.withName("rnr_retry"), JAVA_BYTE.withName("alt_port_num"), JAVA_BYTE.withName("alt_timeout"),
            MemoryLayout.paddingLayout(1), JAVA_INT.withName("rate_limit"), MemoryLayout.paddingLayout(4))
            .withName("ibv_qp_attr");

    /** {@code struct ibv_sge}: addr, length, lkey. 16 bytes. */
    static final StructLayout IBV_SGE = MemoryLayout.structLayout(JAVA_LONG.withName("addr"),
            JAVA_INT.withName("length"), JAVA_INT.withName("lkey")).withName("ibv_sge");

    /** {@code struct ibv_send_wr}, with its {@code wr} union as the atomic member (the largest) and {@code bind_mw}. 128 bytes. */
    static final StructLayout IBV_SEND_WR = MemoryLayout.structLayout(JAVA_LONG.withName("wr_id"),
            ADDRESS.withName("next"), ADDRESS.withName("sg_list"), JAVA_INT.withName("num_sge"),
            JAVA_INT.withName("opcode"), JAVA_INT.withName("send_flags"), JAVA_INT.withName("imm_data"),
            MemoryLayout.unionLayout(
                    MemoryLayout.structLayout(JAVA_LONG.withName("remote_addr"), JAVA_INT.withName("rkey"),
                            MemoryLayout.paddingLayout(4)).withName("rdma"),
                    MemoryLayout.structLayout(JAVA_LONG.withName("remote_addr"), JAVA_LONG.withName("compare_add"),
                            JAVA_LONG.withName("swap"), JAVA_INT.withName("rkey"), MemoryLayout.paddingLayout(4))
                            .withName("atomic"),
                    MemoryLayout.structLayout(ADDRESS.withName("ah"), JAVA_INT.withName("remote_qpn"),
                            JAVA_INT.withName("remote_qkey")).withName("ud")).withName("wr"),
            JAVA_INT.withName("xrc_remote_srqn"), MemoryLayout.paddingLayout(4),
            MemoryLayout.structLayout(ADDRESS.withName("mw"), JAVA_INT.withName("rkey"), MemoryLayout.paddingLayout(4),
                    ADDRESS.withName("mr"), JAVA_LONG.withName("addr"), JAVA_LONG.withName("length"),
                    JAVA_INT.withName("mw_access_flags"), MemoryLayout.paddingLayout(4)).withName("bind_mw"))
            .withName("ibv_send_wr");
    static final long SWR_WR_ID = off(IBV_SEND_WR, "wr_id");
    static final long SWR_NEXT = off(IBV_SEND_WR, "next");
    static final long SWR_SG_LIST = off(IBV_SEND_WR, "sg_list");
    static final long SWR_NUM_SGE = off(IBV_SEND_WR, "num_sge");
    static final long SWR_OPCODE = off(IBV_SEND_WR, "opcode");
    static final long SWR_SEND_FLAGS = off(IBV_SEND_WR, "send_flags");
    static final long SWR_IMM = off(IBV_SEND_WR, "imm_data");
    static final long SWR_RDMA_REMOTE_ADDR = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("rdma"), groupElement("remote_addr"));
    static final long SWR_RDMA_RKEY = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("rdma"), groupElement("rkey"));
    static final long SWR_ATOMIC_REMOTE_ADDR = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("atomic"), groupElement("remote_addr"));
    static final long SWR_ATOMIC_COMPARE_ADD = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("atomic"), groupElement("compare_add"));
    static final long SWR_ATOMIC_SWAP = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("atomic"), groupElement("swap"));
    static final long SWR_ATOMIC_RKEY = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("atomic"), groupElement("rkey"));
    static final long SWR_UD_AH = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("ud"), groupElement("ah"));
    static final long SWR_UD_REMOTE_QPN = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("ud"), groupElement("remote_qpn"));
    static final long SWR_UD_REMOTE_QKEY = IBV_SEND_WR.byteOffset(groupElement("wr"), groupElement("ud"), groupElement("remote_qkey"));
    static final long SWR_BIND_MW = IBV_SEND_WR.byteOffset(groupElement("bind_mw"));
    static final long SWR_BIND_MW_MW = IBV_SEND_WR.byteOffset(groupElement("bind_mw"), groupElement("mw"));
    static final long SWR_BIND_MW_RKEY = IBV_SEND_WR.byteOffset(groupElement("bind_mw"), groupElement("rkey"));
    static final long SWR_BIND_MW_MR = IBV_SEND_WR.byteOffset(groupElement("bind_mw"), groupElement("mr"));
    static final long SWR_BIND_MW_ADDR = IBV_SEND_WR.byteOffset(groupElement("bind_mw"), groupElement("addr"));
    static final long SWR_BIND_MW_LENGTH = IBV_SEND_WR.byteOffset(groupElement("bind_mw"), groupElement("length"));
    static final long SWR_BIND_MW_ACCESS = IBV_SEND_WR.byteOffset(groupElement("bind_mw"), groupElement("mw_access_flags"));

    /** {@code struct ibv_recv_wr}: wr_id, next, sg_list, num_sge. 32 bytes. */
    static final StructLayout IBV_RECV_WR = MemoryLayout.structLayout(JAVA_LONG.withName("wr_id"),
            ADDRESS.withName("next"), ADDRESS.withName("sg_list"), JAVA_INT.withName("num_sge"),
            MemoryLayout.paddingLayout(4)).withName("ibv_recv_wr");
    static final long RWR_WR_ID = off(IBV_RECV_WR, "wr_id");
    static final long RWR_SG_LIST = off(IBV_RECV_WR, "sg_list");
    static final long RWR_NUM_SGE = off(IBV_RECV_WR, "num_sge");

    /** {@code struct ibv_wc}. 48 bytes. */
    static final StructLayout IBV_WC = MemoryLayout.structLayout(JAVA_LONG.withName("wr_id"), JAVA_INT.withName("status"),
            JAVA_INT.withName("opcode"), JAVA_INT.withName("vendor_err"), JAVA_INT.withName("byte_len"),
            JAVA_INT.withName("imm_data"), JAVA_INT.withName("qp_num"), JAVA_INT.withName("src_qp"),
            JAVA_INT.withName("wc_flags"), JAVA_SHORT.withName("pkey_index"), JAVA_SHORT.withName("slid"),
            JAVA_BYTE.withName("sl"), JAVA_BYTE.withName("dlid_path_bits"), MemoryLayout.paddingLayout(2))
            .withName("ibv_wc");
    static final long WC_WR_ID = off(IBV_WC, "wr_id");
    static final long WC_STATUS = off(IBV_WC, "status");
    static final long WC_OPCODE = off(IBV_WC, "opcode");
    static final long WC_VENDOR_ERR = off(IBV_WC, "vendor_err");
    static final long WC_BYTE_LEN = off(IBV_WC, "byte_len");
    static final long WC_IMM = off(IBV_WC, "imm_data");
    static final long WC_QP_NUM = off(IBV_WC, "qp_num");
    static final long WC_SRC_QP = off(IBV_WC, "src_qp");
    static final long WC_FLAGS = off(IBV_WC, "wc_flags");
    static final long WC_PKEY_INDEX = off(IBV_WC, "pkey_index");
    static final long WC_SLID = off(IBV_WC, "slid");
    static final long WC_SL = off(IBV_WC, "sl");
    static final long WC_DLID_PATH_BITS = off(IBV_WC, "dlid_path_bits");

    /** {@code struct ibv_srq_attr}: max_wr, max_sge, srq_limit. */
    static final StructLayout IBV_SRQ_ATTR = MemoryLayout.structLayout(JAVA_INT.withName("max_wr"),
            JAVA_INT.withName("max_sge"), JAVA_INT.withName("srq_limit")).withName("ibv_srq_attr");

    /** {@code struct ibv_srq_init_attr}: srq_context, attr. 24 bytes. */
    static final StructLayout IBV_SRQ_INIT_ATTR = MemoryLayout.structLayout(ADDRESS.withName("srq_context"),
            IBV_SRQ_ATTR.withName("attr"), MemoryLayout.paddingLayout(4)).withName("ibv_srq_init_attr");

    /** {@code struct ibv_async_event}: the element union (a pointer or the port number), event_type. 16 bytes. */
    static final StructLayout IBV_ASYNC_EVENT = MemoryLayout.structLayout(ADDRESS.withName("element"),
            JAVA_INT.withName("event_type"), MemoryLayout.paddingLayout(4)).withName("ibv_async_event");

    /** {@code struct pollfd}: fd, events, revents. */
    static final StructLayout POLLFD = MemoryLayout.structLayout(JAVA_INT.withName("fd"), JAVA_SHORT.withName("events"),
            JAVA_SHORT.withName("revents")).withName("pollfd");

    /** {@return the byte offset of {@code field} (a top-level field, or a path through nested structs split by dots)} */
    static long off(StructLayout layout, String field) {
        String[] parts = field.split("\\.");
        MemoryLayout.PathElement[] path = new MemoryLayout.PathElement[parts.length];
        for (int i = 0; i < parts.length; i++) {
            path[i] = groupElement(parts[i]);
        }
        return layout.byteOffset(path);
    }
}

package io.jrdma.rdmacore;

import org.junit.jupiter.api.Test;

import java.lang.foreign.StructLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Pins the verbs.h layouts of the object verbs and the data path: every size and offset below is what a C
 * compiler gives for rdma-core 44's {@code infiniband/verbs.h} on x86-64 ({@code sizeof}/{@code offsetof}).
 */
class StructsLayoutTest {
    private static void at(StructLayout l, String field, long expected) {
        assertEquals(expected, Structs.off(l, field), l.name().orElse("?") + "." + field);
    }

    @Test
    void contextAndItsOpsTable() {
        assertEquals(328, Structs.IBV_CONTEXT.byteSize());
        assertEquals(256, Structs.IBV_CONTEXT_OPS.byteSize());
        at(Structs.IBV_CONTEXT, "ops", 8);
        at(Structs.IBV_CONTEXT, "cmd_fd", 264);
        at(Structs.IBV_CONTEXT, "async_fd", 268);
        at(Structs.IBV_CONTEXT, "num_comp_vectors", 272);
        at(Structs.IBV_CONTEXT_OPS, "alloc_mw", 56);
        at(Structs.IBV_CONTEXT_OPS, "bind_mw", 64);
        at(Structs.IBV_CONTEXT_OPS, "dealloc_mw", 72);
        at(Structs.IBV_CONTEXT_OPS, "poll_cq", 88);
        at(Structs.IBV_CONTEXT_OPS, "req_notify_cq", 96);
        at(Structs.IBV_CONTEXT_OPS, "post_srq_recv", 160);
        at(Structs.IBV_CONTEXT_OPS, "post_send", 200);
        at(Structs.IBV_CONTEXT_OPS, "post_recv", 208);
        assertEquals(8 + 200, Structs.opOffset("post_send"));
    }

    @Test
    void objects() {
        assertEquals(16, Structs.IBV_PD.byteSize());
        assertEquals(48, Structs.IBV_MR.byteSize());
        at(Structs.IBV_MR, "addr", 16);
        at(Structs.IBV_MR, "length", 24);
        at(Structs.IBV_MR, "lkey", 36);
        at(Structs.IBV_MR, "rkey", 40);
        assertEquals(32, Structs.IBV_MW.byteSize());
        at(Structs.IBV_MW, "rkey", 16);
        at(Structs.IBV_MW, "type", 24);
        assertEquals(48, Structs.IBV_MW_BIND.byteSize());
        assertEquals(8, Structs.MWB_SEND_FLAGS);
        assertEquals(16, Structs.MWB_MR);
        assertEquals(24, Structs.MWB_ADDR);
        assertEquals(32, Structs.MWB_LENGTH);
        assertEquals(40, Structs.MWB_ACCESS);
        assertEquals(16, Structs.IBV_COMP_CHANNEL.byteSize());
        at(Structs.IBV_COMP_CHANNEL, "fd", 8);
        assertEquals(128, Structs.IBV_CQ.byteSize());
        at(Structs.IBV_CQ, "cq_context", 16);
        at(Structs.IBV_CQ, "cqe", 28);
        assertEquals(160, Structs.IBV_QP.byteSize());
        at(Structs.IBV_QP, "qp_num", 52);
        at(Structs.IBV_QP, "state", 56);
        at(Structs.IBV_QP, "qp_type", 60);
        assertEquals(24, Structs.IBV_SRQ_INIT_ATTR.byteSize());
        at(Structs.IBV_SRQ_INIT_ATTR, "attr", 8);
        assertEquals(16, Structs.IBV_ASYNC_EVENT.byteSize());
        at(Structs.IBV_ASYNC_EVENT, "event_type", 8);
    }

    @Test
    void qpAttributes() {
        assertEquals(20, Structs.IBV_QP_CAP.byteSize());
        assertEquals(64, Structs.IBV_QP_INIT_ATTR.byteSize());
        at(Structs.IBV_QP_INIT_ATTR, "send_cq", 8);
        at(Structs.IBV_QP_INIT_ATTR, "recv_cq", 16);
        at(Structs.IBV_QP_INIT_ATTR, "srq", 24);
        at(Structs.IBV_QP_INIT_ATTR, "cap", 32);
        at(Structs.IBV_QP_INIT_ATTR, "qp_type", 52);
        at(Structs.IBV_QP_INIT_ATTR, "sq_sig_all", 56);
        assertEquals(24, Structs.IBV_GLOBAL_ROUTE.byteSize());
        at(Structs.IBV_GLOBAL_ROUTE, "flow_label", 16);
        at(Structs.IBV_GLOBAL_ROUTE, "sgid_index", 20);
        at(Structs.IBV_GLOBAL_ROUTE, "hop_limit", 21);
        at(Structs.IBV_GLOBAL_ROUTE, "traffic_class", 22);
        assertEquals(32, Structs.IBV_AH_ATTR.byteSize());
        at(Structs.IBV_AH_ATTR, "dlid", 24);
        at(Structs.IBV_AH_ATTR, "sl", 26);
        at(Structs.IBV_AH_ATTR, "static_rate", 28);
        at(Structs.IBV_AH_ATTR, "is_global", 29);
        at(Structs.IBV_AH_ATTR, "port_num", 30);
        assertEquals(144, Structs.IBV_QP_ATTR.byteSize());
        at(Structs.IBV_QP_ATTR, "path_mtu", 8);
        at(Structs.IBV_QP_ATTR, "qkey", 16);
        at(Structs.IBV_QP_ATTR, "rq_psn", 20);
        at(Structs.IBV_QP_ATTR, "sq_psn", 24);
        at(Structs.IBV_QP_ATTR, "dest_qp_num", 28);
        at(Structs.IBV_QP_ATTR, "qp_access_flags", 32);
        at(Structs.IBV_QP_ATTR, "cap", 36);
        at(Structs.IBV_QP_ATTR, "ah_attr", 56);
        at(Structs.IBV_QP_ATTR, "alt_ah_attr", 88);
        at(Structs.IBV_QP_ATTR, "pkey_index", 120);
        at(Structs.IBV_QP_ATTR, "max_rd_atomic", 126);
        at(Structs.IBV_QP_ATTR, "max_dest_rd_atomic", 127);
        at(Structs.IBV_QP_ATTR, "min_rnr_timer", 128);
        at(Structs.IBV_QP_ATTR, "port_num", 129);
        at(Structs.IBV_QP_ATTR, "timeout", 130);
        at(Structs.IBV_QP_ATTR, "retry_cnt", 131);
        at(Structs.IBV_QP_ATTR, "rnr_retry", 132);
        at(Structs.IBV_QP_ATTR, "rate_limit", 136);
    }

    @Test
    void workRequestsAndCompletions() {
        assertEquals(16, Structs.IBV_SGE.byteSize());
        assertEquals(128, Structs.IBV_SEND_WR.byteSize());
        assertEquals(8, Structs.SWR_NEXT);
        assertEquals(16, Structs.SWR_SG_LIST);
        assertEquals(24, Structs.SWR_NUM_SGE);
        assertEquals(28, Structs.SWR_OPCODE);
        assertEquals(32, Structs.SWR_SEND_FLAGS);
        assertEquals(36, Structs.SWR_IMM);
        assertEquals(40, Structs.SWR_RDMA_REMOTE_ADDR);
        assertEquals(48, Structs.SWR_RDMA_RKEY);
        assertEquals(40, Structs.SWR_ATOMIC_REMOTE_ADDR);
        assertEquals(48, Structs.SWR_ATOMIC_COMPARE_ADD);
        assertEquals(56, Structs.SWR_ATOMIC_SWAP);
        assertEquals(64, Structs.SWR_ATOMIC_RKEY);
        assertEquals(40, Structs.SWR_UD_AH);
        assertEquals(48, Structs.SWR_UD_REMOTE_QPN);
        assertEquals(52, Structs.SWR_UD_REMOTE_QKEY);
        assertEquals(80, Structs.SWR_BIND_MW);
        assertEquals(80, Structs.SWR_BIND_MW_MW);
        assertEquals(88, Structs.SWR_BIND_MW_RKEY);
        assertEquals(96, Structs.SWR_BIND_MW_MR);
        assertEquals(104, Structs.SWR_BIND_MW_ADDR);
        assertEquals(112, Structs.SWR_BIND_MW_LENGTH);
        assertEquals(120, Structs.SWR_BIND_MW_ACCESS);
        assertEquals(32, Structs.IBV_RECV_WR.byteSize());
        assertEquals(16, Structs.RWR_SG_LIST);
        assertEquals(24, Structs.RWR_NUM_SGE);
        assertEquals(48, Structs.IBV_WC.byteSize());
        assertEquals(8, Structs.WC_STATUS);
        assertEquals(12, Structs.WC_OPCODE);
        assertEquals(16, Structs.WC_VENDOR_ERR);
        assertEquals(20, Structs.WC_BYTE_LEN);
        assertEquals(24, Structs.WC_IMM);
        assertEquals(28, Structs.WC_QP_NUM);
        assertEquals(32, Structs.WC_SRC_QP);
        assertEquals(36, Structs.WC_FLAGS);
        assertEquals(40, Structs.WC_PKEY_INDEX);
        assertEquals(42, Structs.WC_SLID);
        assertEquals(44, Structs.WC_SL);
        assertEquals(45, Structs.WC_DLID_PATH_BITS);
    }

    @Test
    void everyObjectVerbIsBoundAtItsVersion() {
        LibIbverbs lib = LibIbverbs.load(LibIbverbs.DEFAULT_LIBRARY);
        org.junit.jupiter.api.Assumptions.assumeTrue(lib.version() != null, "no libibverbs.so.1 here");
        var lookup = java.lang.foreign.SymbolLookup.libraryLookup(LibIbverbs.DEFAULT_LIBRARY, java.lang.foreign.Arena.global());
        for (var e : IbvVerbs.SYMBOLS.entrySet()) {
            assertEquals(null, LibIbverbs.symbolVersionMismatch(LibIbverbs.DEFAULT_LIBRARY, e.getKey(), e.getValue(),
                    lookup.find(e.getKey()).orElseThrow()), e.getKey());
        }
        assertEquals(null, IbvVerbs.bind(LibIbverbs.DEFAULT_LIBRARY, lookup).reason());
    }
}

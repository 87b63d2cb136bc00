package io.jrdma.rdmacore;

import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the provider translates without a device: {@code struct ibv_wc} into {@link WorkCompletion}, and the missing attributes it names. */
class TranslationTest {
    @Test
    void aWorkCompletionIsReadFromItsVerbsHPlaces() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment wc = a.allocate(Structs.IBV_WC);
            wc.set(JAVA_LONG, 0, 0x8000_0000_0000_0001L);
            wc.set(JAVA_INT, 8, 10); // IBV_WC_REM_ACCESS_ERR
            wc.set(JAVA_INT, 12, RdmaCoreCq.IBV_WC_RECV_RDMA_WITH_IMM);
            wc.set(JAVA_INT, 16, 0x33);
            wc.set(JAVA_INT, 20, 4096);
            wc.set(JAVA_BYTE, 24, (byte) 0x12); // __be32 imm_data 0x12345678 as it is in memory
            wc.set(JAVA_BYTE, 25, (byte) 0x34);
            wc.set(JAVA_BYTE, 26, (byte) 0x56);
            wc.set(JAVA_BYTE, 27, (byte) 0x78);
            wc.set(JAVA_INT, 28, 0x11);
            wc.set(JAVA_INT, 32, 0x22);
            wc.set(JAVA_INT, 36, 1 | 2 | 4); // GRH | WITH_IMM | IP_CSUM_OK
            wc.set(JAVA_SHORT, 40, (short) 3);
            wc.set(JAVA_BYTE, 44, (byte) 5);
            WorkCompletion out = new WorkCompletion();
            RdmaCoreCq.decode(wc, 0, out, WorkCompletion.GRH | WorkCompletion.WITH_IMM | WorkCompletion.WITH_INV, null);
            assertEquals(0x8000_0000_0000_0001L, out.wrId());
            assertEquals(WcStatus.REM_ACCESS_ERR, out.status());
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, out.opcode());
            assertEquals(0x33, out.vendorErr());
            assertEquals(4096, out.byteLen());
            assertEquals(0x12345678, out.imm(), "imm_data is big-endian in memory: the value is the wire's");
            assertEquals(0x11, out.qpNum());
            assertEquals(0x22, out.srcQp());
            assertTrue(out.hasGrh() && out.hasImm());
            assertEquals(WorkCompletion.GRH | WorkCompletion.WITH_IMM, out.flags(), "IP_CSUM_OK is not passed on");
            assertEquals(3, out.pkeyIndex());
            assertEquals(5, out.sl());
            // a CQ without UD QPs drops the GRH flag rxe sets on RC/UC receives; an invalidation's rkey is host order
            wc.set(JAVA_INT, 12, RdmaCoreCq.IBV_WC_RECV);
            wc.set(JAVA_INT, 36, 1 | 8);
            wc.set(JAVA_INT, 24, 0xabcd);
            RdmaCoreCq.decode(wc, 0, out, WorkCompletion.WITH_IMM | WorkCompletion.WITH_INV, null);
            assertFalse(out.hasGrh());
            assertEquals(0xabcd, out.invalidatedRkey());
            assertEquals(WorkCompletion.WITH_INV, out.flags());
            // Linux rxe hands the kernel's IB_WC_WITH_INVALIDATE (1 << 2, libibverbs' IP_CSUM_OK): read as WITH_INV
            wc.set(JAVA_INT, 36, 4);
            wc.set(JAVA_INT, 24, 0x1234);
            RdmaCoreCq.decode(wc, 0, out, WorkCompletion.WITH_IMM | WorkCompletion.WITH_INV, null, true);
            assertEquals(WorkCompletion.WITH_INV, out.flags(), "rxe's invalidation flag");
            assertEquals(0x1234, out.invalidatedRkey());
            RdmaCoreCq.decode(wc, 0, out, WorkCompletion.WITH_IMM | WorkCompletion.WITH_INV, null, false);
            assertEquals(0, out.flags(), "on other devices bit 2 is IP_CSUM_OK, not passed on");
            // a send-side completion carries no flags (rxe sets WITH_IMM on a SEND_WITH_IMM's own completion)
            wc.set(JAVA_INT, 12, 0);
            wc.set(JAVA_INT, 36, 2);
            RdmaCoreCq.decode(wc, 0, out, WorkCompletion.GRH | WorkCompletion.WITH_IMM | WorkCompletion.WITH_INV, null);
            assertEquals(WcOpcode.SEND, out.opcode());
            assertEquals(0, out.flags());
            assertEquals(0, out.imm());
            wc.set(JAVA_INT, 12, RdmaCoreCq.IBV_WC_RECV);
            wc.set(JAVA_INT, 8, 99); // a status this API does not know
            RdmaCoreCq.decode(wc, 0, out, 0, null);
            assertEquals(WcOpcode.RECV, out.opcode());
            assertEquals(WcStatus.GENERAL_ERR, out.status());
        }
    }

    @Test
    void aRefusedTransitionNamesTheRequiredAttributesItLacks() {
        assertEquals("IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT",
                RdmaCoreQp.missing(QpType.RC, QpState.RESET, QpState.INIT, QpAttr.STATE));
        assertEquals("IBV_QP_QKEY", RdmaCoreQp.missing(QpType.UD, QpState.RESET, QpState.INIT,
                QpAttr.STATE | QpAttr.PKEY_INDEX | QpAttr.PORT));
        assertEquals("IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_RQ_PSN, IBV_QP_MIN_RNR_TIMER, IBV_QP_MAX_DEST_RD_ATOMIC,"
                + " IBV_QP_DEST_QPN", RdmaCoreQp.missing(QpType.RC, QpState.INIT, QpState.RTR, QpAttr.STATE));
        assertEquals("IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_RQ_PSN, IBV_QP_DEST_QPN",
                RdmaCoreQp.missing(QpType.UC, QpState.INIT, QpState.RTR, QpAttr.STATE));
        assertEquals("IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_SQ_PSN",
                RdmaCoreQp.missing(QpType.RC, QpState.RTR, QpState.RTS, QpAttr.STATE));
        assertEquals("", RdmaCoreQp.missing(QpType.RC, QpState.RESET, QpState.RTS, QpAttr.STATE),
                "a transition the state machine forbids has no required attributes to name");
    }
}

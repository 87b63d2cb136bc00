package io.jrdma.engine.core;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.MemorySegment;

/**
 * The work requests a send queue executes locally, without a packet (rxe_req.c's local operations): BIND_MW
 * (rxe_mw.c), REG_MR (rxe_mr.c's fast registration) and LOCAL_INV (rxe's invalidate of a region or a
 * window). A transport's requester calls {@link #execute} when the WQE's turn comes in send-queue order
 * (after a fence, once everything before it completed) and completes it in order. Engine thread;
 * allocation-free.
 */
public final class LocalOps {
    private LocalOps() {
    }

    /** @return true for the opcodes this class executes */
    public static boolean isLocal(WrOpcode op) {
        return op == WrOpcode.LOCAL_INV || op == WrOpcode.BIND_MW || op == WrOpcode.REG_MR;
    }

    /**
     * Which local operations a QP type may post, as rxe's work-request opcode table ({@code rxe_wr_opcode_info})
     * has it: BIND_MW on RC and UC (IBA: a window bind is an RC, UC or RD operation; libibverbs' {@code ibv_bind_mw}
     * is a BIND_MW work request), REG_MR and LOCAL_INV on RC only; none on UD. The requester runs them the same way
     * on RC and UC: in send-queue order, without a packet.
     *
     * @param type the QP's type
     * @param op   a local opcode ({@link #isLocal})
     * @return true when {@code type} may post {@code op}
     */
    public static boolean allowedOn(io.jrdma.verbs.QpType type, WrOpcode op) {
        return switch (type) {
            case RC -> true;
            case UC -> op == WrOpcode.BIND_MW;
            default -> false;
        };
    }

    /**
     * Executes a local WQE of {@code qp}.
     *
     * @return -1 on success, else the {@link WcStatus} ordinal to complete it with: MW_BIND_ERR for a bind
     *         rxe refuses, LOC_QP_OP_ERR for a registration or invalidation it refuses (rxe's statuses)
     */
    public static int execute(Qp qp, Wqe w) {
        return switch (w.opcode) {
            case BIND_MW -> bind(qp, w) ? -1 : WcStatus.MW_BIND_ERR.ordinal();
            case REG_MR -> register(qp, w) ? -1 : WcStatus.LOC_QP_OP_ERR.ordinal();
            case LOCAL_INV -> invalidate(qp, w.imm) ? -1 : WcStatus.LOC_QP_OP_ERR.ordinal();
            default -> WcStatus.LOC_QP_OP_ERR.ordinal();
        };
    }

    /**
     * A bind (rxe_check_bind_mw, rxe_do_bind_mw): the window, the region and the QP share a PD; a type 2
     * window is free and the new key keeps its index; the region is live, has MW_BIND and covers the range;
     * write or atomic access through the window needs LOCAL_WRITE on the region. A zero length unbinds a type 1
     * window and is refused for a type 2 one.
     */
    private static boolean bind(Qp qp, Wqe w) {
        Mw mw = w.mw;
        Mr e = mw.entry;
        Mr mr = w.localMr;
        int key = w.localKey;
        if (mw.isClosed() || mw.pd != qp.pd || (key >>> 8) != (e.key >>> 8)) {
            return false;
        }
        boolean type2 = e.kind == Mr.MW_TYPE_2;
        if (type2 && !e.invalidated) {
            return false; // IBA 10.6.7.2.2: a type 2 window is bound only from the free state
        }
        if (w.localLength == 0) {
            if (type2) {
                return false; // o10-37.2.40: a type 2 window is not unbound by a zero-length bind
            }
            e.unbind();
            e.key = key;
            return true;
        }
        int access = w.localAccess;
        if (mr == null || mr.isWindow() || mr.isClosed() || mr.invalidated || mr.pd != qp.pd
                || (mr.access & Access.MW_BIND) == 0
                || (access & ~(Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0
                || (access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0 && (mr.access & Access.LOCAL_WRITE) == 0
                || w.localLength < 0 || !mr.permits(qp.pd, 0, w.localAddr, w.localLength)) {
            return false;
        }
        e.unbind(); // a type 1 window re-bound leaves its old region
        e.segment = mr.segment;
        e.address = mr.address;
        e.length = mr.length;
        e.lo = w.localAddr;
        e.span = w.localLength;
        e.access = access;
        e.boundQpn = type2 ? qp.qpn : -1;
        e.parent = mr;
        mr.windows++;
        e.key = key;
        e.invalidated = false;
        if (type2) {
            mw.rkey(key);
        }
        return true;
    }

    /**
     * A fast registration (rxe_reg_fast_mr): a free region of allocMr in the QP's PD, a key with its index,
     * a segment no longer than the region's maximum. The segment's address is the region's address.
     */
    private static boolean register(Qp qp, Wqe w) {
        Mr mr = w.localMr;
        int key = w.localKey;
        if (mr.isClosed() || mr.pd != qp.pd || !mr.invalidated || (key >>> 8) != (mr.key >>> 8)
                || w.localSegment.byteSize() > mr.maxLength
                || (w.localAccess & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0
                        && (w.localAccess & Access.LOCAL_WRITE) == 0) {
            return false;
        }
        MemorySegment seg = w.localSegment;
        if (mr.segment.address() != seg.address() || mr.segment.byteSize() != seg.byteSize()
                || !mr.segment.scope().equals(seg.scope())) {
            mr.views = null; // soft-iWARP's views were of another mapping (the same one again keeps them)
        }
        mr.segment = seg;
        mr.address = w.localSegment.address();
        mr.length = w.localSegment.byteSize();
        mr.lo = mr.address;
        mr.span = mr.length;
        mr.access = w.localAccess;
        mr.key = key;
        mr.invalidated = false;
        return true;
    }

    /**
     * A LOCAL_INV (rxe_invalidate_mr, rxe_invalidate_mw): the exact key of a fast-registration region of the
     * QP's PD with no window bound to it, or of a type 2 window of the QP's PD; invalidating an invalid one
     * again is allowed. A registered region or a type 1 window cannot be invalidated.
     */
    private static boolean invalidate(Qp qp, int key) {
        Mr m = qp.context.keys.lookupAny(key);
        if (m == null || m.pd != qp.pd) {
            return false;
        }
        if (m.kind == Mr.FAST_REG && m.windows == 0) {
            m.invalidated = true;
            return true;
        }
        if (m.kind == Mr.MW_TYPE_2) {
            m.unbind();
            return true;
        }
        return false;
    }

    /**
     * {@return {@code b} with the memory-management capabilities a transport has: {@code caps} (DeviceCap flags:
     * MEM_MGT_EXTENSIONS, MEM_WINDOW...) added to its flags and {@code maxMw} windows}
     *
     * @param b      the attributes so far
     * @param caps   the flags to add
     * @param maxMw  memory windows per context (0: none)
     */
    public static io.jrdma.verbs.DeviceAttr withMemoryManagement(io.jrdma.verbs.DeviceAttr b, int caps, int maxMw) {
        return new io.jrdma.verbs.DeviceAttr(b.fwVer(), b.nodeGuid(), b.sysImageGuid(), b.maxMrSize(), b.pageSizeCap(),
                b.vendorId(), b.vendorPartId(), b.hwVer(), b.maxQp(), b.maxQpWr(), b.deviceCapFlags() | caps, b.maxSge(),
                b.maxSgeRd(), b.maxCq(), b.maxCqe(), b.maxMr(), b.maxPd(), b.maxQpRdAtom(), b.maxResRdAtom(),
                b.maxQpInitRdAtom(), b.atomicCap(), maxMw, b.maxAh(), b.maxSrq(), b.maxSrqWr(), b.maxSrqSge(),
                b.maxPkeys(), b.physPortCnt(), b.qpTypes());
    }
}

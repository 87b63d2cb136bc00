package io.jrdma.verbs;

import java.util.Set;

/**
 * The attributes and limits of a device ({@code ibv_device_attr}), as {@link DeviceContext#queryDevice()}
 * reports them: the limits are those the provider really enforces (a create or post beyond one fails).
 * Field names are libibverbs' without underscores; {@link #qpTypes()} is jrdma's addition (libibverbs
 * has no field for it because every InfiniBand device has every type; software providers do not).
 *
 * @param fwVer           firmware version text (for software providers, the provider's version)
 * @param nodeGuid        node GUID
 * @param sysImageGuid    system image GUID
 * @param maxMrSize       the largest region, in bytes
 * @param pageSizeCap     the supported page sizes, one bit per size
 * @param vendorId        IEEE vendor id
 * @param vendorPartId    vendor part id
 * @param hwVer           hardware version
 * @param maxQp           QPs per context
 * @param maxQpWr         work requests per queue of a QP
 * @param deviceCapFlags  a combination of {@link DeviceCap} flags
 * @param maxSge          scatter/gather entries per send or receive request
 * @param maxSgeRd        scatter entries per RDMA READ request
 * @param maxCq           CQs per context
 * @param maxCqe          entries per CQ
 * @param maxMr           memory regions per context
 * @param maxPd           protection domains per context
 * @param maxQpRdAtom     incoming READ/atomic requests a QP holds as responder (the largest {@link QpAttr#maxDestRdAtomic})
 * @param maxResRdAtom    incoming READ/atomic requests the device holds in all
 * @param maxQpInitRdAtom outstanding READ/atomic requests a QP may initiate (the largest {@link QpAttr#maxRdAtomic})
 * @param atomicCap       atomic guarantees
 * @param maxMw           memory windows per context (0: none, with {@link DeviceCap#MEM_WINDOW} clear)
 * @param maxAh           address handles per context (0: no UD)
 * @param maxSrq          SRQs per context (0: none)
 * @param maxSrqWr        receives per SRQ
 * @param maxSrqSge       scatter entries per SRQ receive
 * @param maxPkeys        P_Key table size
 * @param physPortCnt     ports, numbered 1 to this ({@link DeviceContext#queryPort(int)}; jrdma's software devices: 1)
 * @param qpTypes         jrdma: the QP types {@link ProtectionDomain#createQp} accepts
 */
public record DeviceAttr(String fwVer, long nodeGuid, long sysImageGuid, long maxMrSize, long pageSizeCap, int vendorId,
                         int vendorPartId, int hwVer, int maxQp, int maxQpWr, int deviceCapFlags, int maxSge,
                         int maxSgeRd, int maxCq, int maxCqe, int maxMr, int maxPd, int maxQpRdAtom, int maxResRdAtom,
                         int maxQpInitRdAtom, AtomicCap atomicCap, int maxMw, int maxAh, int maxSrq, int maxSrqWr,
                         int maxSrqSge, int maxPkeys, int physPortCnt, Set<QpType> qpTypes) {
    /** Atomic operation guarantees ({@code ibv_atomic_cap}). */
    public enum AtomicCap {
        /** No atomics. */
        NONE,
        /** Atomic between the QPs of this device only. */
        HCA,
        /** Atomic against every other agent, the CPU included. */
        GLOB
    }

    /**
     * Makes the attributes; the QP type set is copied.
     *
     * @throws NullPointerException if a text, the atomic capability or the QP type set is null
     */
    public DeviceAttr {
        java.util.Objects.requireNonNull(fwVer, "fwVer");
        java.util.Objects.requireNonNull(atomicCap, "atomicCap");
        qpTypes = Set.copyOf(qpTypes);
    }

    /**
     * {@return true if every flag of {@code caps} is set in {@link #deviceCapFlags()}}
     *
     * @param caps one or more {@link DeviceCap} flags, OR-ed
     */
    public boolean has(int caps) {
        return (deviceCapFlags & caps) == caps;
    }

    /**
     * {@return true if the device has memory windows of {@code type}: type 1 with {@link DeviceCap#MEM_WINDOW},
     * type 2 with {@link DeviceCap#MEM_WINDOW_TYPE_2A} or {@link DeviceCap#MEM_WINDOW_TYPE_2B}; and
     * {@link #maxMw()} above 0}
     *
     * @param type the window type
     */
    public boolean supportsMw(MwType type) {
        if (maxMw <= 0 || !has(DeviceCap.MEM_WINDOW)) {
            return false;
        }
        return type == MwType.TYPE_1 || (deviceCapFlags & (DeviceCap.MEM_WINDOW_TYPE_2A | DeviceCap.MEM_WINDOW_TYPE_2B)) != 0;
    }

    /** {@return true if the device has shared receive queues ({@link #maxSrq()} above 0)} */
    public boolean supportsSrq() {
        return maxSrq > 0;
    }

    /**
     * {@return true if {@link ProtectionDomain#createQp} accepts {@code type}, and for UD if address handles exist}
     *
     * @param type the QP type
     */
    public boolean supports(QpType type) {
        return qpTypes.contains(type) && (type != QpType.UD || maxAh > 0);
    }
}

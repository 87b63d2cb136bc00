package io.jrdma.verbs;

import java.lang.foreign.MemorySegment;

/** A protection domain ({@code ibv_pd}): MRs and QPs of one PD can reach only each other. */
public interface ProtectionDomain extends AutoCloseable {
    /** {@return the device context it belongs to} */
    DeviceContext context();

    /**
     * Registers native memory ({@code ibv_reg_mr}). The region keeps the segment, so bounds
     * and lifetime are the segment's: deregister before its arena is closed.
     *
     * @param segment a native segment (from an {@link java.lang.foreign.Arena}); heap segments are refused
     * @param access  a combination of {@link Access} flags
     * @return the region, with its keys
     * @throws RdmaException EINVAL for a heap or empty segment, unknown access flags, or
     *                       REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE (as {@code ibv_reg_mr})
     */
    MemoryRegion register(MemorySegment segment, int access);

    /**
     * Creates a queue pair in the RESET state ({@code ibv_create_qp}).
     *
     * @param attr the type, the CQs and the queue sizes
     * @return the new QP
     * @throws RdmaException EOPNOTSUPP for a type the provider lacks ({@link DeviceAttr#qpTypes()}); EINVAL if
     *                       the CQs or the SRQ belong to another device context or PD; ENOMEM if no QP number is free
     */
    QueuePair createQp(QpInitAttr attr);

    /**
     * Creates an address handle ({@code ibv_create_ah}) for UD sends of this PD's QPs.
     *
     * @param attr where the datagrams go
     * @return the new handle
     * @throws RdmaException EOPNOTSUPP from a provider without UD (the default); EINVAL for an sgid index the
     *                       GID table lacks
     */
    default AddressHandle createAh(AhAttr attr) {
        throw Unsupported.of("ProtectionDomain.createAh (ibv_create_ah)", Unsupported.device(context()));
    }

    /**
     * Creates the address handle that answers a received UD message ({@code ibv_create_ah_from_wc}):
     * {@link #createAh} of {@link DeviceContext#initAhFromWc}.
     *
     * @param portNum the port the message came in on (1)
     * @param wc      the completion of a UD receive
     * @param grh     the receive buffer's first 40 bytes
     * @return the new handle
     * @throws RdmaException as {@link DeviceContext#initAhFromWc} and {@link #createAh}
     */
    default AddressHandle createAhFromWc(int portNum, WorkCompletion wc, MemorySegment grh) {
        return createAh(context().initAhFromWc(portNum, wc, grh));
    }

    /**
     * Creates a shared receive queue ({@code ibv_create_srq}).
     *
     * @param attr the depth, the SGEs per receive and the limit
     * @return the new SRQ
     * @throws RdmaException EOPNOTSUPP from a provider without SRQs (the default); EINVAL beyond
     *                       {@link DeviceAttr#maxSrqWr()} or {@link DeviceAttr#maxSrqSge()}
     */
    default SharedReceiveQueue createSrq(SrqInitAttr attr) {
        throw Unsupported.of("ProtectionDomain.createSrq (ibv_create_srq)", Unsupported.device(context()));
    }

    /**
     * Allocates a memory window ({@code ibv_alloc_mw}), unbound: its rkey grants nothing until a bind.
     *
     * @param type type 1 or type 2
     * @return the new window
     * @throws RdmaException EOPNOTSUPP from a provider without windows of that type (the default)
     */
    default MemoryWindow allocMw(MwType type) {
        throw Unsupported.of("ProtectionDomain.allocMw (ibv_alloc_mw, " + type + ")", Unsupported.device(context()));
    }

    /**
     * Allocates a region for fast registration (the kernel verbs' {@code ib_alloc_mr} with
     * {@code IB_MR_TYPE_MEM_REG}): it maps no memory and its keys grant nothing until a
     * {@link WrOpcode#REG_MR} work request ({@link SendWorkRequest#regMr}) maps a segment; LOCAL_INV or a
     * peer's SEND_WITH_INV frees it again for the next REG_MR, whose key must differ in its low byte
     * ({@link MemoryWindow#incRkey}). Until mapped, {@link MemoryRegion#segment()} is empty.
     *
     * @param maxLength the largest segment a REG_MR may map, in bytes
     * @return the new region
     * @throws RdmaException EOPNOTSUPP from a provider without fast registration (the default,
     *                       {@link DeviceCap#MEM_MGT_EXTENSIONS} clear); EINVAL beyond {@link DeviceAttr#maxMrSize()}
     */
    default MemoryRegion allocMr(long maxLength) {
        throw Unsupported.of("ProtectionDomain.allocMr (ib_alloc_mr, fast registration)", Unsupported.device(context()));
    }

    /**
     * Deallocates the PD ({@code ibv_dealloc_pd}).
     *
     * @throws RdmaException EBUSY while memory regions, windows, address handles, SRQs or QPs of it are open:
     *                       close them first
     */
    @Override
    void close();
}

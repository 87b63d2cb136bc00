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
     * @throws RdmaException EOPNOTSUPP for UC and UD (not implemented); EINVAL if the CQs belong to
     *                       another device context; ENOMEM if no QP number is free
     */
    QueuePair createQp(QpInitAttr attr);

    /**
     * Deallocates the PD ({@code ibv_dealloc_pd}).
     *
     * @throws RdmaException EBUSY while memory regions or QPs of it are open: close them first
     */
    @Override
    void close();
}

package io.jrdma.verbs;

import java.lang.foreign.MemorySegment;

/** A protection domain ({@code ibv_pd}): MRs and QPs of one PD can reach only each other. */
public interface ProtectionDomain extends AutoCloseable {
    DeviceContext context();

    /**
     * Registers native memory ({@code ibv_reg_mr}). The region keeps the segment, so bounds
     * and lifetime are the segment's; heap segments are refused.
     *
     * @param segment a native segment
     * @param access  a combination of {@link Access} flags
     */
    MemoryRegion register(MemorySegment segment, int access);

    /** Creates a queue pair in the RESET state. */
    QueuePair createQp(QpInitAttr attr);

    /** Refused with EBUSY while MRs or QPs of this PD exist, as {@code ibv_dealloc_pd}. */
    @Override
    void close();
}

package io.jrdma.verbs;

import java.lang.foreign.MemorySegment;

/**
 * A registered memory region ({@code ibv_mr}). Its virtual address is the segment's native
 * address; remote peers address it by {@link #address()} + offset and {@link #rkey()}.
 */
public interface MemoryRegion extends AutoCloseable {
    /** {@return the protection domain it was registered in} */
    ProtectionDomain pd();

    /** {@return the registered native memory} */
    MemorySegment segment();

    /** {@return the virtual address of the first byte (the segment's native address)} */
    long address();

    /** {@return its length in bytes} */
    long length();

    /** {@return the local key, for this side's scatter/gather entries} */
    int lkey();

    /**
     * {@return the remote key, which a peer needs (with an address inside the region) for RDMA and atomics}
     */
    int rkey();

    /** {@return the access it was registered with, a combination of {@link Access} flags} */
    int access();

    /**
     * Deregisters ({@code ibv_dereg_mr}): the keys stop working at once (requests that use them
     * then fail with a protection or remote access error); the memory is the caller's again.
     */
    @Override
    void close();
}

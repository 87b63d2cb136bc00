package io.jrdma.verbs;

import java.lang.foreign.MemorySegment;

/**
 * A registered memory region ({@code ibv_mr}). Its virtual address is the segment's native
 * address; remote peers address it by {@link #address()} + offset and {@link #rkey()}.
 */
public interface MemoryRegion extends AutoCloseable {
    ProtectionDomain pd();

    MemorySegment segment();

    /** @return the virtual address of the first byte (the segment's native address) */
    long address();

    long length();

    int lkey();

    int rkey();

    int access();

    /** Deregisters: the keys stop working at once; the memory is the caller's again. */
    @Override
    void close();
}

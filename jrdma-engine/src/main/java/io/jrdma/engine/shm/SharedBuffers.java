package io.jrdma.engine.shm;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The buffers {@code allocateBuffer} made in this process: each an anonymous memfd (no name in
 * any file system, close-on-exec) mapped once, shared read-write. Peers reach one by opening
 * {@code /proc/<pid>/fd/<fd>} and mapping it; its identity is its serial, a number this process never gives
 * twice, with the memfd's inode number (which a descriptor number reused after a close does not share, and which
 * the kernel's 32-bit counter of such inodes may give again after a wrap). The arena's
 * closing unmaps and closes it; the kernel frees the memory once the last peer unmapped it too.
 * A process that dies leaves nothing: the descriptors and mappings die with it.
 */
final class SharedBuffers {
    /** One buffer: its mapping, memfd, inode and serial. */
    record Buffer(long address, long size, int fd, long inode, long serial) {
        boolean covers(long addr, long len) {
            return addr >= address && addr - address <= size - len;
        }
    }

    private static final long PAGE = Native.PAGE_SIZE; // the host's: 4 KiB on x86-64, 16 or 64 KiB on some arm64 kernels
    private static final ConcurrentSkipListMap<Long, Buffer> BUFFERS = new ConcurrentSkipListMap<>();
    /** the last serial given: a buffer's identity within this process, never given twice (64 bits) */
    private static final java.util.concurrent.atomic.AtomicLong SERIAL = new java.util.concurrent.atomic.AtomicLong();

    private SharedBuffers() {
    }

    /** @return {@code size} zeroed bytes of a new memfd, aligned to {@code alignment} (at most a page) */
    static MemorySegment allocate(long size, long alignment, Arena arena) {
        if (alignment > PAGE) {
            throw new RdmaException(Errno.EINVAL, "shared-memory buffers are page-aligned; an alignment of "
                    + alignment + " bytes is more than a page (" + PAGE + ")");
        }
        long mapped = (size + PAGE - 1) & -PAGE;
        int fd = Native.memfd("jrdma-shm-buffer", mapped);
        long addr;
        long inode;
        try {
            addr = Native.mmap(fd, mapped);
            inode = Native.inode(fd);
        } catch (RuntimeException e) {
            Native.close(fd);
            throw e;
        }
        Buffer b = new Buffer(addr, mapped, fd, inode, SERIAL.incrementAndGet());
        BUFFERS.put(addr, b);
        try {
            return MemorySegment.ofAddress(addr).reinterpret(size, arena, s -> release(b));
        } catch (RuntimeException | Error e) { // an arena already closed (IllegalStateException), or another thread's
            release(b);
            throw e;
        }
    }

    private static void release(Buffer b) {
        BUFFERS.remove(b.address());
        Native.munmap(b.address(), b.size());
        Native.close(b.fd());
    }

    /** @return the buffer that holds all of {@code [addr, addr + len)}, or null */
    static Buffer find(long addr, long len) {
        Map.Entry<Long, Buffer> e = BUFFERS.floorEntry(addr);
        return e != null && e.getValue().covers(addr, len) ? e.getValue() : null;
    }
}

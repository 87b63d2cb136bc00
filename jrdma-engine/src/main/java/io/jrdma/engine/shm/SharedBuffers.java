package io.jrdma.engine.shm;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

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
    /**
     * The live buffers by address, ascending: replaced whole under {@link #LOCK} when one is made or let go (rare), read
     * with no lock and no allocation by {@link #find}, which registrations and every window bind call (a skip list's
     * lookup boxed the address and made an entry, which escape analysis removed in some compilations only)
     */
    private static volatile Buffer[] sorted = new Buffer[0];
    private static final Object LOCK = new Object();
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
        synchronized (LOCK) {
            Buffer[] a = sorted;
            int at = slot(a, addr) + 1; // after every buffer below addr (a new mapping's address is no live one's)
            Buffer[] c = new Buffer[a.length + 1];
            System.arraycopy(a, 0, c, 0, at);
            c[at] = b;
            System.arraycopy(a, at, c, at + 1, a.length - at);
            sorted = c;
        }
        try {
            return MemorySegment.ofAddress(addr).reinterpret(size, arena, s -> release(b));
        } catch (RuntimeException | Error e) { // an arena already closed (IllegalStateException), or another thread's
            release(b);
            throw e;
        }
    }

    private static void release(Buffer b) {
        synchronized (LOCK) {
            Buffer[] a = sorted;
            int at = slot(a, b.address());
            if (at >= 0 && a[at] == b) {
                Buffer[] c = new Buffer[a.length - 1];
                System.arraycopy(a, 0, c, 0, at);
                System.arraycopy(a, at + 1, c, at, a.length - at - 1);
                sorted = c;
            }
        }
        Native.munmap(b.address(), b.size());
        Native.close(b.fd());
    }

    /** @return the buffer that holds all of {@code [addr, addr + len)}, or null */
    static Buffer find(long addr, long len) {
        Buffer[] a = sorted;
        int at = slot(a, addr);
        return at >= 0 && a[at].covers(addr, len) ? a[at] : null;
    }

    /** @return the index of the last buffer of {@code a} whose address is at most {@code addr} (unsigned), or -1 */
    private static int slot(Buffer[] a, long addr) {
        int lo = 0;
        int hi = a.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(a[mid].address(), addr) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return hi;
    }
}

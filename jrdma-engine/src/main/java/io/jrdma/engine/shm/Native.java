package io.jrdma.engine.shm;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The Linux calls the shared-memory provider makes through the FFM API: {@code memfd_create},
 * {@code ftruncate}, {@code mmap}/{@code munmap}, {@code open} (of {@code /proc/<pid>/fd/<n>}),
 * {@code fstat} (a memfd's inode: the buffer's identity), {@code close}, {@code getpid} and
 * {@code kill} (a peer's liveness), {@code memmove}, and {@code process_vm_writev}/{@code process_vm_readv}. All
 * but the last three are control-path calls: the data path to shared memory maps nothing and makes no system call,
 * {@code memmove} ({@link #move}) is the bulk copy of some WRITEs and READs, a library call, and the cross-memory
 * attach calls ({@link #processVm}) are the WRITEs and READs into memory of a peer's that is not shared (one
 * system call each). {@link #unavailableReason()} says why the provider cannot run here.
 */
final class Native {
    static final int PROT_READ = 1;
    static final int PROT_WRITE = 2;
    static final int MAP_SHARED = 1;
    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;
    static final int MFD_CLOEXEC = 1;
    static final int MFD_ALLOW_SEALING = 2;
    private static final int F_ADD_SEALS = 1033;
    private static final int F_GET_SEALS = 1034;
    static final int F_SEAL_SEAL = 1;
    static final int F_SEAL_SHRINK = 2;
    static final int F_SEAL_GROW = 4;
    /** Linux 5.1: no new writable mapping and no write(2); mappings made before stay writable (the owner's) */
    static final int F_SEAL_FUTURE_WRITE = 0x10;
    static final int ESRCH = 3;
    static final int EPERM = 1;
    static final long MAP_FAILED = -1L;

    private static final String REASON;
    /** the host's page size (sysconf(_SC_PAGESIZE)): shared buffers are mapped on its boundaries and aligned to it */
    static final long PAGE_SIZE;
    private static final MethodHandle MEMFD_CREATE;
    private static final MethodHandle FTRUNCATE;
    private static final MethodHandle FCNTL;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle OPEN;
    private static final MethodHandle FSTAT;
    private static final MethodHandle CLOSE;
    private static final MethodHandle GETPID;
    private static final MethodHandle KILL;
    private static final MethodHandle SYSCALL;
    private static final MethodHandle SYSCALL2;
    private static final MethodHandle POLL;
    private static final MethodHandle MEMMOVE;
    /** process_vm_readv and process_vm_writev (Linux 3.2, glibc 2.15): cross-memory attach, or null */
    private static final MethodHandle VM_READV;
    private static final MethodHandle VM_WRITEV;
    static final int EACCES = 13;
    /** struct iovec: base and length, 16 bytes on x86-64 and AArch64 */
    static final int IOVEC = 16;
    /**
     * The sizes of a one-sided request's bulk copy that {@link #move} does instead of {@link MemorySegment#copy}
     * (inclusive; by default 32 KiB to 128 KiB, where libc's copy measured 1.3-1.6x the JDK's on this project's host
     * and the JDK's was the faster below: docs/shm-performance.md, "MemorySegment.copy against libc's memmove");
     * {@code -Djrdma.shm.memmove=MIN-MAX} in bytes sets them, {@code off} never uses it.
     */
    static final long MOVE_MIN;
    static final long MOVE_MAX;
    private static final long SYS_PIDFD_OPEN = 434; // the same number on x86-64 and AArch64 (Linux 5.3)
    private static final long SYS_MEMBARRIER;
    private static final long MEMBARRIER_CMD_QUERY = 0;
    private static final long MEMBARRIER_CMD_GLOBAL_EXPEDITED = 1 << 1;
    private static final long MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED = 1 << 2;
    private static final long MEMBARRIER_CMD_PRIVATE_EXPEDITED = 1 << 3;
    private static final long MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED = 1 << 4;
    /**
     * This process is registered for {@code membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)} (Linux 4.14): a fence
     * through this process's own running threads, no other's ({@link #privateBarrier}; the engine's biased claim).
     */
    private static final boolean PRIVATE_BARRIER;
    /**
     * This process is registered for {@code membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)} (Linux 4.16): another
     * process's {@link #membarrier} makes each of its running threads execute a full memory barrier. The one-sided
     * operations' own hold rests on it (docs/shm-design.md, "The initiator's own hold"); {@code
     * -Djrdma.shm.ownHold=off} leaves it unregistered and every hold locked, as before.
     */
    private static final boolean ASYMMETRIC;
    /** why {@link #ASYMMETRIC} is false (for jrdma devices -v), or null */
    private static final String ASYMMETRIC_REASON;
    static final short POLLIN = 1;
    private static final long SYS_FUTEX;
    static final int FUTEX_WAIT = 0;
    static final int FUTEX_WAKE = 1;
    private static final StructLayout CALL_STATE;
    private static final VarHandle ERRNO;
    /** struct stat is 144 bytes on x86-64 and 128 on AArch64; st_ino is at offset 8 on both */
    private static final int STAT_SIZE = 256;
    private static final int ST_INO = 8;
    private static final int ST_SIZE = 48;

    static {
        String reason = null;
        MethodHandle fcntl = null;
        MethodHandle memfd = null, ftruncate = null, mmap = null, munmap = null, open = null, fstat = null,
                close = null, getpid = null, kill = null, syscall = null, syscall2 = null, poll = null, memmove = null,
                sysconf = null, vmReadv = null, vmWritev = null;
        StructLayout cs = null;
        VarHandle errno = null;
        String os = System.getProperty("os.name", "");
        String arch = System.getProperty("os.arch", "");
        if (!os.equals("Linux")) {
            reason = "shared memory needs Linux (memfd_create, /proc/<pid>/fd), not " + os;
        } else if (!arch.equals("amd64") && !arch.equals("x86_64") && !arch.equals("aarch64")) {
            reason = "no struct stat layout for " + arch;
        } else if (!Native.class.getModule().isNativeAccessEnabled()) {
            Module me = Native.class.getModule();
            String name = me.isNamed() ? me.getName() : "ALL-UNNAMED";
            reason = "shared memory needs native access (java --enable-native-access=" + name + ")";
        } else {
            try {
                Linker linker = Linker.nativeLinker();
                var libc = linker.defaultLookup();
                cs = Linker.Option.captureStateLayout();
                errno = cs.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
                Linker.Option err = Linker.Option.captureCallState("errno");
                ValueLayout.OfInt i = ValueLayout.JAVA_INT;
                ValueLayout.OfLong l = ValueLayout.JAVA_LONG;
                var p = ValueLayout.ADDRESS;
                memfd = linker.downcallHandle(libc.findOrThrow("memfd_create"), FunctionDescriptor.of(i, p, i), err);
                ftruncate = linker.downcallHandle(libc.findOrThrow("ftruncate"), FunctionDescriptor.of(i, i, l), err);
                fcntl = linker.downcallHandle(libc.findOrThrow("fcntl"), FunctionDescriptor.of(i, i, i, i), err,
                        Linker.Option.firstVariadicArg(2));
                mmap = linker.downcallHandle(libc.findOrThrow("mmap"), FunctionDescriptor.of(l, l, l, i, i, i, l), err);
                munmap = linker.downcallHandle(libc.findOrThrow("munmap"), FunctionDescriptor.of(i, l, l), err);
                open = linker.downcallHandle(libc.findOrThrow("open"), FunctionDescriptor.of(i, p, i, i), err,
                        Linker.Option.firstVariadicArg(2));
                fstat = linker.downcallHandle(libc.findOrThrow("fstat"), FunctionDescriptor.of(i, i, p), err);
                close = linker.downcallHandle(libc.findOrThrow("close"), FunctionDescriptor.of(i, i));
                getpid = linker.downcallHandle(libc.findOrThrow("getpid"), FunctionDescriptor.of(i));
                sysconf = linker.downcallHandle(libc.findOrThrow("sysconf"), FunctionDescriptor.of(l, i));
                kill = linker.downcallHandle(libc.findOrThrow("kill"), FunctionDescriptor.of(i, i, i), err);
                // syscall(SYS_futex, uaddr, op, val, timeout, 0, 0): a shared (not PRIVATE) futex works across processes
                syscall = linker.downcallHandle(libc.findOrThrow("syscall"), FunctionDescriptor.of(l, l, l, i, i, l),
                        Linker.Option.firstVariadicArg(1));
                syscall2 = linker.downcallHandle(libc.findOrThrow("syscall"), FunctionDescriptor.of(l, l, l, l),
                        Linker.Option.firstVariadicArg(1));
                poll = linker.downcallHandle(libc.findOrThrow("poll"), FunctionDescriptor.of(i, p, l, i));
                // memmove(dst, src, n), its result dropped; two more arguments, which memmove never reads, are the
                // segments the addresses lie in: the linker keeps their arenas alive for the call (docs/shm-design.md)
                memmove = linker.downcallHandle(libc.findOrThrow("memmove"), FunctionDescriptor.ofVoid(l, l, l, p, p));
                // process_vm_readv/writev(pid, local iovecs, count, remote iovecs, count, flags): the addresses as
                // longs (the iovecs lie in one scratch segment of the engine's, allocated once)
                // one more argument, which the call never reads: the local segment, kept alive for the call (as memmove's)
                var vm = FunctionDescriptor.of(l, i, l, l, l, l, l, p);
                vmReadv = libc.find("process_vm_readv").map(a -> linker.downcallHandle(a, vm, err)).orElse(null);
                vmWritev = libc.find("process_vm_writev").map(a -> linker.downcallHandle(a, vm, err)).orElse(null);
            } catch (RuntimeException | LinkageError e) {
                reason = "the C library's calls are not reachable through FFM: " + e;
            }
        }
        long[] band = {Long.MAX_VALUE, 0};
        try {
            band = moveBand(System.getProperty("jrdma.shm.memmove", "32768-131072"));
        } catch (IllegalArgumentException e) {
            reason = reason == null ? e.getMessage() : reason; // the provider says so, in jrdma devices -v too
        }
        boolean ownHold = true;
        try {
            ownHold = ownHoldSetting(System.getProperty("jrdma.shm.ownHold", "on"));
        } catch (IllegalArgumentException e) {
            reason = reason == null ? e.getMessage() : reason;
        }
        long page = 4096;
        if (sysconf != null) {
            try { // sysconf(_SC_PAGESIZE) (30 in glibc and musl): mappings start on its boundaries
                long v = (long) sysconf.invokeExact(30);
                if (v >= 4096 && v <= (1L << 30) && Long.bitCount(v) == 1) {
                    page = v;
                }
            } catch (Throwable t) {
                reason = reason == null ? "sysconf(_SC_PAGESIZE) through FFM: " + t : reason;
            }
        }
        PAGE_SIZE = page;
        REASON = reason;
        MEMFD_CREATE = memfd;
        FTRUNCATE = ftruncate;
        FCNTL = fcntl;
        MMAP = mmap;
        MUNMAP = munmap;
        OPEN = open;
        FSTAT = fstat;
        CLOSE = close;
        GETPID = getpid;
        KILL = kill;
        SYSCALL = syscall;
        SYSCALL2 = syscall2;
        POLL = poll;
        MEMMOVE = memmove;
        VM_READV = vmReadv;
        VM_WRITEV = vmWritev;
        MOVE_MIN = memmove == null ? Long.MAX_VALUE : band[0];
        MOVE_MAX = band[1];
        SYS_FUTEX = arch.equals("aarch64") ? 98 : 202;
        SYS_MEMBARRIER = arch.equals("aarch64") ? 283 : 324;
        String why = null;
        if (reason != null) {
            why = reason;
        } else if (!ownHold) {
            why = "-Djrdma.shm.ownHold=off";
        } else {
            try {
                long q = (long) syscall2.invokeExact(SYS_MEMBARRIER, MEMBARRIER_CMD_QUERY, 0L);
                long need = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
                if (q < 0 || (q & need) != need) {
                    why = "the kernel has no membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) (Linux 4.16), or a seccomp filter hides it";
                } else if ((long) syscall2.invokeExact(SYS_MEMBARRIER, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0L) != 0
                        || (long) syscall2.invokeExact(SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0L) != 0) {
                    why = "membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) failed";
                }
            } catch (Throwable t) {
                why = "membarrier through FFM: " + t;
            }
        }
        ASYMMETRIC = why == null;
        ASYMMETRIC_REASON = why;
        boolean privateBarrier = false;
        if (reason == null) {
            try {
                long q = (long) syscall2.invokeExact(SYS_MEMBARRIER, MEMBARRIER_CMD_QUERY, 0L);
                long need = MEMBARRIER_CMD_PRIVATE_EXPEDITED | MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
                privateBarrier = q >= 0 && (q & need) == need
                        && (long) syscall2.invokeExact(SYS_MEMBARRIER, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0L) == 0
                        && (long) syscall2.invokeExact(SYS_MEMBARRIER, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0L) == 0;
            } catch (Throwable t) {
                privateBarrier = false; // no biased claim: every claim a CAS
            }
        }
        PRIVATE_BARRIER = privateBarrier;
        CALL_STATE = cs;
        ERRNO = errno;
    }

    private Native() {
    }

    /** @return {@code -Djrdma.shm.ownHold}'s value: on (the default) or off; anything else is refused */
    static boolean ownHoldSetting(String v) {
        return switch (v) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new IllegalArgumentException("-Djrdma.shm.ownHold=" + v + " is not a setting: give on or off");
        };
    }

    /** @return true when this process takes part in {@link #membarrier}: its one-sided operations may hold by their own word */
    static boolean asymmetric() {
        return ASYMMETRIC;
    }

    /** @return why {@link #asymmetric} is false, or null */
    static String asymmetricReason() {
        return ASYMMETRIC_REASON;
    }

    /**
     * {@code membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)}: when it returns, every running thread of every process
     * registered for it ({@link #asymmetric}) has executed a full memory barrier since it was called, so a store such a
     * thread made before that point is visible here and a load it makes after it sees what this thread stored
     * before the call. Control path only (a withdrawn key, a reset QP): some microseconds.
     */
    static void membarrier() {
        barrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, "MEMBARRIER_CMD_GLOBAL_EXPEDITED");
    }

    /**
     * {@code membarrier(cmd)}, which worked when this process registered for it: a kernel that takes it back breaks
     * the pairing that rests on it (the holds', the claim's), so a failure is an error, not a fallback.
     */
    private static void barrier(long cmd, String name) {
        long r;
        try {
            r = (long) SYSCALL2.invokeExact(SYS_MEMBARRIER, cmd, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (r != 0) {
            throw new IllegalStateException("membarrier(" + name + ") failed after it had worked");
        }
    }

    /** @return true when {@link #privateBarrier} works here */
    static boolean privateBarrierWorks() {
        return PRIVATE_BARRIER;
    }

    /**
     * {@code membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)}: when it returns, every running thread of this process has
     * executed a full memory barrier since it was called (the other side of the engine's biased claim). Some
     * microseconds; a claimer that is not the biased thread pays it.
     */
    static void privateBarrier() {
        barrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, "MEMBARRIER_CMD_PRIVATE_EXPEDITED");
    }

    /** @return why shared memory cannot work on this platform, or null */
    static String unavailableReason() {
        return REASON;
    }

    static void check() {
        if (REASON != null) {
            throw new RdmaException(Errno.EOPNOTSUPP, REASON);
        }
    }

    private static RdmaException fail(String what, int errno) {
        Errno e = errno == 12 ? Errno.ENOMEM : errno == 13 || errno == EPERM ? Errno.EACCES
                : errno == 2 || errno == ESRCH ? Errno.ENOENT : Errno.EIO;
        return new RdmaException(e, what + " failed: errno " + errno);
    }

    /**
     * @return a new memfd of {@code size} bytes (close-on-exec), named {@code name} in /proc/<pid>/fd, sealed at that
     *         size: no process that opens it can shrink it under another's mapping (which would fault, SIGBUS, when
     *         touched) or grow it, and no seal can be added or removed (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL)
     */
    static int memfd(String name, long size) {
        int fd = unsealedMemfd(name, size);
        try {
            seal(fd, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, "sealing a memfd at " + size + " bytes (fcntl F_ADD_SEALS)");
        } catch (RuntimeException e) {
            close(fd);
            throw e;
        }
        return fd;
    }

    /** @return a new memfd of {@code size} bytes (close-on-exec, sealing allowed), not sealed yet; nothing left on failure */
    private static int unsealedMemfd(String name, long size) {
        check();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(CALL_STATE);
            int fd = (int) MEMFD_CREATE.invokeExact(st, a.allocateFrom(name), MFD_CLOEXEC | MFD_ALLOW_SEALING);
            if (fd < 0) {
                throw fail("memfd_create", (int) ERRNO.get(st, 0L));
            }
            if ((int) FTRUNCATE.invokeExact(st, fd, size) != 0) {
                int e = (int) ERRNO.get(st, 0L);
                close(fd);
                throw fail("ftruncate of a memfd to " + size + " bytes", e);
            }
            return fd;
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Adds {@code seals} to memfd {@code fd} ({@code fcntl F_ADD_SEALS}); {@code what} names the step in the error. */
    private static void seal(int fd, int seals, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(CALL_STATE);
            if ((int) FCNTL.invokeExact(st, fd, F_ADD_SEALS, seals) != 0) {
                throw fail(what, (int) ERRNO.get(st, 0L));
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * @return {fd, address}: a new memfd of {@code size} bytes mapped read-write here, then sealed so that only that
     *         mapping writes it: F_SEAL_FUTURE_WRITE (a process that opens it maps it read-only: no writable mapping,
     *         no write(2)), F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL. Throws where the kernel has no
     *         F_SEAL_FUTURE_WRITE (Linux 5.1), with nothing left behind
     */
    static long[] memfdOwnerWrites(String name, long size) {
        int fd = unsealedMemfd(name, size);
        long addr = 0;
        try {
            addr = mmap(fd, size);
            seal(fd, F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL,
                    "sealing a memfd against writes but its owner's (fcntl F_ADD_SEALS F_SEAL_FUTURE_WRITE, Linux 5.1)");
            return new long[] {fd, addr};
        } catch (RuntimeException e) {
            if (addr != 0) {
                munmap(addr, size);
            }
            close(fd);
            throw e;
        }
    }

    /** @return the address of a shared read-only mapping of {@code size} bytes of {@code fd} */
    static long mmapReadOnly(int fd, long size) {
        return mmap(fd, size, PROT_READ);
    }

    /** @return the address of a shared read-write mapping of {@code size} bytes of {@code fd} */
    static long mmap(int fd, long size) {
        return mmap(fd, size, PROT_READ | PROT_WRITE);
    }

    private static long mmap(int fd, long size, int prot) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(CALL_STATE);
            long addr = (long) MMAP.invokeExact(st, 0L, size, prot, MAP_SHARED, fd, 0L);
            if (addr == MAP_FAILED) {
                throw fail("mmap of " + size + " bytes" + (prot == PROT_READ ? " (read-only)" : ""), (int) ERRNO.get(st, 0L));
            }
            return addr;
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static void munmap(long addr, long size) {
        try (Arena a = Arena.ofConfined()) {
            int r = (int) MUNMAP.invokeExact(a.allocate(CALL_STATE), addr, size);
            if (r != 0) {
                throw new IllegalStateException("munmap(0x" + Long.toHexString(addr) + ", " + size + ") failed");
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Opens another process's descriptor through {@code /proc/<pid>/fd/<fd>} (same user): the same memfd. */
    static int openPeerFd(int pid, int fd) {
        String path = "/proc/" + pid + "/fd/" + fd;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(CALL_STATE);
            int r = (int) OPEN.invokeExact(st, a.allocateFrom(path), O_RDWR | O_CLOEXEC, 0);
            if (r < 0) {
                throw fail("open(" + path + ") (the peer's shared memory; is the peer alive and of the same user?)",
                        (int) ERRNO.get(st, 0L));
            }
            return r;
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return the inode number of the file {@code fd} names (a memfd's identity while it lives) */
    static long inode(int fd) {
        return statField(fd, ST_INO);
    }

    /** @return the seals of the file {@code fd} names ({@code fcntl F_GET_SEALS}; 0 for a file that takes none) */
    static int seals(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(CALL_STATE);
            int r = (int) FCNTL.invokeExact(st, fd, F_GET_SEALS, 0);
            return Math.max(r, 0); // EINVAL: a file that is not a memfd, which no one sealed
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return true when {@code fd}'s file cannot shrink (F_SEAL_SHRINK): a mapping of it stays backed */
    static boolean cannotShrink(int fd) {
        return (seals(fd) & F_SEAL_SHRINK) != 0;
    }

    /** @return the size in bytes of the file {@code fd} names (a mapping past its end faults when touched) */
    static long size(int fd) {
        return statField(fd, ST_SIZE);
    }

    /** @return the 8-byte field at {@code at} of {@code fstat(fd)}'s struct stat (x86-64 and AArch64 agree on both) */
    private static long statField(int fd, long at) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(CALL_STATE);
            MemorySegment buf = a.allocate(STAT_SIZE, 8);
            int r = (int) FSTAT.invokeExact(st, fd, buf);
            if (r != 0) {
                throw fail("fstat", (int) ERRNO.get(st, 0L));
            }
            return buf.get(ValueLayout.JAVA_LONG, at);
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static void close(int fd) {
        try {
            int r = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static int getpid() {
        check();
        try {
            return (int) GETPID.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Waits while the int at {@code addr} (in shared memory) holds {@code expected}, at most as long as the
     * {@code struct timespec} at {@code timespec} says; a {@link #futexWake} or a signal ends it early.
     */
    static void futexWait(long addr, int expected, long timespec) {
        try {
            long r = (long) SYSCALL.invokeExact(SYS_FUTEX, addr, FUTEX_WAIT, expected, timespec);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return {min, max} of a {@code jrdma.shm.memmove} setting ("MIN-MAX" in bytes, or "off") */
    static long[] moveBand(String v) {
        if (v.equals("off")) {
            return new long[] {Long.MAX_VALUE, 0};
        }
        int dash = v.indexOf('-');
        try {
            long min = Long.parseLong(v.substring(0, dash).trim());
            long max = Long.parseLong(v.substring(dash + 1).trim());
            if (min >= 0 && max >= min) {
                return new long[] {min, max};
            }
        } catch (RuntimeException e) {
            // reported below
        }
        throw new IllegalArgumentException("-Djrdma.shm.memmove=" + v + ": give MIN-MAX in bytes (e.g. 32768-131072),"
                + " the sizes of a WRITE or READ copied by libc's memmove, or off");
    }

    /** @return whether a bulk copy of {@code n} bytes to or from {@code seg} is {@link #move}'s: in the band, a native segment */
    static boolean moves(long n, MemorySegment seg) {
        return n >= MOVE_MIN && n <= MOVE_MAX && seg.isNative();
    }

    /**
     * The data path (a WRITE's or READ's bulk copy, after its checks): {@code n} bytes from address {@code src} to
     * {@code dst} by libc's {@code memmove}. {@code dstSeg} and {@code srcSeg} are the native segments the addresses
     * lie in: passed along, so that neither arena can close during the copy (a closed one fails the call before it
     * copies, as a {@link MemorySegment#copy} would). No allocation.
     */
    static void move(long dst, long src, long n, MemorySegment dstSeg, MemorySegment srcSeg) {
        try {
            MEMMOVE.invokeExact(dst, src, n, dstSeg, srcSeg);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return true when cross-memory attach ({@code process_vm_readv}/{@code process_vm_writev}) can be called here */
    static boolean crossMemoryAttach() {
        return REASON == null && VM_READV != null && VM_WRITEV != null;
    }

    /**
     * {@code process_vm_writev} ({@code write}) or {@code process_vm_readv}: copies between this process's memory
     * described by {@code lcnt} iovecs at {@code liov} and process {@code pid}'s described by {@code rcnt} at
     * {@code riov}, through the kernel, with no thread of {@code pid} running. No allocation.
     *
     * @param st a segment from {@link #callState}: the errno of a failure
     * @param keep the native segment the local iovecs lie in: passed along (the call never reads it), so that its
     *        arena cannot close during the copy; a closed one fails the call with IllegalStateException first
     * @return the bytes copied (fewer than asked when a remote or local page was not there), or -errno
     */
    static long processVm(boolean write, MemorySegment st, int pid, long liov, long lcnt, long riov, long rcnt,
            MemorySegment keep) {
        long r;
        try {
            r = write ? (long) VM_WRITEV.invokeExact(st, pid, liov, lcnt, riov, rcnt, 0L, keep)
                    : (long) VM_READV.invokeExact(st, pid, liov, lcnt, riov, rcnt, 0L, keep);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        return r >= 0 ? r : -(int) ERRNO.get(st, 0L);
    }

    /** Wakes every waiter on the int at {@code addr}, in any process that maps it. */
    static void futexWake(long addr) {
        try {
            long r = (long) SYSCALL.invokeExact(SYS_FUTEX, addr, FUTEX_WAKE, Integer.MAX_VALUE, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * @return a descriptor that refers to process {@code pid} itself ({@code pidfd_open}), so that its exit is
     *         seen even if the number is reused or the process is a zombie; -1 where the kernel has none
     */
    static int pidfd(int pid) {
        try {
            return (int) (long) SYSCALL2.invokeExact(SYS_PIDFD_OPEN, (long) pid, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * @param pfd an 8-byte {@code struct pollfd} segment, allocated once by the caller
     * @return true once the process of {@code pidfd} has exited ({@code poll} says POLLIN), without waiting
     */
    static boolean exited(int pidfd, MemorySegment pfd) {
        pfd.set(ValueLayout.JAVA_INT, 0, pidfd);
        pfd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        pfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        try {
            int r = (int) POLL.invokeExact(pfd, 1L, 0);
            return r > 0 && (pfd.get(ValueLayout.JAVA_SHORT, 6) & POLLIN) != 0;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return a segment for the errno of {@link #alive}, allocated once per caller */
    static MemorySegment callState(Arena arena) {
        check();
        return arena.allocate(CALL_STATE);
    }

    /**
     * @param st a segment from {@link #callState} (no allocation per call)
     * @return true while process {@code pid} exists ({@code kill(pid, 0)}: ESRCH once it is gone and reaped)
     */
    static boolean alive(int pid, MemorySegment st) {
        try {
            int r = (int) KILL.invokeExact(st, pid, 0);
            return r == 0 || (int) ERRNO.get(st, 0L) != ESRCH;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}

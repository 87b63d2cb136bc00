package io.jrdma.rdmacore;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The few libc functions the connection manager's event watcher needs ({@link FdWatcher}): {@code poll(2)} over
 * several descriptors, {@code eventfd(2)} to wake it, {@code read(2)}, {@code write(2)}, {@code close(2)}, each
 * capturing {@code errno} (the state segment of {@link IbvVerbs#callState}). Bound from the JVM's default lookup
 * (libc), so it needs neither libibverbs nor a device: the watcher is tested on any Linux host.
 */
final class Libc {
    /** {@code POLLIN}, {@code POLLERR}, {@code POLLHUP}, {@code POLLNVAL} of {@code <poll.h>}. */
    static final short POLLIN = 0x1, POLLERR = 0x8, POLLHUP = 0x10, POLLNVAL = 0x20;
    /** {@code EFD_NONBLOCK}, {@code EFD_CLOEXEC} of {@code <sys/eventfd.h>} (Linux: O_NONBLOCK, O_CLOEXEC). */
    static final int EFD_NONBLOCK = 0x800, EFD_CLOEXEC = 0x80000;
    static final int EINTR = 4, EAGAIN = 11;

    private static volatile Libc instance;

    private final Downcall poll, eventfd, read, write, close;

    private Libc() {
        Linker linker = Linker.nativeLinker();
        poll = find(linker, "poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        eventfd = find(linker, "eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
        read = find(linker, "read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
        write = find(linker, "write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
        close = find(linker, "close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    }

    /** Finds {@code name} now (a libc without it fails here); its handle is made on the first call. */
    private static Downcall find(Linker linker, String name, FunctionDescriptor d) {
        MemorySegment sym = linker.defaultLookup().find(name).orElseThrow(() -> new IllegalStateException(
                "this libc has no " + name + "(2): the rdma_cm event watcher needs Linux's"));
        return new Downcall(name, sym, d, Downcall.ERRNO);
    }

    /** {@return the bindings} @throws IllegalStateException when libc lacks one of the functions (not Linux) */
    static Libc get() {
        Libc l = instance;
        if (l == null) {
            synchronized (Libc.class) {
                l = instance;
                if (l == null) {
                    instance = l = new Libc();
                }
            }
        }
        return l;
    }

    /** {@code poll(fds, n, timeoutMs)}: the count of ready descriptors, or -1 with errno in {@code state}. */
    int poll(MemorySegment state, MemorySegment fds, long n, int timeoutMs) {
        try {
            return (int) poll.handle().invokeExact(state, fds, n, timeoutMs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code eventfd(initval, flags)}: a descriptor, or -1 with errno in {@code state}. */
    int eventfd(MemorySegment state, int initval, int flags) {
        try {
            return (int) eventfd.handle().invokeExact(state, initval, flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code read(fd, buf, count)}: the bytes read, or -1 with errno in {@code state}. */
    long read(MemorySegment state, int fd, MemorySegment buf, long count) {
        try {
            return (long) read.handle().invokeExact(state, fd, buf, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code write(fd, buf, count)}: the bytes written, or -1 with errno in {@code state}. */
    long write(MemorySegment state, int fd, MemorySegment buf, long count) {
        try {
            return (long) write.handle().invokeExact(state, fd, buf, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code close(fd)}: 0, or -1 with errno in {@code state}. */
    int close(MemorySegment state, int fd) {
        try {
            return (int) close.handle().invokeExact(state, fd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}

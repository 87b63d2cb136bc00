package io.jrdma.engine.link;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.channels.SocketChannel;

/**
 * Vectored socket I/O for the soft-iWARP engine through the FFM API: one {@code writev} for the
 * headers, region payloads and trailers of many FPDUs, one {@code readv} for the rest of a payload
 * (straight into its region) and the bytes after it (into the stream's buffer). NIO's own
 * {@code write(ByteBuffer[])}/{@code read(ByteBuffer[])} allocate per call for buffers that carry a
 * memory session, which every view of a region does (docs/iwarp-design.md, "Zero copy").
 *
 * <p><b>The socket's descriptor</b> comes from {@code sun.nio.ch.SelChImpl.getFDVal()}, which needs
 * {@code --add-opens java.base/sun.nio.ch=io.jrdma.engine} (or {@code =ALL-UNNAMED} on the class
 * path; the {@code jrdma} launcher and the tests pass it). The channel is only ever closed by the
 * engine thread that also makes these calls (IwarpEngine.closeStream), so the number cannot be
 * closed and reused by another file while a call is under way.
 *
 * <p><b>Keeping regions alive.</b> An iovec holds raw addresses; nothing in it keeps a region's
 * memory from being freed during the call. The calls therefore go through libc's variadic
 * {@code syscall(SYS_writev, fd, iov, iovcnt, keep...)} with the segments of the regions the vector
 * points into as extra {@link MemorySegment} arguments: the linker checks that each is alive and
 * keeps it alive until the call returns (a shared arena cannot be closed meanwhile; see
 * {@link Linker#downcallHandle}); the kernel ignores arguments a system call does not have. At most
 * {@link #KEEP} distinct regions per call: the caller ends a vector before a further one.
 *
 * <p>Only on Linux x86-64 and AArch64 (system call numbers, iovec layout), with native access
 * enabled for this module and the package opened; {@link #unavailableReason()} says why not
 * otherwise, and the engine then uses the single-buffer {@code SocketChannel} calls.
 * {@code -Djrdma.iwarp.writev=false} turns it off. No call allocates: the iovec arrays and the
 * errno scratch are made once per stream ({@link Vec}).
 */
public final class NativeTcp {
    /** {@code -Djrdma.iwarp.writev=false}: the single-buffer SocketChannel calls even where writev would work. */
    public static final String PROPERTY = "jrdma.iwarp.writev";
    /** Regions kept alive per call (extra arguments of {@code syscall}). */
    public static final int KEEP = 4;
    /** struct iovec { void *base; size_t len; } */
    public static final int IOVEC_SIZE = 16;
    public static final int EAGAIN = 11;
    public static final int EINTR = 4;

    private static final String REASON;
    private static final MethodHandle SYSCALL;
    private static final MethodHandle FD_VAL;
    private static final Class<?> SEL_CH_IMPL;
    private static final StructLayout CALL_STATE;
    private static final VarHandle ERRNO;
    private static final long SYS_READV;
    private static final long SYS_WRITEV;

    static {
        String reason = null;
        MethodHandle syscall = null;
        MethodHandle fdVal = null;
        Class<?> selCh = null;
        StructLayout callState = null;
        VarHandle errno = null;
        long readv = -1;
        long writev = -1;
        String os = System.getProperty("os.name", "");
        String arch = System.getProperty("os.arch", "");
        Module me = NativeTcp.class.getModule();
        String name = me.isNamed() ? me.getName() : "ALL-UNNAMED";
        if (!os.equals("Linux")) {
            reason = "not Linux (" + os + ")";
        } else if (!arch.equals("amd64") && !arch.equals("x86_64") && !arch.equals("aarch64")) {
            reason = "no system call numbers for " + arch;
        } else if (!me.isNativeAccessEnabled()) {
            reason = "native access is not enabled for " + name + " (java --enable-native-access=" + name + ")";
        } else if (!Object.class.getModule().isExported("sun.nio.ch", me)) {
            reason = "the socket's descriptor is not reachable (java --add-opens java.base/sun.nio.ch=" + name + ")";
        } else {
            try {
                selCh = Class.forName("sun.nio.ch.SelChImpl");
                fdVal = MethodHandles.lookup().findVirtual(selCh, "getFDVal", MethodType.methodType(int.class));
                Linker linker = Linker.nativeLinker();
                callState = Linker.Option.captureStateLayout();
                errno = callState.varHandle(MemoryLayout.PathElement.groupElement("errno"));
                ValueLayout.OfLong l = ValueLayout.JAVA_LONG;
                var p = ValueLayout.ADDRESS;
                // long syscall(long number, ...): fd, iov, iovcnt as longs (the kernel reads whole registers)
                syscall = linker.downcallHandle(linker.defaultLookup().findOrThrow("syscall"),
                        FunctionDescriptor.of(l, l, l, p, l, p, p, p, p),
                        Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
                boolean x86 = !arch.equals("aarch64");
                readv = x86 ? 19 : 65;
                writev = x86 ? 20 : 66;
            } catch (ReflectiveOperationException | RuntimeException | Error e) {
                reason = "cannot link syscall or reach getFDVal: " + e;
                syscall = null;
            }
        }
        REASON = reason;
        SYSCALL = syscall;
        FD_VAL = fdVal;
        SEL_CH_IMPL = selCh;
        CALL_STATE = callState;
        ERRNO = errno;
        SYS_READV = readv;
        SYS_WRITEV = writev;
    }

    private NativeTcp() {
    }

    /** @return null when streams can use writev/readv, else why not (the property is not looked at) */
    public static String unavailableReason() {
        return REASON;
    }

    /** Read when a context opens: writev/readv can be used and {@code -Djrdma.iwarp.writev=false} is not set. */
    public static boolean enabled() {
        return REASON == null && !"false".equals(System.getProperty(PROPERTY));
    }

    /** Control path: the descriptor of {@code ch}, or -1 when it cannot be had (the caller keeps to NIO). */
    public static int fd(SocketChannel ch) {
        if (REASON != null || !SEL_CH_IMPL.isInstance(ch)) {
            return -1;
        }
        try {
            return (int) FD_VAL.invoke(ch);
        } catch (Throwable t) {
            return -1;
        }
    }

    /**
     * A stream's iovec array (native memory, made once) with the regions its entries point into.
     * Engine thread only.
     */
    public static final class Vec {
        public final MemorySegment iov;
        public final int capacity;
        public final MemorySegment callState;
        public final MemorySegment[] keep = new MemorySegment[KEEP];
        public int count;
        public int keepCount;

        public Vec(int capacity) {
            Arena arena = Arena.ofAuto();
            this.capacity = capacity;
            this.iov = arena.allocate((long) capacity * IOVEC_SIZE, 8);
            this.callState = arena.allocate(CALL_STATE);
            clear();
        }

        public void clear() {
            count = 0;
            keepCount = 0;
            for (int i = 0; i < KEEP; i++) {
                keep[i] = MemorySegment.NULL;
            }
        }

        /**
         * Adds an entry; {@code region} (or null for the stream's own buffers) is kept alive during the call.
         *
         * @return false when the vector is full or would need a further region to keep (nothing added)
         */
        public boolean add(long address, long length, MemorySegment region) {
            if (count == capacity) {
                return false;
            }
            if (region != null) {
                int k = 0;
                while (k < keepCount && keep[k] != region) {
                    k++;
                }
                if (k == keepCount) {
                    if (keepCount == KEEP) {
                        return false;
                    }
                    keep[keepCount++] = region;
                }
            }
            long at = (long) count * IOVEC_SIZE;
            iov.set(ValueLayout.JAVA_LONG, at, address);
            iov.set(ValueLayout.JAVA_LONG, at + 8, length);
            count++;
            return true;
        }

        /** @return bytes written, or -errno (EAGAIN: the socket is full); throws if a kept region was freed */
        public long writev(int fd) {
            return call(SYS_WRITEV, fd);
        }

        /** @return bytes read (0: end of stream), or -errno (EAGAIN: nothing to read); throws if a kept region was freed */
        public long readv(int fd) {
            return call(SYS_READV, fd);
        }

        private long call(long number, int fd) {
            long n;
            try {
                n = (long) SYSCALL.invokeExact(callState, number, (long) fd, iov, (long) count,
                        keep[0], keep[1], keep[2], keep[3]);
            } catch (IllegalStateException | WrongThreadException e) {
                throw e; // a region's memory is gone (or not ours): the caller fails the stream, nothing was read
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            return n >= 0 ? n : -(int) ERRNO.get(callState, 0L);
        }
    }
}

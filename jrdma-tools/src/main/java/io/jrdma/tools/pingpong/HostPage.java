package io.jrdma.tools.pingpong;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The host's page size, which {@code ibv_rc_pingpong} takes from {@code sysconf(_SC_PAGESIZE)} for its buffer's
 * alignment and {@code -c}'s marks (one per page). Linux: {@code sysconf} itself through FFM when this module may call
 * native code ({@code --enable-native-access=io.jrdma.tools}, or {@code ALL-UNNAMED} on the class path), else, with
 * no warning about native access, the value glibc's {@code sysconf} returns, read where glibc reads it: the kernel's
 * {@code AT_PAGESZ} entry in the process's auxiliary vector ({@code /proc/self/auxv}).
 */
public final class HostPage {
    /** Linux's {@code _SC_PAGESIZE} (glibc's and musl's {@code bits/confname.h}). */
    private static final int SC_PAGESIZE = 30;
    /** The auxiliary vector's entry type of the page size ({@code <elf.h>}). */
    private static final long AT_PAGESZ = 6;

    private static volatile int size;

    private HostPage() {
    }

    /**
     * {@return the host's page size in bytes}
     *
     * @throws Pingpong.Failure when neither source answers (not Linux)
     */
    public static int size() {
        int s = size;
        if (s == 0) {
            s = HostPage.class.getModule().isNativeAccessEnabled() ? sysconf() : auxv();
            size = s;
        }
        return s;
    }

    /** {@code sysconf(_SC_PAGESIZE)} through FFM: native access must be enabled for this module. */
    static int sysconf() {
        requireLinux();
        Linker linker = Linker.nativeLinker();
        MemorySegment fn = linker.defaultLookup().find("sysconf").orElseThrow(
                () -> new Pingpong.Failure("cannot tell the host's page size: the C library has no sysconf"));
        MethodHandle h = linker.downcallHandle(fn, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        long v;
        try {
            v = (long) h.invokeExact(SC_PAGESIZE);
        } catch (Throwable e) {
            throw new Pingpong.Failure("cannot tell the host's page size: sysconf(_SC_PAGESIZE) failed: " + e);
        }
        return checked(v, "sysconf(_SC_PAGESIZE)");
    }

    /** The kernel's {@code AT_PAGESZ} from {@code /proc/self/auxv} (pairs of native words: type, value). */
    static int auxv() {
        requireLinux();
        byte[] b;
        try {
            b = Files.readAllBytes(Path.of("/proc/self/auxv"));
        } catch (IOException e) {
            throw new Pingpong.Failure("cannot tell the host's page size: /proc/self/auxv: " + e.getMessage());
        }
        ByteBuffer a = ByteBuffer.wrap(b).order(ByteOrder.nativeOrder());
        boolean wide = ValueLayout.ADDRESS.byteSize() == 8;
        int entry = wide ? 16 : 8;
        for (int at = 0; at + entry <= b.length; at += entry) {
            long type = wide ? a.getLong(at) : Integer.toUnsignedLong(a.getInt(at));
            if (type == AT_PAGESZ) {
                return checked(wide ? a.getLong(at + 8) : Integer.toUnsignedLong(a.getInt(at + 4)), "AT_PAGESZ");
            }
            if (type == 0) {
                break; // AT_NULL ends the vector
            }
        }
        throw new Pingpong.Failure("cannot tell the host's page size: /proc/self/auxv has no AT_PAGESZ");
    }

    private static void requireLinux() {
        if (!System.getProperty("os.name", "").equals("Linux")) {
            throw new Pingpong.Failure("cannot tell the host's page size: jrdma reads it on Linux only, not on "
                    + System.getProperty("os.name"));
        }
    }

    private static int checked(long v, String from) {
        if (v < 1024 || v > (1L << 30) || Long.bitCount(v) != 1) {
            throw new Pingpong.Failure("cannot tell the host's page size: " + from + " says " + v);
        }
        return (int) v;
    }
}

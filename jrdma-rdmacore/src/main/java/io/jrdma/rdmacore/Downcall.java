package io.jrdma.rdmacore;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * One native function of a loaded library: its address (found, and its symbol version checked, when the
 * library is loaded) and its signature; the downcall handle is made on the first call, not at load.
 *
 * <p>Why: making a downcall handle for a new signature makes the JVM generate and load classes for it (the
 * FFM's binding adapters and their lambda forms), a large part of a tool's start when the provider bound all
 * its functions at load (docs/rdmacore-design.md, "Start time"); most programs call a few of them. After its
 * first call a function costs one field read and a null check more than a handle made at load; the data path
 * ({@link ContextOps}) does not go through here.
 *
 * <p>Thread safety: two threads calling a function for the first time at once may both make its handle; either
 * is kept (a {@code MethodHandle} is immutable and published through its final fields), so no lock is taken.
 */
final class Downcall {
    /** Captures {@code errno} into the call-state segment passed as the first argument. */
    static final Linker.Option[] ERRNO = {Linker.Option.captureCallState("errno")};
    static final Linker.Option[] NONE = {};

    private final String name;
    private final MemorySegment address;
    private final FunctionDescriptor descriptor;
    private final Linker.Option[] options;
    private MethodHandle handle;

    /**
     * @param name       the function's name, for messages
     * @param address    its address in the loaded library
     * @param descriptor its C signature
     * @param options    {@link #ERRNO} or {@link #NONE}
     */
    Downcall(String name, MemorySegment address, FunctionDescriptor descriptor, Linker.Option... options) {
        this.name = name;
        this.address = address;
        this.descriptor = descriptor;
        this.options = options;
    }

    /** {@return the downcall handle, made now if this is the first call} */
    MethodHandle handle() {
        MethodHandle h = handle;
        if (h == null) {
            h = Linker.nativeLinker().downcallHandle(address, descriptor, options);
            handle = h;
        }
        return h;
    }

    /** {@return true once the handle has been made (tests: nothing is bound at load)} */
    boolean bound() {
        return handle != null;
    }

    /** {@return the function's name} */
    String name() {
        return name;
    }

    @Override
    public String toString() {
        return name + (bound() ? " (bound)" : " (not bound yet)");
    }
}

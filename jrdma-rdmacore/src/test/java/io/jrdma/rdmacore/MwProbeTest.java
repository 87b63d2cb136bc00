package io.jrdma.rdmacore;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The memory window probe ({@link ContextOps#mwAnswers}) on a {@code struct ibv_context} laid out here, without a
 * device: its op slots point at upcalls that stand for a provider's functions. libibverbs fills the slots a provider
 * leaves empty with stubs (dummy_ops.c: {@code alloc_mw} sets errno EOPNOTSUPP and returns NULL), so the slots are
 * never NULL and the probe, not the NULL check, tells a provider without windows (found in review).
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class MwProbeTest {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MemorySegment ERRNO_LOCATION = LINKER.defaultLookup().find("__errno_location").orElseThrow();
    private static final AtomicInteger ALLOCS = new AtomicInteger(), DEALLOCS = new AtomicInteger();
    private static final MemorySegment WINDOW = MemorySegment.ofAddress(0x5000);

    /** libibverbs' stub: errno EOPNOTSUPP, NULL. */
    static MemorySegment stubAllocMw(MemorySegment pd, int type) {
        ALLOCS.incrementAndGet();
        setErrno(95);
        return MemorySegment.NULL;
    }

    /** A provider with windows: a window (a made-up address), counted. */
    static MemorySegment realAllocMw(MemorySegment pd, int type) {
        ALLOCS.incrementAndGet();
        return WINDOW;
    }

    /** A provider with windows but none left: errno ENOMEM, NULL. */
    static MemorySegment exhaustedAllocMw(MemorySegment pd, int type) {
        ALLOCS.incrementAndGet();
        setErrno(12);
        return MemorySegment.NULL;
    }

    static int deallocMw(MemorySegment mw) {
        assertEquals(WINDOW.address(), mw.address(), "the probe deallocates the window it made");
        DEALLOCS.incrementAndGet();
        return 0;
    }

    static int post(MemorySegment a, MemorySegment b, MemorySegment c) {
        return 95;
    }

    private static void setErrno(int e) {
        try {
            MemorySegment p = (MemorySegment) LINKER.downcallHandle(ERRNO_LOCATION, FunctionDescriptor.of(ADDRESS))
                    .invokeExact();
            p.reinterpret(4).set(JAVA_INT, 0, e);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static MemorySegment upcall(Arena arena, String name, FunctionDescriptor fd) throws Exception {
        var h = MethodHandles.lookup().findStatic(MwProbeTest.class, name, fd.toMethodType());
        return LINKER.upcallStub(h, fd, arena);
    }

    /** A {@code struct ibv_context} whose op slots are set (post_send etc. to a stub), alloc_mw to {@code allocMw}. */
    private static ContextOps ops(Arena arena, String allocMw) throws Exception {
        MemorySegment ctx = arena.allocate(Structs.IBV_CONTEXT);
        MemorySegment post = upcall(arena, "post", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        for (String op : new String[]{"post_send", "post_recv", "post_srq_recv", "poll_cq", "req_notify_cq",
                "bind_mw"}) {
            ctx.set(ADDRESS, Structs.opOffset(op), post); // never called here
        }
        ctx.set(ADDRESS, Structs.opOffset("alloc_mw"), upcall(arena, allocMw,
                FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT)));
        ctx.set(ADDRESS, Structs.opOffset("dealloc_mw"), upcall(arena, "deallocMw",
                FunctionDescriptor.of(JAVA_INT, ADDRESS)));
        return ContextOps.of(ctx, "fake0");
    }

    @Test
    void libibverbsStubForAMissingAllocMwMeansNoWindows() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            ContextOps ops = ops(arena, "stubAllocMw");
            assertTrue(ops.hasMw(), "every slot is set, as libibverbs sets them: the NULL check cannot tell");
            int allocs = ALLOCS.get();
            assertEquals(ContextOps.EOPNOTSUPP, ops.mwAnswers(MemorySegment.ofAddress(0x1000), 1),
                    "the stub's EOPNOTSUPP: no windows");
            assertEquals(allocs + 1, ALLOCS.get(), "one alloc_mw");
        }
    }

    @Test
    void aProviderThatMakesTheWindowHasWindowsAndTheProbesWindowIsFreed() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            ContextOps ops = ops(arena, "realAllocMw");
            int deallocs = DEALLOCS.get();
            assertEquals(0, ops.mwAnswers(MemorySegment.ofAddress(0x1000), 1), "the window was made");
            assertEquals(deallocs + 1, DEALLOCS.get(), "and deallocated at once");
        }
    }

    @Test
    void anotherErrnoIsNotTakenForNoWindows() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            assertEquals(12, ops(arena, "exhaustedAllocMw").mwAnswers(MemorySegment.ofAddress(0x1000), 1),
                    "ENOMEM is the device's failure, not a provider without windows");
        }
    }
}

package io.jrdma.rdmacore;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.VarHandle;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The exported libibverbs functions of the object verbs (PD, MR, completion channel, CQ, QP, AH, SRQ, async
 * events) and libc's {@code poll(2)}, bound through the FFM API. Each call captures {@code errno}: the
 * functions that create return NULL and set it; those that destroy or modify return it (positive) or -1
 * with it set. These are control-path calls: they allocate a little (a confined arena per call where a
 * struct is passed). The data path (post, poll, arm) does not come here: it calls the context's ops
 * table ({@link ContextOps}).
 */
final class IbvVerbs {
    /** Each function with the symbol version whose structs this provider writes (the default version in rdma-core 44). */
    static final Map<String, String> SYMBOLS = new LinkedHashMap<>();

    static {
        for (String s : new String[]{"ibv_alloc_pd", "ibv_dealloc_pd", "ibv_reg_mr", "ibv_dereg_mr", "ibv_create_cq",
                "ibv_destroy_cq", "ibv_get_cq_event", "ibv_ack_cq_events", "ibv_create_qp", "ibv_modify_qp",
                "ibv_query_qp", "ibv_destroy_qp", "ibv_create_ah", "ibv_destroy_ah", "ibv_create_srq", "ibv_modify_srq",
                "ibv_query_srq", "ibv_destroy_srq", "ibv_get_async_event", "ibv_ack_async_event"}) {
            SYMBOLS.put(s, LibIbverbs.SYMBOL_VERSION);
        }
        // rdma-core never gave these two a new version: IBVERBS_1.0 is their only (default) one
        SYMBOLS.put("ibv_create_comp_channel", "IBVERBS_1.0");
        SYMBOLS.put("ibv_destroy_comp_channel", "IBVERBS_1.0");
    }

    private static final FunctionDescriptor[] DESCRIPTORS = {
            FunctionDescriptor.of(ADDRESS, ADDRESS), // ibv_alloc_pd(ctx)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_dealloc_pd(pd)
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT), // ibv_reg_mr(pd, addr, size_t, int)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_dereg_mr(mr)
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), // ibv_create_cq(ctx, cqe, cq_context, channel, comp_vector)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_destroy_cq(cq)
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), // ibv_get_cq_event(channel, cq **, void **)
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT), // ibv_ack_cq_events(cq, unsigned)
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), // ibv_create_qp(pd, init_attr *)
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), // ibv_modify_qp(qp, attr *, mask)
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS), // ibv_query_qp(qp, attr *, mask, init_attr *)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_destroy_qp(qp)
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), // ibv_create_ah(pd, ah_attr *)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_destroy_ah(ah)
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), // ibv_create_srq(pd, srq_init_attr *)
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), // ibv_modify_srq(srq, srq_attr *, mask)
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), // ibv_query_srq(srq, srq_attr *)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_destroy_srq(srq)
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), // ibv_get_async_event(ctx, event *)
            FunctionDescriptor.ofVoid(ADDRESS), // ibv_ack_async_event(event *)
            FunctionDescriptor.of(ADDRESS, ADDRESS), // ibv_create_comp_channel(ctx)
            FunctionDescriptor.of(JAVA_INT, ADDRESS), // ibv_destroy_comp_channel(channel)
    };

    static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(groupElement("errno"));

    private final Downcall allocPd, deallocPd, regMr, deregMr, createCq, destroyCq, getCqEvent, ackCqEvents,
            createQp, modifyQp, queryQp, destroyQp, createAh, destroyAh, createSrq, modifySrq, querySrq, destroySrq,
            getAsyncEvent, ackAsyncEvent, createCompChannel, destroyCompChannel, poll;

    private IbvVerbs(Downcall[] h, Downcall poll) {
        int i = 0;
        allocPd = h[i++];
        deallocPd = h[i++];
        regMr = h[i++];
        deregMr = h[i++];
        createCq = h[i++];
        destroyCq = h[i++];
        getCqEvent = h[i++];
        ackCqEvents = h[i++];
        createQp = h[i++];
        modifyQp = h[i++];
        queryQp = h[i++];
        destroyQp = h[i++];
        createAh = h[i++];
        destroyAh = h[i++];
        createSrq = h[i++];
        modifySrq = h[i++];
        querySrq = h[i++];
        destroySrq = h[i++];
        getAsyncEvent = h[i++];
        ackAsyncEvent = h[i++];
        createCompChannel = h[i++];
        destroyCompChannel = h[i];
        this.poll = poll;
    }

    /** What {@link #bind} gives: the bindings, or why there are none. */
    record Bound(IbvVerbs verbs, String reason) {
    }

    /**
     * Binds every function of {@link #SYMBOLS}, checking each is the version the layouts belong to.
     *
     * @param library the library's name, for messages and {@code dlvsym}
     * @param lookup  its symbols
     * @return the bindings, or the reason (a missing symbol, a wrong version)
     */
    static Bound bind(String library, SymbolLookup lookup) {
        Linker linker = Linker.nativeLinker();
        Downcall[] h = new Downcall[SYMBOLS.size()];
        int i = 0;
        for (Map.Entry<String, String> e : SYMBOLS.entrySet()) {
            Optional<MemorySegment> addr = lookup.find(e.getKey());
            if (addr.isEmpty()) {
                return new Bound(null, library + " has no symbol " + e.getKey()
                        + ": it is not rdma-core's libibverbs, or one too old for this provider");
            }
            String wrong = LibIbverbs.symbolVersionMismatch(library, e.getKey(), e.getValue(), addr.get());
            if (wrong != null) {
                return new Bound(null, wrong);
            }
            h[i] = new Downcall(e.getKey(), addr.get(), DESCRIPTORS[i], Downcall.ERRNO); // bound on first use
            i++;
        }
        MemorySegment pollSym = linker.defaultLookup().find("poll").orElse(null);
        if (pollSym == null) {
            return new Bound(null, "this libc has no poll(2)");
        }
        // int poll(struct pollfd *fds, nfds_t nfds, int timeout)
        Downcall poll = new Downcall("poll", pollSym, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT),
                Downcall.ERRNO);
        return new Bound(new IbvVerbs(h, poll), null);
    }

    /** {@return every function of this class, each bound on its first call} */
    java.util.List<Downcall> downcalls() {
        return java.util.List.of(allocPd, deallocPd, regMr, deregMr, createCq, destroyCq, getCqEvent, ackCqEvents,
                createQp, modifyQp, queryQp, destroyQp, createAh, destroyAh, createSrq, modifySrq, querySrq, destroySrq,
                getAsyncEvent, ackAsyncEvent, createCompChannel, destroyCompChannel, poll);
    }

    /** A call's errno slot: one per caller that reuses it (not shared between threads). */
    static MemorySegment callState(Arena arena) {
        return arena.allocate(CALL_STATE);
    }

    static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static IllegalStateException wrap(Throwable t) {
        return t instanceof RuntimeException r ? new IllegalStateException(r.getMessage(), r) : new IllegalStateException(t);
    }

    /**
     * Checks a pointer a creating function returned.
     *
     * @return {@code p}
     * @throws LibIbverbs.NativeCallException with the errno when it is NULL
     */
    private static MemorySegment nonNull(MemorySegment p, MemorySegment state, String what) {
        if (p.equals(MemorySegment.NULL)) {
            int e = errno(state);
            throw new LibIbverbs.NativeCallException(what, e == 0 ? 5 /* EIO: failed without saying why */ : e);
        }
        return p;
    }

    /**
     * {@return 0, else the errno of a function that returns it (positive) or -1 with errno set}
     */
    private static int rc(int rc, MemorySegment state) {
        if (rc == 0) {
            return 0;
        }
        if (rc > 0) {
            return rc;
        }
        int e = errno(state);
        return e == 0 ? -rc : e;
    }

    MemorySegment allocPd(MemorySegment ctx) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) allocPd.handle().invokeExact(s, ctx), s, "ibv_alloc_pd");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int deallocPd(MemorySegment pd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) deallocPd.handle().invokeExact(s, pd), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    MemorySegment regMr(MemorySegment pd, MemorySegment addr, long length, int access) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) regMr.handle().invokeExact(s, pd, addr, length, access), s, "ibv_reg_mr");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int deregMr(MemorySegment mr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) deregMr.handle().invokeExact(s, mr), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    MemorySegment createCompChannel(MemorySegment ctx) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) createCompChannel.handle().invokeExact(s, ctx), s, "ibv_create_comp_channel");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int destroyCompChannel(MemorySegment ch) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) destroyCompChannel.handle().invokeExact(s, ch), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    MemorySegment createCq(MemorySegment ctx, int cqe, MemorySegment channel) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) createCq.handle().invokeExact(s, ctx, cqe, MemorySegment.NULL, channel, 0), s,
                    "ibv_create_cq");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int destroyCq(MemorySegment cq) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) destroyCq.handle().invokeExact(s, cq), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    /**
     * {@code ibv_get_cq_event}: reads the channel's next event (call it when {@code poll} says the fd is readable).
     *
     * @param state    an errno slot
     * @param channel  the channel
     * @param cqOut    8 bytes: the CQ's pointer
     * @param ctxOut   8 bytes: its cq_context
     * @return 0 or the errno
     */
    int getCqEvent(MemorySegment state, MemorySegment channel, MemorySegment cqOut, MemorySegment ctxOut) {
        try {
            return rc((int) getCqEvent.handle().invokeExact(state, channel, cqOut, ctxOut), state);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    void ackCqEvents(MemorySegment state, MemorySegment cq, int n) {
        try {
            ackCqEvents.handle().invokeExact(state, cq, n);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    MemorySegment createQp(MemorySegment pd, MemorySegment initAttr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) createQp.handle().invokeExact(s, pd, initAttr), s, "ibv_create_qp");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int modifyQp(MemorySegment qp, MemorySegment attr, int mask) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) modifyQp.handle().invokeExact(s, qp, attr, mask), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int queryQp(MemorySegment state, MemorySegment qp, MemorySegment attr, int mask, MemorySegment initAttr) {
        try {
            return rc((int) queryQp.handle().invokeExact(state, qp, attr, mask, initAttr), state);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int destroyQp(MemorySegment qp) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) destroyQp.handle().invokeExact(s, qp), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    MemorySegment createAh(MemorySegment pd, MemorySegment ahAttr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) createAh.handle().invokeExact(s, pd, ahAttr), s, "ibv_create_ah");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int destroyAh(MemorySegment ah) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) destroyAh.handle().invokeExact(s, ah), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    MemorySegment createSrq(MemorySegment pd, MemorySegment initAttr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return nonNull((MemorySegment) createSrq.handle().invokeExact(s, pd, initAttr), s, "ibv_create_srq");
        } catch (LibIbverbs.NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int modifySrq(MemorySegment srq, MemorySegment attr, int mask) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) modifySrq.handle().invokeExact(s, srq, attr, mask), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int querySrq(MemorySegment srq, MemorySegment attr) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) querySrq.handle().invokeExact(s, srq, attr), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int destroySrq(MemorySegment srq) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = callState(a);
            return rc((int) destroySrq.handle().invokeExact(s, srq), s);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    int getAsyncEvent(MemorySegment state, MemorySegment ctx, MemorySegment event) {
        try {
            return rc((int) getAsyncEvent.handle().invokeExact(state, ctx, event), state);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    void ackAsyncEvent(MemorySegment state, MemorySegment event) {
        try {
            ackAsyncEvent.handle().invokeExact(state, event);
        } catch (Throwable t) {
            throw wrap(t);
        }
    }

    /**
     * {@code poll(2)} on one descriptor for POLLIN, retried on EINTR until the timeout.
     *
     * @param state     an errno slot
     * @param pollfd    a {@code struct pollfd} (8 bytes)
     * @param fd        the descriptor
     * @param timeoutMs the longest wait, 0 for none
     * @return true when the descriptor is readable
     * @throws LibIbverbs.NativeCallException when poll fails (other than EINTR)
     */
    boolean pollIn(MemorySegment state, MemorySegment pollfd, int fd, long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            pollfd.set(JAVA_INT, 0, fd);
            pollfd.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 4, (short) 1); // POLLIN
            pollfd.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 6, (short) 0);
            long left = Math.max(0, (deadline - System.nanoTime() + 999_999) / 1_000_000L);
            int n;
            try {
                n = (int) poll.handle().invokeExact(state, pollfd, 1L, (int) Math.min(Integer.MAX_VALUE, left));
            } catch (Throwable t) {
                throw wrap(t);
            }
            if (n > 0) {
                return true;
            }
            if (n == 0) {
                return false;
            }
            int e = errno(state);
            if (e != 4 /* EINTR */) {
                throw new LibIbverbs.NativeCallException("poll", e);
            }
        }
    }
}

package io.jrdma.rdmacore;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The data path of one {@code struct ibv_context}: {@code ibv_post_send}, {@code ibv_post_recv},
 * {@code ibv_post_srq_recv}, {@code ibv_poll_cq} and {@code ibv_req_notify_cq} are {@code static inline}
 * in verbs.h and call the function pointers of the context's {@code ops} ({@code struct ibv_context_ops});
 * this binds one downcall handle to each pointer, once per context. {@code poll_cq} is bound
 * {@link Linker.Option#critical critical}: providers poll their completion ring in user memory, with no
 * system call and no upcall. The posts and the arm are not: rxe and siw ring their doorbell with a
 * system call (a {@code write} on the command fd), which a critical call must not make.
 */
final class ContextOps {
    private static final FunctionDescriptor POST = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);

    /** {@code int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **bad_wr)} */
    final MethodHandle postSend;
    /** {@code int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **bad_wr)} */
    final MethodHandle postRecv;
    /** {@code int (*post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **)}, or null */
    final MethodHandle postSrqRecv;
    /** {@code int (*poll_cq)(struct ibv_cq *, int num_entries, struct ibv_wc *)} */
    final MethodHandle pollCq;
    /** {@code int (*req_notify_cq)(struct ibv_cq *, int solicited_only)} */
    final MethodHandle reqNotifyCq;

    /**
     * {@code struct ibv_mw *(*alloc_mw)(struct ibv_pd *, enum ibv_mw_type)} (verbs.h's static inline
     * {@code ibv_alloc_mw}), with {@code errno} captured (its first argument is the call state); null when the
     * provider has no memory windows
     */
    final MethodHandle allocMw;
    /** {@code int (*bind_mw)(struct ibv_qp *, struct ibv_mw *, struct ibv_mw_bind *)} ({@code ibv_bind_mw}), or null */
    final MethodHandle bindMw;
    /** {@code int (*dealloc_mw)(struct ibv_mw *)} ({@code ibv_dealloc_mw}), or null */
    final MethodHandle deallocMw;

    private ContextOps(MethodHandle postSend, MethodHandle postRecv, MethodHandle postSrqRecv, MethodHandle pollCq,
                       MethodHandle reqNotifyCq, MethodHandle allocMw, MethodHandle bindMw, MethodHandle deallocMw) {
        this.postSend = postSend;
        this.postRecv = postRecv;
        this.postSrqRecv = postSrqRecv;
        this.pollCq = pollCq;
        this.reqNotifyCq = reqNotifyCq;
        this.allocMw = allocMw;
        this.bindMw = bindMw;
        this.deallocMw = deallocMw;
    }

    /**
     * {@return true when the three memory window slots are set} Since rdma-core 17 libibverbs fills every slot a
     * provider leaves empty with a stub of its own ({@code libibverbs/dummy_ops.c}: {@code alloc_mw} sets errno
     * EOPNOTSUPP and returns NULL, {@code bind_mw}, {@code dealloc_mw} and {@code post_srq_recv} return EOPNOTSUPP),
     * so this is true on every current rdma-core; whether windows work is {@link #mwAnswers}'s probe.
     */
    boolean hasMw() {
        return allocMw != null && bindMw != null && deallocMw != null;
    }

    /** errno values of an {@code alloc_mw} that has no windows: libibverbs' stub (EOPNOTSUPP), or ENOSYS */
    static final int EOPNOTSUPP = 95, ENOSYS = 38;

    /**
     * The probe of {@link RdmaCoreContext#windows()}: one {@code alloc_mw(pd, type)} on a scratch PD, whose window, if
     * it made one, is deallocated at once.
     *
     * @return 0 when the provider made the window (it has windows), else the errno of the failed call: EOPNOTSUPP
     *         (or ENOSYS) when its {@code alloc_mw} is libibverbs' stub (found in review: the NULL check of
     *         {@link #hasMw} never fired, so a device without windows in its provider reported them)
     */
    int mwAnswers(MemorySegment pd, int type) {
        if (!hasMw()) {
            return EOPNOTSUPP;
        }
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment state = IbvVerbs.callState(a);
            MemorySegment mw = (MemorySegment) allocMw.invokeExact(state, pd, type);
            if (mw.equals(MemorySegment.NULL)) {
                int e = IbvVerbs.errno(state);
                return e == 0 ? 5 : e; // NULL without an errno: EIO, a failure that is not "no windows"
            }
            int rc = (int) deallocMw.invokeExact(mw);
            if (rc != 0) {
                throw new IllegalStateException("dealloc_mw of the window the probe made returned " + rc);
            }
            return 0;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Reads the ops of an open context and binds them.
     *
     * @param ctx    the {@code struct ibv_context *}
     * @param device the device's name, for messages
     * @return the bound data path
     * @throws LibIbverbs.LayoutMismatchException when an entry the data path needs is NULL: either the
     *                                            provider lacks it or the ops table is not where verbs.h puts it
     */
    static ContextOps of(MemorySegment ctx, String device) {
        MemorySegment c = ctx.reinterpret(Structs.IBV_CONTEXT.byteSize());
        Linker linker = Linker.nativeLinker();
        MemorySegment send = required(c, "post_send", device);
        MemorySegment recv = required(c, "post_recv", device);
        MemorySegment poll = required(c, "poll_cq", device);
        MemorySegment arm = required(c, "req_notify_cq", device);
        MemorySegment srq = c.get(ADDRESS, Structs.opOffset("post_srq_recv"));
        MemorySegment alloc = c.get(ADDRESS, Structs.opOffset("alloc_mw"));
        MemorySegment bind = c.get(ADDRESS, Structs.opOffset("bind_mw"));
        MemorySegment dealloc = c.get(ADDRESS, Structs.opOffset("dealloc_mw"));
        return new ContextOps(linker.downcallHandle(send, POST), linker.downcallHandle(recv, POST),
                srq.equals(MemorySegment.NULL) ? null : linker.downcallHandle(srq, POST),
                linker.downcallHandle(poll, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS),
                        Linker.Option.critical(false)),
                linker.downcallHandle(arm, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)),
                alloc.equals(MemorySegment.NULL) ? null : linker.downcallHandle(alloc,
                        FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT), Linker.Option.captureCallState("errno")),
                bind.equals(MemorySegment.NULL) ? null : linker.downcallHandle(bind, POST),
                dealloc.equals(MemorySegment.NULL) ? null : linker.downcallHandle(dealloc,
                        FunctionDescriptor.of(JAVA_INT, ADDRESS)));
    }

    private static MemorySegment required(MemorySegment ctx, String op, String device) {
        MemorySegment p = ctx.get(ADDRESS, Structs.opOffset(op));
        if (p.equals(MemorySegment.NULL)) {
            throw new LibIbverbs.LayoutMismatchException("struct ibv_context_ops of " + device + ": " + op + " at offset "
                    + Structs.opOffset(op) + " of struct ibv_context is NULL; verbs.h's static inline ibv_" + op
                    + " calls it, so either the table is not where verbs.h puts it or the provider has none");
        }
        return p;
    }
}

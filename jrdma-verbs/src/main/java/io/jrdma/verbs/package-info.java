/**
 * The verbs API: RDMA devices, protection domains, memory regions, completion queues, queue
 * pairs and the connection manager, with the semantics of libibverbs and librdmacm in Java
 * idioms.
 *
 * <h2>Object model</h2>
 * <p>{@link io.jrdma.verbs.Rdma} finds the {@link io.jrdma.verbs.spi.RdmaProvider providers} on the
 * class or module path and their {@link io.jrdma.verbs.Device devices} ({@code ibv_get_device_list});
 * {@link io.jrdma.verbs.Rdma#resolve Rdma.resolve} picks the device that routes to a peer, as
 * {@code rdma_resolve_addr}. Everything else hangs off an open device:
 * <pre>
 * Device ── open(options) ──▶ DeviceContext                   (ibv_context: one engine)
 *                              ├─ CompletionChannel           (ibv_comp_channel)
 *                              ├─ CompletionQueue             (ibv_cq, optionally with a channel)
 *                              ├─ ProtectionDomain            (ibv_pd)
 *                              │    ├─ MemoryRegion           (ibv_mr: a native MemorySegment, lkey, rkey)
 *                              │    └─ QueuePair              (ibv_qp: send and receive queues, two CQs)
 *                              └─ ConnectionManager           (rdma_cm: listen, connect, accept)
 * </pre>
 * <p>A memory region registers a native {@link java.lang.foreign.MemorySegment}; its virtual
 * address is the segment's address, and a peer reaches it with an address inside it and its
 * {@link io.jrdma.verbs.MemoryRegion#rkey() rkey}. A queue pair takes work requests
 * ({@link io.jrdma.verbs.SendWorkRequest}, {@link io.jrdma.verbs.RecvWorkRequest}) and reports each
 * outcome as a {@link io.jrdma.verbs.WorkCompletion} on its CQ. Request and completion objects are
 * the caller's and are reused: posting copies the request, polling fills the completion, and
 * neither allocates. A QP is connected either by the {@link io.jrdma.verbs.ConnectionManager}, which
 * exchanges the QP numbers, PSNs, MTU and private data over TCP and moves both QPs to RTS, or by
 * hand with {@link io.jrdma.verbs.QueuePair#modify} (RESET, INIT, RTR, RTS; see
 * {@link io.jrdma.verbs.QpAttr}).
 *
 * <h2>Lifetimes and close order</h2>
 * <p>Every object is {@link java.lang.AutoCloseable} and is closed explicitly, children before
 * parents, as with libibverbs' destroy calls: connections, then QPs, then memory regions, CQs and
 * PDs (a CQ after the QPs that use it, a PD after its regions and QPs), completion channels after
 * their CQs, and the device context last. Closing a parent that still has children throws
 * {@link io.jrdma.verbs.RdmaException} with {@code EBUSY} naming what is left open. Closing a
 * connection disconnects (the QP moves to ERROR) but leaves the QP open. A memory region keeps its
 * segment: deregister it before its {@link java.lang.foreign.Arena} is closed. Closing a QP drops
 * its outstanding work requests without completions.
 *
 * <h2>Threading</h2>
 * <p>Each device context is one software engine, run in one of two
 * {@link io.jrdma.verbs.ThreadingMode modes}: {@code DEDICATED} (the default) starts an engine
 * thread on open, so a passive side serves RDMA WRITE, READ and atomics with no call at all, and
 * its {@link io.jrdma.verbs.IdleStrategy} decides how it waits; {@code INVOKER} starts none, and
 * {@link io.jrdma.verbs.DeviceContext#progress()}, {@link io.jrdma.verbs.CompletionQueue#poll} and
 * {@link io.jrdma.verbs.CompletionChannel#await} run the engine in the caller's thread, so only one
 * thread may drive such a context at a time. In either mode one thread at a time posts to a given
 * queue and polls a given CQ (the queues are single-producer, single-consumer); different QPs and
 * CQs may be used from different threads. In {@code DEDICATED} mode control verbs (create, modify,
 * query, close) may be called from any thread: they are handed to the engine thread and the caller
 * waits for them. In {@code INVOKER} mode they run inline, so they come from the thread that drives
 * the context too.
 *
 * <h2>Errors</h2>
 * <ul>
 *   <li>Control verbs throw {@link io.jrdma.verbs.RdmaException}, the one unchecked exception of the
 *       API, with an errno ({@link io.jrdma.verbs.RdmaException#errno()}) and a message that says what
 *       was wrong and what to do; a rejected connection is a
 *       {@link io.jrdma.verbs.ConnectionRejectedException} with the server's private data.</li>
 *   <li>Posting never throws: {@link io.jrdma.verbs.QueuePair#postSend postSend} and
 *       {@link io.jrdma.verbs.QueuePair#postRecv postRecv} return 0 or an errno value
 *       ({@code ENOMEM} when the queue is full, {@code EINVAL} for a malformed request).</li>
 *   <li>A work request that fails completes with an IBA {@link io.jrdma.verbs.WcStatus}
 *       ({@code REM_ACCESS_ERR} for a bad rkey or an access outside the region, {@code RETRY_EXC_ERR}
 *       when the peer is gone, {@code RNR_RETRY_EXC_ERR} when it never posted a receive, ...); the QP
 *       then moves to ERROR and the requests behind it complete with {@code WR_FLUSH_ERR}.</li>
 *   <li>With no provider on the path, {@link io.jrdma.verbs.Rdma#resolve Rdma.resolve} and
 *       {@link io.jrdma.verbs.Rdma#device Rdma.device} throw {@code ENODEV} naming the artifact to add
 *       ({@code io.jrdma:jrdma-engine}, module {@code io.jrdma.engine}).</li>
 * </ul>
 */
package io.jrdma.verbs;

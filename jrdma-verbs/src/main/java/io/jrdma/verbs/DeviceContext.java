package io.jrdma.verbs;

import java.util.Map;

/**
 * An open device ({@code ibv_context}). For the software providers each context is one
 * engine: the "NIC" that moves packets for its queue pairs, run by its own thread or by
 * {@link #progress()}.
 */
public interface DeviceContext extends AutoCloseable {
    /** {@return the device this context was opened on} */
    Device device();

    /** {@return the options it was opened with} */
    DeviceOptions options();

    /** {@return the attributes of port 1 (the only port)} */
    PortAttr queryPort();

    /**
     * {@return GID {@code index} of port 1}
     *
     * @param index the index in the GID table, as {@code ibv_query_gid}
     * @throws RdmaException EINVAL if the table has no such index
     */
    Gid gid(int index);

    /**
     * {@return the GID table index of an address of this device, or -1}
     *
     * @param gid the GID to look for
     */
    int gidIndexOf(Gid gid);

    /**
     * Allocates a protection domain ({@code ibv_alloc_pd}), which owns memory regions and QPs.
     *
     * @return the new PD
     * @throws RdmaException EINVAL if the context is closed
     */
    ProtectionDomain allocPd();

    /**
     * Creates a completion channel ({@code ibv_create_comp_channel}): a thread can block on it
     * until a CQ created with it has a completion.
     *
     * @return the new channel
     * @throws RdmaException EINVAL if the context is closed
     */
    CompletionChannel createCompletionChannel();

    /**
     * Creates a CQ without a completion channel (poll it to see completions).
     *
     * @param cqe the minimum number of entries, 1..4,194,304
     * @return the new CQ
     * @throws RdmaException EINVAL for a size out of range or a closed context
     */
    default CompletionQueue createCq(int cqe) {
        return createCq(cqe, null);
    }

    /**
     * Creates a CQ whose notifications go to {@code channel} ({@code ibv_create_cq}).
     *
     * @param cqe     the minimum number of entries, 1..4,194,304
     * @param channel a channel of this context, or null for none
     * @return the new CQ
     * @throws RdmaException EINVAL for a size out of range, a channel of another context, or a closed context
     */
    CompletionQueue createCq(int cqe, CompletionChannel channel);

    /**
     * Runs one duty cycle of the engine in the calling thread (receive, respond, transmit,
     * timers). Only in {@link ThreadingMode#INVOKER} mode, by one thread at a time; in DEDICATED mode
     * the engine's own thread does this. Allocation-free.
     *
     * @return the work done in this cycle (packets and events handled; 0 = idle)
     */
    int progress();

    /** {@return a snapshot of the device counters, named like Linux rxe's hw_counters} */
    Map<String, Long> counters();

    /** {@return the connection manager of this context's provider} */
    ConnectionManager connectionManager();

    /**
     * Closes the context and stops its engine.
     *
     * @throws RdmaException EBUSY while PDs, CQs or completion channels of it are open: close them first
     */
    @Override
    void close();
}

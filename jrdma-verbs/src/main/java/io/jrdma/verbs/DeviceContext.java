package io.jrdma.verbs;

import java.util.Map;

/**
 * An open device ({@code ibv_context}). For the software providers each context is one
 * engine: the "NIC" that moves packets for its queue pairs, run by its own thread or by
 * {@link #progress()}.
 */
public interface DeviceContext extends AutoCloseable {
    Device device();

    DeviceOptions options();

    /** @return the attributes of port 1 (the only port) */
    PortAttr queryPort();

    /** @return GID {@code index} of port 1 */
    Gid gid(int index);

    /** @return the GID table index of an address of this device, or -1 */
    int gidIndexOf(Gid gid);

    ProtectionDomain allocPd();

    CompletionChannel createCompletionChannel();

    /** A CQ of at least {@code cqe} entries without a completion channel. */
    default CompletionQueue createCq(int cqe) {
        return createCq(cqe, null);
    }

    /** A CQ of at least {@code cqe} entries whose notifications go to {@code channel} (may be null). */
    CompletionQueue createCq(int cqe, CompletionChannel channel);

    /**
     * Runs one duty cycle of the engine in the calling thread (receive, respond, transmit,
     * timers). Only in {@link ThreadingMode#INVOKER} mode; returns the work done (0 = idle).
     * Allocation-free.
     */
    int progress();

    /** @return a snapshot of the device counters, named like Linux rxe's hw_counters */
    Map<String, Long> counters();

    /** @return the connection manager of this context's provider */
    ConnectionManager connectionManager();

    /** Closes the context; refused (EBUSY) while PDs, CQs or channels are open. */
    @Override
    void close();
}

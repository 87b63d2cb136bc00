package io.jrdma.verbs;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;

/**
 * An open device ({@code ibv_context}). For the software providers each context is one
 * engine: the "NIC" that moves packets for its queue pairs, run by its own thread or by
 * {@link #progress()}.
 *
 * <p>Verbs a provider may lack (UD, UC, SRQ, memory windows, fast registration, asynchronous events, the
 * device attributes) are {@code default} methods here and in the other interfaces that throw
 * {@link RdmaException.Errno#EOPNOTSUPP} with the verb, the provider and the device in the message, as
 * rdma-core's {@code dummy_ops} answer EOPNOTSUPP; a provider overrides what it implements.
 * {@link #queryDevice()} says what that is.
 */
public interface DeviceContext extends AutoCloseable {
    /** {@return the device this context was opened on} */
    Device device();

    /** {@return the options it was opened with} */
    DeviceOptions options();

    /**
     * {@return the attributes of port 1, as {@code ibv_query_port(context, 1, &attr)}: the same as
     * {@link #queryPort(int) queryPort(1)}} The software providers' devices have one port.
     */
    PortAttr queryPort();

    /**
     * {@return the attributes of port {@code port} ({@code ibv_query_port(context, port, &attr)})} A device has
     * ports 1 to {@link DeviceAttr#physPortCnt()}: one for jrdma's software devices, often two for an RDMA NIC of
     * the rdma-core provider. The default answers port 1 with {@link #queryPort()}.
     *
     * @param port the port number, 1 to {@code queryDevice().physPortCnt()}
     * @throws RdmaException EINVAL for a port outside 1..physPortCnt (the message names the range); EOPNOTSUPP
     *                       for a port above 1 of a device with more ports when the provider answers only port 1
     */
    default PortAttr queryPort(int port) {
        Ports.check(this, port, "queryPort");
        return queryPort();
    }

    /**
     * {@return how many ports the device has, numbered 1 to this: {@code queryDevice().physPortCnt()}, or 1 from a
     * provider that does not report device attributes (jrdma's software devices have one port)}
     * Code that searches every port (a GID, an address) loops {@code for (port = 1; port <= portCount(); port++)}.
     *
     * @throws RdmaException as {@link #queryDevice()} does, except EOPNOTSUPP
     */
    default int portCount() {
        return Ports.count(this);
    }

    /**
     * {@return GID {@code index} of port 1, as {@code ibv_query_gid(context, 1, index, &gid)}: the same as
     * {@link #gid(int, int) gid(1, index)}}
     *
     * @param index the index in the GID table, as {@code ibv_query_gid}
     * @throws RdmaException EINVAL if the table has no such index
     */
    Gid gid(int index);

    /**
     * {@return GID {@code index} of port {@code port} ({@code ibv_query_gid(context, port, index, &gid)})} The
     * default answers port 1 with {@link #gid(int)}.
     *
     * @param port  the port number, 1 to {@code queryDevice().physPortCnt()}
     * @param index the index in that port's GID table
     * @throws RdmaException EINVAL for a port outside 1..physPortCnt (the message names the range) or an index
     *                       the port's table does not have; EOPNOTSUPP as {@link #queryPort(int)}
     */
    default Gid gid(int port, int index) {
        Ports.check(this, port, "gid");
        return gid(index);
    }

    /**
     * {@return the index of an address of this device in port 1's GID table, or -1}: the same as
     * {@link #gidIndexOf(int, Gid) gidIndexOf(1, gid)}
     *
     * @param gid the GID to look for
     */
    int gidIndexOf(Gid gid);

    /**
     * {@return the index of {@code gid} in port {@code port}'s GID table, or -1} (libibverbs' {@code ibv_find_gid_index}
     * without the GID type, or a walk of {@code ibv_query_gid} over the port's table). The default answers port 1
     * with {@link #gidIndexOf(Gid)}.
     *
     * @param port the port number, 1 to {@code queryDevice().physPortCnt()}
     * @param gid  the GID to look for
     * @throws RdmaException EINVAL for a port outside 1..physPortCnt (the message names the range); EOPNOTSUPP as
     *                       {@link #queryPort(int)}
     */
    default int gidIndexOf(int port, Gid gid) {
        Ports.check(this, port, "gidIndexOf");
        return gidIndexOf(gid);
    }

    /**
     * Allocates memory that peers of this device can reach once it is registered with remote
     * access; it is released when {@code arena} closes. Network providers (soft-RoCE, soft-iWARP)
     * reach any native memory, so the default is {@code arena.allocate(byteSize, byteAlignment)}; the
     * shared-memory provider ({@code shm0}) returns memory that other processes on the host can map,
     * and refuses to register memory from elsewhere with remote access.
     *
     * @param byteSize      bytes, at least 1
     * @param byteAlignment a power of two
     * @param arena         the arena whose closing releases the memory
     * @return the memory, zeroed
     * @throws RdmaException EINVAL for a bad size or alignment, ENOMEM when the system has no memory for it
     */
    default MemorySegment allocateBuffer(long byteSize, long byteAlignment, java.lang.foreign.Arena arena) {
        return arena.allocate(byteSize, byteAlignment);
    }

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

    /**
     * {@return whether a thread waiting for a peer's RDMA WRITE to land in this context's memory must run
     * {@link #progress()} meanwhile} True for an {@link ThreadingMode#INVOKER} context of a software provider
     * whose engine places an inbound WRITE only in a duty cycle (soft-RoCE, soft-iWARP); false where the WRITE
     * lands with no work of this context: an engine thread of its own ({@link ThreadingMode#DEDICATED}), shared
     * memory (the peer's post stores into this memory), a NIC. A loop that spins on a WRITE's last byte
     * (perftest's write_lat) then needs no duty cycle on each turn. The default is true.
     */
    default boolean remoteWritesNeedProgress() {
        return true;
    }

    /**
     * {@return the device's attributes and the limits the provider enforces ({@code ibv_query_device})}
     *
     * @throws RdmaException EOPNOTSUPP from a provider that does not report them (the default)
     */
    default DeviceAttr queryDevice() {
        throw Unsupported.of("DeviceContext.queryDevice (ibv_query_device)", Unsupported.device(this));
    }

    /**
     * Takes the oldest asynchronous event, if any, without waiting ({@code ibv_get_async_event} on a
     * non-blocking async fd). Events are kept in order until taken; nothing is acknowledged (see {@link AsyncEvent}).
     *
     * @param event a caller-owned event, filled when one was waiting and reused across calls
     * @return true if {@code event} was filled, false if none was waiting
     * @throws RdmaException EOPNOTSUPP from a provider without asynchronous events (the default)
     */
    default boolean pollAsyncEvent(AsyncEvent event) {
        throw Unsupported.of("DeviceContext.pollAsyncEvent (ibv_get_async_event)", Unsupported.device(this));
    }

    /**
     * Waits for the next asynchronous event ({@code ibv_get_async_event}), at most {@code timeout}. In
     * {@link ThreadingMode#INVOKER} mode the waiting thread drives the engine as it waits.
     *
     * @param event   a caller-owned event, filled when one came and reused across calls
     * @param timeout how long at most; zero or negative: do not wait (as {@link #pollAsyncEvent})
     * @return true if {@code event} was filled, false if {@code timeout} passed first
     * @throws RdmaException EOPNOTSUPP from a provider without asynchronous events (the default); EINTR if the
     *                       waiting thread was interrupted (its interrupt status is set again)
     */
    default boolean awaitAsyncEvent(AsyncEvent event, Duration timeout) {
        throw Unsupported.of("DeviceContext.awaitAsyncEvent (ibv_get_async_event)", Unsupported.device(this));
    }

    /**
     * Builds the address handle attributes that answer a received UD message ({@code ibv_init_ah_from_wc}):
     * the destination is the GRH's source GID, sent from the local GID the message was addressed to,
     * with its traffic class and flow label, hop limit 255 and the completion's SL, as rdma-core does.
     * The destination UDP port is 4791: a jrdma peer listening on another port says so out of band
     * (then use {@link AhAttr#withUdpPort}). Computed from the API alone: every provider has it.
     *
     * @param portNum the port the message came in on (the receiving QP's port; 1 on jrdma's software devices):
     *                its GID table is searched for the GRH's destination
     * @param wc      the completion of a UD receive, with {@link WorkCompletion#GRH}
     * @param grh     the receive buffer's first 40 bytes ({@link Grh} says where and what they are)
     * @return the attributes, ready for {@link ProtectionDomain#createAh}
     * @throws RdmaException EINVAL if the completion has no GRH or the 40 bytes hold none, or for a port outside
     *                       1..physPortCnt; ENOENT if the GRH's
     *                       destination is no GID of that port (a message for another device or port)
     */
    default AhAttr initAhFromWc(int portNum, WorkCompletion wc, MemorySegment grh) {
        if (!wc.hasGrh()) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the completion (" + wc + ") has no GRH flag: only UD"
                    + " receives carry one, and RoCE needs it to answer (there are no LIDs)");
        }
        Grh h = Grh.parse(grh);
        int index = gidIndexOf(portNum, h.dgid());
        if (index < 0) {
            throw new RdmaException(RdmaException.Errno.ENOENT, "the message was sent to " + h.dgid()
                    + ", which is no GID of port " + portNum + " of this context (" + device().name() + "): pass the completion of"
                    + " a receive of this context and the port of the QP that received it");
        }
        return new AhAttr(h.sgid(), index, 0xFF, h.trafficClass(), h.flowLabel(), wc.sl(), portNum,
                DeviceOptions.ROCE_V2_PORT);
    }

    /** {@return a snapshot of the device counters, named like Linux rxe's hw_counters} */
    Map<String, Long> counters();

    /**
     * One counter of {@link #counters()} by its name, for a caller that watches one or two of them (a tool's wait
     * that counts packets as progress): a provider whose snapshot costs one file read per counter (rdma-core's,
     * from sysfs) reads just this one. Not for a data path: it may allocate.
     *
     * @param name a counter's name, e.g. {@code rcvd_pkts}
     * @return its value, or -1 when this device shows no counter of that name
     */
    default long counter(String name) {
        Long v = counters().get(name);
        return v == null ? -1 : v;
    }

    /** {@return the connection manager of this context's provider} */
    ConnectionManager connectionManager();

    /**
     * {@return the connection manager that speaks {@code librdmacm}'s own wire protocol, so that rdma_cm
     * applications (rping, perftest {@code -R}, rdma_server/rdma_client) are its peers}: on soft-RoCE the
     * InfiniBand CM (MADs to QP 1, the rdma_cm header in the REQ's private data, service ID
     * {@code 0x0000000001060000 | port}); on soft-iWARP MPA, the same manager as {@link #connectionManager()}.
     *
     * @throws RdmaException ENOSYS for a provider without one (its {@link #connectionManager()} is the way)
     */
    default ConnectionManager rdmaCm() {
        throw new RdmaException(RdmaException.Errno.ENOSYS, device().name() + " has no rdma_cm wire protocol: use"
                + " connectionManager()");
    }

    /**
     * Closes the context and stops its engine.
     *
     * @throws RdmaException EBUSY while PDs, CQs or completion channels of it are open: close them first
     */
    @Override
    void close();
}

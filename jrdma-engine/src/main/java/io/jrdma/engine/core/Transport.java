package io.jrdma.engine.core;

import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;

import java.util.List;
import java.util.Map;

/**
 * What the transport-neutral core (the device context, its {@link Engine} duty cycle, QPs,
 * queues, keys and CQs) asks of a transport: the IB transport over UDP (soft-RoCE, rxe's roles)
 * or iWARP over TCP (soft-iWARP, siw's tx/rx), and later shared memory. The core never asks
 * which transport it runs; everything that differs is behind these calls, the way rdma-core's
 * generic verbs layer reaches a provider only through its ops.
 *
 * <p>Threads: every method runs on the engine thread (the caller in INVOKER mode), except
 * {@link #connectionManager}, {@link #limitations}, {@link #describe}, {@link #addCounters} and
 * {@link #close}, which run on the control path. The duty-cycle calls ({@link #receive},
 * {@link #transmit}, {@link #service}, {@link #hasWork}, {@link #beforeReceive},
 * {@link #afterService}) are the data path: they allocate nothing, take no lock and do not log.
 * The core makes at most one call per duty cycle or per QP serviced; per-packet work stays
 * inside the transport.
 *
 * <p>Defaults: a transport implements only what it has. The defaults do nothing, accept every
 * post and modify, and report no limitations.
 */
public interface Transport {
    // ------------------------------------------------------------------ duty cycle (data path)

    /**
     * A fence through every running thread of this process (Linux's {@code membarrier}), or null when the transport
     * has none. With one, an INVOKER engine lets the thread that drives it most claim it without a locked instruction
     * (Engine.tryDrive: a biased claim, which every other claimer waits out behind this fence).
     */
    default Runnable threadFence() {
        return null;
    }

    /** Before receiving, once per duty cycle, after the doorbells ran: e.g. send what a batching link holds. */
    default void beforeReceive() {
    }

    /** Takes in at most one batch of input (datagrams, stream bytes). @return the work done; 0 when idle */
    int receive();

    /**
     * A QP's doorbell rang (a fresh post): send what it can now, before this cycle's receive.
     *
     * @return the work done
     */
    int transmit(Qp qp, int budget);

    /**
     * Services one active QP that is not in ERROR: timers, responses owed, then its send queue.
     *
     * @return the work done
     */
    int service(Qp qp, int budget);

    /**
     * Services one QP in ERROR after the core flushed its queues (a TERMINATE to send, a stream to close).
     *
     * @return the work done
     */
    default int serviceError(Qp qp) {
        return 0;
    }

    /** @return true while the QP has work for a next duty cycle (it stays on the active list) */
    boolean hasWork(Qp qp);

    /**
     * {@return true (the default) when a peer's RDMA WRITE reaches this context's memory only through a duty
     * cycle of this engine (a packet received and placed); shared memory answers false: the peer stores into it}
     */
    default boolean remoteWritesNeedEngine() {
        return true;
    }

    /**
     * The thread driving the engine, a SEND posted while requests are queued: whether {@link #executeDirect} may take
     * it behind them, because every one of them is under way and waits only for its answer (so the SEND keeps the
     * send queue's order), and the queue has room for it. The default: never (a direct request needs an empty queue).
     */
    default boolean directBehind(Qp qp) {
        return false;
    }

    /**
     * INVOKER: the thread that drives the engine polls {@code cq} for one completion and the CQ holds none. A
     * transport may complete one receive that has arrived straight into {@code wc}, with every check and effect
     * of its usual placement, instead of through the CQ's entries and a duty cycle. It leaves anything it does
     * not take this way (any check that would fail, any message it does not handle here) untouched, for the duty
     * cycle. The default takes nothing.
     *
     * @return true when {@code wc} holds a receive's completion
     */
    default boolean receiveInto(Cq cq, io.jrdma.verbs.WorkCompletion wc) {
        return false;
    }

    /**
     * The posting thread, driving the engine ({@link Engine#postDirect}): executes a one-sided request (RDMA
     * WRITE, READ or an atomic) or a SEND (with immediate data, with invalidate), with one SGE of
     * {@code length > 0} bytes, the QP in RTS and its send queue empty, from the work request itself, when the
     * transport can complete it at once, or send it at once and complete it later: it then keeps the request as
     * the queue's head WQE ({@link Qp#keepDirect}, {@link Qp#publishKept}) and returns {@link Engine#IN_FLIGHT}.
     * It checks the local key as {@link Sgl#validate} would and returns {@link Engine#DECLINED} without any effect
     * when that check fails (the queued path then completes it with its error) or when it cannot take the request.
     *
     * @return the completion status's ordinal, {@link Engine#IN_FLIGHT} or {@link Engine#DECLINED}; the default
     *         declines everything
     */
    default int executeDirect(Qp qp, io.jrdma.verbs.SendWorkRequest wr, io.jrdma.verbs.WrOpcode op, int length) {
        return Engine.DECLINED;
    }

    /**
     * The idle engine thread would park for up to {@code nanos}: a transport whose input cannot unpark a
     * Java thread (shared memory written by another process) may wait itself, on something its peers can
     * signal, and return true; {@link #wake} must then end that wait. The default returns false: the engine
     * parks ({@code LockSupport.parkNanos}) and a local post unparks it.
     */
    default boolean park(long nanos) {
        return false;
    }

    /**
     * Engine thread, before an idle park ({@link Idler}, BACKOFF): the longest it may park when nothing wakes it
     * sooner. The default, {@link Idler#MAX_PARK} (1 ms), suits a transport whose timers or input need the
     * clock that often; one whose every input ends its {@link #park} and whose timers are not running may allow
     * longer.
     */
    default long maxParkNanos() {
        return Idler.MAX_PARK;
    }

    /**
     * @return true (the default) when the transport reads {@link Engine#now}, which the engine then reads from
     *         the clock at the start of every duty cycle; false when it reads the clock itself where it needs it
     *         (shared memory: its timers are rare and coarse), so that a duty cycle with nothing to do (an
     *         INVOKER poll that finds nothing) costs no clock read (tens of ns on some virtual machines)
     */
    default boolean readsCycleClock() {
        return true;
    }

    /** Any thread: a local post rang the doorbell of a parked engine; ends a wait {@link #park} began. */
    default void wake() {
    }

    /** At the end of a duty cycle: e.g. send what a batching link holds. */
    default void afterService() {
    }

    // ------------------------------------------------------------------ QP life (engine thread, control path)

    /**
     * Makes a QP of this transport (engine thread, control path): the core's queues and
     * attributes with the transport's own per-QP state; it may set {@link Qp#refusedOps}.
     *
     * @return the new QP, not yet in the engine's table
     */
    Qp newQp(Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq);

    /**
     * Checks a state change the state table allowed against what this transport needs (e.g. an
     * iWARP QP reaches RTS only with a connected stream); throws {@code RdmaException} to refuse.
     */
    default void checkModify(Qp qp, QpState from, QpState to) {
    }

    /** A modify passed every check and its attributes are on the QP: the roles take what is theirs (PSNs, retry counts). */
    default void modified(Qp qp, QpAttr attr, QpState from, QpState to) {
    }

    /** A query: fills in what the roles hold (e.g. the current PSNs rather than the ones given to modify). */
    default void queried(Qp qp, QpAttr attr) {
    }

    /** The QP moves to ERROR on the engine thread (IBA 10.3.1): the roles drop what they were doing. */
    default void enteredError(Qp qp) {
    }

    /** The core flushed the QP's queues: the roles forget their place in them. */
    default void flushed(Qp qp) {
    }

    /** The QP goes back to RESET or is destroyed: the roles return to their initial state, connections close. */
    default void reset(Qp qp) {
    }

    /** Before a QP is destroyed: send what is owed to its peer (an ACK), if anything. */
    default void destroying(Qp qp) {
    }

    /**
     * Tells a QP that its peer's responder acknowledges unrequested packets within its
     * coalescing delay (a jrdma peer, negotiated by the connection manager); a transport
     * without ACKs ignores it.
     */
    default void peerAcksUnrequested(Qp qp, boolean on) {
    }

    // ------------------------------------------------------------------ device facts (control path)

    /** @return the connection manager of contexts on this transport */
    ConnectionManager connectionManager();

    /** {@return the connection manager speaking rdma_cm's wire protocol, or null when the transport has none} */
    default ConnectionManager rdmaCm() {
        return null;
    }

    /** @return what this context gives up for a missing JVM flag or platform feature, for its port attributes */
    default List<String> limitations() {
        return List.of();
    }

    /** @return a short description for the context's {@code toString} ("udp 4791", "tcp") */
    String describe();

    /** @return how packets leave (batched or one send each, with the reason); null when the transport has no such choice */
    default String transmitMode() {
        return null;
    }

    /**
     * Follows the interface's addresses, as rxe's GID table follows netdev events (control path,
     * called at most every 0.5 s, with the context's monitor held): opens the link on new
     * addresses and closes it on vanished ones.
     *
     * @return true when the link's endpoints were brought up to date (the context re-reads its GID
     *         table); false when this transport does not follow addresses or found none
     */
    default boolean refreshAddresses() {
        return false;
    }

    /**
     * The device attributes of a context on this transport (control path): the core's limits in
     * {@code base}, to which the transport adds its own part (QP types, SRQs, memory windows,
     * address handles, capability flags). The default adds nothing.
     */
    default io.jrdma.verbs.DeviceAttr deviceAttr(io.jrdma.verbs.DeviceAttr base) {
        return base;
    }

    // ------------------------------------------------------------------ memory (control path)

    /**
     * {@link io.jrdma.verbs.DeviceContext#allocateBuffer}: memory that this transport's peers can reach once
     * registered. The default is the arena's own memory (a network transport reaches any native memory).
     */
    default java.lang.foreign.MemorySegment allocateBuffer(long byteSize, long byteAlignment,
            java.lang.foreign.Arena arena) {
        return arena.allocate(byteSize, byteAlignment);
    }

    /**
     * A region was registered and its key is in the context's key table (control path, any thread): the
     * transport may publish it to its peers, or refuse it with an {@code RdmaException} (the core then
     * removes the key and the registration fails).
     */
    default void registered(Mr mr) {
    }

    /**
     * A region is being deregistered, or a memory window closed (its entry unbound), before its key leaves the
     * context's key table (control path, any thread): from when this returns no peer may reach it through that key.
     */
    default void deregistering(Mr mr) {
    }

    /** Adds the transport's own counters (the link's system calls) to a context's counter snapshot. */
    default void addCounters(Map<String, Long> counters) {
    }

    /** The context closes: connection manager, streams and sockets of the transport. */
    void close();
}

package io.jrdma.engine.core;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.link.Link;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceCap;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.ThreadingMode;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * An open soft-RoCE or soft-iWARP device context: one engine (the NIC) with its UDP sockets
 * (RoCE) or TCP streams (iWARP), key table, QP numbers and counters, run by a dedicated thread
 * or by {@link #progress()}. Control
 * operations that touch engine state run on the engine thread ({@link #control}).
 */
public final class Context implements DeviceContext {
    private static final long CONTROL_TIMEOUT_NANOS = 10_000_000_000L;

    public final Device device;
    private final java.util.function.Consumer<Context> onClose;
    public final DeviceOptions options;
    public final boolean invoker;
    public final Counters counters;
    public final KeyTable keys = new KeyTable();
    /** queryDevice's answer, made once (the limits do not change) */
    private volatile io.jrdma.verbs.DeviceAttr deviceAttr;
    public final Link link;
    public final Engine engine;
    /** The asynchronous event queue: written by the engine thread, read by pollAsyncEvent/awaitAsyncEvent. */
    public final AsyncEvents events;
    private static final long GID_REFRESH_NANOS = 500_000_000L;
    private static final Gid ZERO_GID = Gid.of(new byte[16]);
    private volatile List<Gid> gids;
    private long gidsReadAt;
    private final Mtu activeMtu;
    private final Set<Object> children = new HashSet<>();
    private final SplittableRandom qpnRandom = new SplittableRandom(new SecureRandom().nextLong());
    private final int[] freedQpns = new int[4096];
    private int freedNext;
    private final ConnectionManager cm;
    private volatile boolean running;
    private Thread thread;
    private boolean closed;
    /** The interface's state at the last port query: a query that finds it down counts {@code link_downed}. */
    private boolean portWasUp = true;
    /** What this context gives up for a missing JVM flag or platform feature ({@link Fallbacks}); in its port attributes */
    private final List<String> limitations;

    /**
     * Opens a context: starts its engine (and its thread unless INVOKER) over the transport
     * {@code transport} makes.
     *
     * @param device    the device it is a context of
     * @param onClose   told when the context has closed
     * @param options   the options it was opened with
     * @param link      its addresses (the GID table) and, for a datagram transport, its packets
     * @param clock     the engine's clock
     * @param activeMtu the port's active MTU
     * @param transport makes the transport the engine drives
     */
    public Context(Device device, java.util.function.Consumer<Context> onClose, DeviceOptions options,
            Link link, NanoClock clock, Mtu activeMtu, TransportFactory transport) {
        this.device = device;
        this.counters = new Counters(device.name(), device.provider() + " " + device.transport());
        this.onClose = onClose;
        this.options = options;
        this.invoker = options.threadingMode() == ThreadingMode.INVOKER;
        this.link = link;
        this.activeMtu = activeMtu;
        this.gids = gidsOf(link.localEndpoints());
        this.events = new AsyncEvents(this);
        this.gidsReadAt = System.nanoTime();
        this.engine = new Engine(this, clock, transport);
        this.cm = engine.transport.connectionManager();
        this.limitations = engine.transport.limitations();
        if (!invoker) {
            running = true;
            thread = Thread.ofPlatform().daemon().name("jrdma-" + device.name() + "-engine").unstarted(this::runEngine);
            engine.thread = thread;
            thread.start();
        }
        ContextEvent.opened(this);
        Fallbacks.LOG.log(System.Logger.Level.DEBUG, () -> "opened " + this);
    }

    private void runEngine() {
        Idler idler = new Idler(options.idleStrategy(), engine);
        while (running) {
            int work;
            try {
                work = engine.doWork();
            } catch (RuntimeException e) {
                counters.increment(Counter.ENGINE_ERRORS);
                work = 1;
                // a bug or a broken invariant: said loudly the first time, then counted (engine_errors)
                Fallbacks.LOG.log(counters.get(Counter.ENGINE_ERRORS) == 1 ? System.Logger.Level.WARNING
                        : System.Logger.Level.DEBUG, "the engine of " + this + " failed a duty cycle", e);
            }
            idler.idle(work);
        }
    }

    /** Runs {@code r} on the engine thread and waits for it; inline in INVOKER mode or on the engine thread. */
    /**
     * Tells a QP of this context that its peer's responder ACKs packets that did not ask for an
     * ACK by itself (a jrdma peer: the connection manager negotiates it). Its requester then asks
     * for ACKs only where a completion or send-queue room waits on one. Call before RTS.
     */
    public void peerAcksUnrequested(QueuePair qp, boolean on) {
        if (!(qp instanceof Qp q) || q.context != this) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the QP does not belong to this device context");
        }
        control(() -> engine.transport.peerAcksUnrequested(q, on));
    }

    public void control(Runnable r) {
        if (invoker) {
            controlInvoker(r);
            return;
        }
        if (!running || Thread.currentThread() == thread) {
            synchronized (this) {
                r.run();
            }
            return;
        }
        ControlTask t = new ControlTask(r, Thread.currentThread());
        engine.controlQueue.add(t);
        LockSupport.unpark(thread);
        engine.transport.wake(); // an engine that waits on its transport's own wake-up (shm's futex) too
        long deadline = System.nanoTime() + CONTROL_TIMEOUT_NANOS;
        while (!t.done) {
            if (System.nanoTime() - deadline > 0) {
                throw new RdmaException(Errno.ETIMEDOUT, "the engine thread did not run a control operation within 10 s");
            }
            LockSupport.parkNanos(t, 100_000);
        }
        if (t.error != null) {
            throw t.error;
        }
    }

    /**
     * INVOKER: runs {@code r} holding the engine's claim ({@link Engine#tryDrive}), so that it never overlaps a duty
     * cycle or a post of another thread: a QP's reset or destroy may unmap the memory of the peer it let go (shared
     * memory), which a thread inside a duty cycle may be reading at that moment. The thread that drives the engine
     * runs it at once (a control operation from inside a duty cycle or a post); another thread takes the claim, or,
     * while a thread holds it, queues the operation, which that thread's next duty cycle runs, and takes the claim
     * itself when it comes free first.
     */
    private void controlInvoker(Runnable r) {
        if (engine.drivenByCaller()) {
            synchronized (this) {
                r.run();
            }
            return;
        }
        if (engine.tryDrive()) {
            try {
                synchronized (this) {
                    r.run();
                }
            } finally {
                engine.endDrive();
            }
            return;
        }
        ControlTask t = new ControlTask(r, Thread.currentThread());
        engine.controlQueue.add(t);
        long deadline = System.nanoTime() + CONTROL_TIMEOUT_NANOS;
        while (!t.done) {
            if (engine.tryDrive()) {
                try {
                    synchronized (this) {
                        engine.runControl(); // this one, and any other thread's queued meanwhile
                    }
                } finally {
                    engine.endDrive();
                }
                continue;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new RdmaException(Errno.ETIMEDOUT, "the thread driving this INVOKER context's engine held it for"
                        + " 10 s without a duty cycle, so a control operation could not run; let it poll, or stop it");
            }
            LockSupport.parkNanos(t, 50_000);
        }
        if (t.error != null) {
            throw t.error;
        }
    }

    /**
     * Waits up to 5 s for the engine thread to end, through interrupts (an interrupted closer, as an executor's
     * worker after {@code shutdownNow}, must not free what the engine still reads); the interrupt is kept.
     *
     * @return true when it ended
     */
    private static boolean awaitEnd(Thread t) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        boolean interrupted = false;
        while (t.isAlive()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                t.join(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return !t.isAlive();
    }

    /** INVOKER close: takes the engine's claim and keeps it (5 s at most). @return true when taken */
    private boolean claimForClose() {
        if (engine.drivenByCaller()) {
            engine.keepClaim(); // closed from inside a duty cycle or a post: nothing else runs it now, nor after
            return true;
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (!engine.tryDrive()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.onSpinWait();
        }
        engine.keepClaim(); // for good: a later poll or post of any thread finds it taken and does nothing
        return true;
    }

    /** A control operation queued for the engine thread. */
    public static final class ControlTask {
        private final Runnable body;
        private final Thread caller;
        volatile boolean done;
        RuntimeException error;

        ControlTask(Runnable body, Thread caller) {
            this.body = body;
            this.caller = caller;
        }

        void run() {
            try {
                body.run();
            } catch (RuntimeException e) {
                error = e;
            }
            done = true; // release: publishes error to the waiting caller
            LockSupport.unpark(caller);
        }
    }

    @Override
    public Device device() {
        return device;
    }

    @Override
    public DeviceOptions options() {
        return options;
    }

    public Mtu activeMtu() {
        return activeMtu;
    }

    private List<Gid> gidsOf(List<Endpoint> eps) {
        List<Gid> g = new ArrayList<>();
        for (Endpoint e : eps) {
            boolean open = link.isOpen(e.linkIndex());
            g.add(open ? Gid.of(e.socketAddress().getAddress()) : ZERO_GID);
        }
        return List.copyOf(g);
    }

    /**
     * Follows the interface's addresses, as rxe's GID table follows netdev events: a new address
     * gets a new GID index (and a socket on this context's port); a vanished one leaves an empty
     * (all-zero) entry so that other indices keep their meaning. Control path, at most every 0.5 s;
     * the transport decides (not for contexts opened on an explicit address list).
     */
    private List<Gid> currentGids() {
        synchronized (this) {
            long now = System.nanoTime();
            if (now - gidsReadAt < GID_REFRESH_NANOS || closed) {
                return gids;
            }
            gidsReadAt = now;
            if (engine.transport.refreshAddresses()) {
                gids = gidsOf(link.localEndpoints());
            }
            return gids;
        }
    }

    /** Forces the next GID query to re-read the interface's addresses. */
    public void refreshGidsNow() {
        synchronized (this) {
            gidsReadAt = System.nanoTime() - GID_REFRESH_NANOS;
        }
        currentGids();
    }

    @Override
    public PortAttr queryPort() {
        List<Gid> gids = currentGids();
        boolean up = device.isUp();
        synchronized (this) {
            if (portWasUp && !up) {
                control(() -> engine.counters.increment(Counter.LINK_DOWNED)); // counters: engine thread
            }
            portWasUp = up;
        }
        return new PortAttr(up ? PortAttr.PortState.ACTIVE : PortAttr.PortState.DOWN, Mtu.MTU_4096,
                activeMtu, gids, udpPort(), "Ethernet", limitations);
    }

    /** @return the UDP port this context receives on */
    public int udpPort() {
        return link.localEndpoints().getFirst().port();
    }

    @Override
    public Gid gid(int index) {
        List<Gid> gids = currentGids();
        if (index < 0 || index >= gids.size()) {
            throw new RdmaException(Errno.EINVAL, "GID index " + index + " outside the table of " + gids.size()
                    + " entries " + gids);
        }
        return gids.get(index);
    }

    @Override
    public int gidIndexOf(Gid gid) {
        return gid.equals(ZERO_GID) ? -1 : currentGids().indexOf(gid);
    }

    Endpoint localEndpoint(int sgidIndex) {
        if (gid(sgidIndex).equals(ZERO_GID)) {
            throw new RdmaException(Errno.EINVAL, "GID index " + sgidIndex + " is empty: its address left the interface");
        }
        return link.localEndpoints().get(sgidIndex);
    }

    Endpoint remoteEndpoint(AddressVector av, Endpoint local) {
        InetAddress a = av.dgid().toInetAddress();
        if (a instanceof Inet6Address v6 && v6.isLinkLocalAddress()
                && local.socketAddress().getAddress() instanceof Inet6Address l6 && l6.getScopeId() != 0) {
            try {
                a = Inet6Address.getByAddress(null, v6.getAddress(), l6.getScopeId());
            } catch (UnknownHostException e) {
                throw new RdmaException(Errno.EINVAL, "bad link-local GID " + av.dgid(), e);
            }
        }
        return Endpoint.of(a, av.udpPort());
    }

    /** @return true when the transport has memory windows (queryDevice's MEM_WINDOW) */
    public boolean hasMemoryWindows() {
        return queryDevice().has(io.jrdma.verbs.DeviceCap.MEM_WINDOW);
    }

    @Override
    public synchronized ProtectionDomain allocPd() {
        checkOpen();
        Pd pd = new Pd(this);
        children.add(pd);
        return pd;
    }

    @Override
    public java.lang.foreign.MemorySegment allocateBuffer(long byteSize, long byteAlignment,
            java.lang.foreign.Arena arena) {
        checkOpen();
        java.util.Objects.requireNonNull(arena, "arena");
        if (byteSize < 1 || byteAlignment < 1 || Long.bitCount(byteAlignment) != 1) {
            throw new RdmaException(Errno.EINVAL, "allocateBuffer needs a size of at least 1 byte and a power-of-two"
                    + " alignment, not size " + byteSize + " and alignment " + byteAlignment);
        }
        return engine.transport.allocateBuffer(byteSize, byteAlignment, arena);
    }

    @Override
    public synchronized CompletionChannel createCompletionChannel() {
        checkOpen();
        Channel ch = new Channel(this);
        children.add(ch);
        return ch;
    }

    @Override
    public synchronized CompletionQueue createCq(int cqe, CompletionChannel channel) {
        checkOpen();
        if (cqe < 1 || cqe > MAX_CQE) {
            throw new RdmaException(Errno.EINVAL, "CQ size must be 1.." + MAX_CQE + ", not " + cqe);
        }
        Channel ch = null;
        if (channel != null) {
            if (!(channel instanceof Channel c) || !children.contains(c)) {
                throw new RdmaException(Errno.EINVAL, "the completion channel belongs to another device context");
            }
            ch = c;
            ch.users++;
        }
        Cq cq = new Cq(this, cqe, ch);
        children.add(cq);
        return cq;
    }

    public Qp createQp(Pd pd, QpInitAttr attr, Cq scq, Cq rcq) {
        Qp[] made = new Qp[1];
        control(() -> {
            int qpn = newQpn();
            Qp qp = engine.transport.newQp(pd, qpn, attr, scq, rcq);
            qp.stats = counters.takeQpSlot(qpn);
            engine.add(qp);
            made[0] = qp;
        });
        synchronized (this) {
            scq.users++;
            rcq.users++;
        }
        return made[0];
    }

    private int srqs;

    /** An SRQ is made: refused with EAGAIN beyond {@code max} (queryDevice's max_srq), as ibv_create_srq. */
    synchronized void srqCreated(int max) {
        if (srqs >= max) {
            throw new RdmaException(Errno.EAGAIN, "the context has " + srqs + " SRQs, queryDevice's max_srq; destroy one"
                    + " first");
        }
        srqs++;
    }

    synchronized void srqDestroyed() {
        srqs--;
    }

        /** Engine thread: a random 24-bit QPN ≥ 0x11, unused, not one of the last 4096 freed. */
    private int newQpn() {
        for (int attempt = 0; attempt < 10_000; attempt++) {
            int q = 0x11 + qpnRandom.nextInt(0xFFFFFF - 0x11);
            if (engine.qps.containsKey(q)) {
                continue;
            }
            boolean recent = false;
            for (int f : freedQpns) {
                recent |= f == q;
            }
            if (!recent) {
                return q;
            }
        }
        throw new RdmaException(Errno.ENOMEM, "no free QP number");
    }

    void qpnFreed(int qpn) {
        freedQpns[freedNext] = qpn;
        freedNext = (freedNext + 1) % freedQpns.length;
    }

    @Override
    public int progress() {
        if (!invoker || !engine.tryDrive()) {
            return 0; // DEDICATED: the engine thread runs it; INVOKER: another thread drives it at this moment
        }
        try {
            return engine.doWork();
        } finally {
            engine.endDrive();
        }
    }

    /**
     * INVOKER: {@link #progress} for a poll of one completion from {@code cq} ({@link Engine#pollInto}).
     *
     * @return true when {@code wc} holds a completion the transport took straight into it
     */
    boolean progressInto(Cq cq, io.jrdma.verbs.WorkCompletion wc) {
        if (!engine.tryDrive()) {
            return false; // another thread drives it at this moment
        }
        try {
            return engine.pollInto(cq, wc);
        } finally {
            engine.endDrive();
        }
    }

    @Override
    public boolean remoteWritesNeedProgress() {
        return invoker && engine.transport.remoteWritesNeedEngine();
    }

    /** Work requests per QP queue ({@link Pd#createQp} refuses deeper queues). */
    public static final int MAX_QP_WR = 1 << 15;
    /** Scatter/gather entries per request ({@link Pd#createQp} refuses more). */
    public static final int MAX_SGE = 32;
    /** Entries per CQ ({@link #createCq} refuses more). */
    public static final int MAX_CQE = 1 << 22;
    /** QPs per context: the 24-bit QP number space above the reserved numbers. */
    public static final int MAX_QP = 0xFFFFFF - 0x11;

    /**
     * {@inheritDoc} The limits the core enforces; the transport adds its own part
     * ({@link Transport#deviceAttr}: QP types, SRQs, windows, address handles, capability flags).
     */
    @Override
    public DeviceAttr queryDevice() {
        checkOpen();
        DeviceAttr a = deviceAttr;
        if (a == null) { // made once: the limits do not change
            // keys: regions and windows share KeyTable's 24-bit indices
            DeviceAttr base = new DeviceAttr(device.provider() + " (jrdma)", 0, 0, Long.MAX_VALUE, 4096, 0, 0, 0,
                    MAX_QP, MAX_QP_WR, DeviceCap.RC_RNR_NAK_GEN | DeviceCap.PORT_ACTIVE_EVENT, MAX_SGE, MAX_SGE,
                    Integer.MAX_VALUE, MAX_CQE, KeyTable.MAX_INDEX, Integer.MAX_VALUE, 255, Integer.MAX_VALUE, 255,
                    DeviceAttr.AtomicCap.HCA, 0, 0, 0, 0, 0, 1, 1, java.util.Set.of(io.jrdma.verbs.QpType.RC));
            a = engine.transport.deviceAttr(base);
            deviceAttr = a;
        }
        return a;
    }

    @Override
    public boolean pollAsyncEvent(io.jrdma.verbs.AsyncEvent event) {
        java.util.Objects.requireNonNull(event, "event");
        return events.poll(event);
    }

    @Override
    public boolean awaitAsyncEvent(io.jrdma.verbs.AsyncEvent event, java.time.Duration timeout) {
        java.util.Objects.requireNonNull(event, "event");
        java.util.Objects.requireNonNull(timeout, "timeout");
        return events.await(event, timeout);
    }

    @Override
    public Map<String, Long> counters() {
        Map<String, Long> m = counters.snapshot();
        engine.transport.addCounters(m);
        return m;
    }

    /**
     * @return how this context's RoCE packets leave: batched ({@code sendmmsg}, UDP GSO) or one
     *         send per packet, with the reason; null when its transport has no such choice (iWARP)
     */
    public String transmitMode() {
        return engine.transport.transmitMode();
    }

    /** @return one counter's value */
    public long counter(Counter c) {
        return counters.get(c);
    }

    @Override
    public ConnectionManager connectionManager() {
        return cm;
    }

    @Override
    public ConnectionManager rdmaCm() {
        ConnectionManager cm = engine.transport.rdmaCm();
        return cm != null ? cm : DeviceContext.super.rdmaCm();
    }

    public synchronized void release(Object child) {
        children.remove(child);
    }

    private void checkOpen() {
        if (closed) {
            throw new RdmaException(Errno.EINVAL, "the device context is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (!children.isEmpty()) {
                throw new RdmaException(Errno.EBUSY, "the device context still has " + children.size()
                        + " PDs, CQs or channels; close them first");
            }
            closed = true;
        }
        running = false;
        engine.stopping = true;
        // no thread may be inside the engine when the transport lets its resources go (shared memory unmaps its
        // segments, which a duty cycle reads): the engine thread has ended, or, INVOKER, this thread holds the claim
        // for good (a later poll or post finds it taken and does nothing)
        boolean engineIdle;
        if (thread != null) {
            LockSupport.unpark(thread);
            engine.transport.wake(); // an engine that waits on its transport's own wake-up (shm's futex, up to 20 ms) too
            engineIdle = awaitEnd(thread);
        } else {
            engineIdle = !invoker || claimForClose();
        }
        if (engineIdle) {
            engine.transport.close();
        } else {
            Fallbacks.LOG.log(System.Logger.Level.WARNING, "closing " + this + ": "
                    + (thread != null ? "its engine thread did not end" : "another thread kept driving its engine")
                    + " within 5 s; the transport's memory and descriptors are left as they are (freeing them under"
                    + " a running engine could crash the process)");
        }
        link.close();
        counters.close();
        ContextEvent.closed(this);
        onClose.accept(this);
        Fallbacks.LOG.log(System.Logger.Level.DEBUG, () -> "closed " + this);
    }

    @Override
    public String toString() {
        return device.name() + " context (" + engine.transport.describe() + ", " + options.threadingMode()
                + ")";
    }

    public static List<InetAddress> interfaceAddresses(String netdev) {
        try {
            NetworkInterface ni = NetworkInterface.getByName(netdev);
            if (ni == null) {
                return List.of();
            }
            return ni.inetAddresses().toList();
        } catch (SocketException e) {
            return List.of();
        }
    }
}

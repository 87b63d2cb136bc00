package io.jrdma.engine.shm;

import io.jrdma.engine.cm.TcpConnectionManager;
import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Cq;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Idler;
import io.jrdma.engine.core.LocalOps;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.Pd;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.core.RecvWqe;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.core.Srq;
import io.jrdma.engine.core.Transport;
import io.jrdma.engine.core.Wqe;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceCap;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The shared-memory transport (docs/shm-design.md). One-sided operations are done by the
 * initiator's engine on the target's memory, mapped into this process: a WRITE or READ is a copy,
 * an atomic a CPU atomic on the target's word, after the checks a responder makes (the target's
 * published key entry: key byte, PD of the target QP, access, bounds). The target runs nothing.
 * SENDs go through an inbound ring of the receiving QP in the receiver's control segment; the
 * receiver's engine places them in posted receives and writes each slot's result (done, RNR, a
 * NAK) back for the sender, whose SEND completes when the receiver consumed it.
 *
 * <p>Data path: no allocation, no lock, no system call (a peer's buffer is mapped on first access
 * only, and a peer's liveness is checked every {@value #LIVENESS_NANOS} ns).
 */
final class ShmTransport implements Transport {
    static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /**
     * This process's whole address space as one segment, for the data path's accesses by address to mapped control
     * segments (this context's and its peers') and to peers' buffers. A constant: the JIT folds the segment's own
     * checks (its bounds, scope and type), which for these global-scope mappings only repeated the bounds this
     * transport checks itself: the offsets in a control segment come from indices checked against its layout,
     * and a key's range lies inside its buffer's mapping ({@link #cacheKey}). docs/shm-design.md, "The direct path".
     */
    static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    /** how often the engine checks that each peer process still lives (poll of its pidfd, else {@code kill(pid, 0)}) */
    static final long LIVENESS_NANOS = 20_000_000L;
    /** the longest an idle engine with no peer sleeps unless woken (nothing needs its clock then: a bound, not a timer) */
    static final long NO_PEER_PARK_NANOS = 1_000_000_000L;
    /** how long a deregistration waits for peers' copies in progress on the region to end */
    static final long DRAIN_NANOS = 1_000_000_000L;
    private static final int PENDING = -1;
    private static final WcStatus[] STATUS = WcStatus.values();
    private static final AtomicLong PD_IDS = new AtomicLong();

    final Engine engine;
    final Context context;
    final int pid;
    final int ctrlFd;
    private final long ctrlAddr;
    final MemorySegment ctrl;
    private final TcpConnectionManager cm;
    private final ShmQp[] slots = new ShmQp[Ctrl.MAX_QPS];
    private int slotHigh;
    /** QP entries ever used (only grows; read by {@link #withdraw} on any thread): peers' held words lie below it */
    private volatile int qpEntries;
    private final Map<Pd, Long> pdIds = new ConcurrentHashMap<>();
    private final Map<Long, Peer> peers = new java.util.HashMap<>();
    private Peer[] peerList = new Peer[0];
    /** held while a key's entry is written or withdrawn (control path; REG_MR and LOCAL_INV on the engine thread) */
    private final Object entries = new Object();
    private final Arena scratchArena = Arena.ofShared();
    private final MemorySegment callState = Native.callState(scratchArena);
    private final MemorySegment timespec = scratchArena.allocate(16, 8);
    private final MemorySegment pollFd = scratchArena.allocate(8, 8);
    private long nextLivenessCheck;
    /** duty cycles until the clock is read for the liveness check (a sleep ends the countdown) */
    private int livenessTicks;
    static final int LIVENESS_TICKS = 1024;
    /** scan every ring in the next cycle even if no peer flagged input (a budget ran out, a QP began to receive) */
    private boolean rescan = true;
    /**
     * The watched list: QPs with a receive posted, whose ring's next slot the duty cycle loads itself (its own
     * memory, one load each); their senders store no pending word (docs/shm-design.md, "Two-sided operations").
     */
    static final int WATCH_MAX = 8;
    private final ShmQp[] watchedQps = new ShmQp[WATCH_MAX];
    private int watchedCount;
    private static final int MASK = Ctrl.RING_SLOTS - 1;

    /**
     * Whether the contexts opened from now on hold by the initiator's own word ({@link Native#asymmetric}, unless a
     * test turns it off to run the locked holds): both ends of a connection must (docs/shm-design.md, "The
     * initiator's own hold").
     */
    static volatile boolean ownHoldForNewContexts = Native.asymmetric();
    /** this context's initiators hold by their own words, and it reads its partners' ({@link Ctrl#H_OWN_HOLD}) */
    final boolean ownHold;
    /** this context's id as its peers name it ({@code pid << 32 | fd} of its GID): a partner's {@link Ctrl#Q_DEST_ID} */
    private final long selfId;
    // the partners whose own hold words a withdrawal reads, by the slot of the QP connected to them; written by the
    // engine thread and read by a withdrawal, both under the entries lock, so a partner's mapping outlives the reads
    private final Peer[] partnerPeer = new Peer[Ctrl.MAX_QPS];
    private final int[] partnerQpn = new int[Ctrl.MAX_QPS];
    /** the partner's hold word here (an address through ALL), 0 until its QP is found in its directory */
    private final long[] partnerHold = new long[Ctrl.MAX_QPS];
    int partners; // package: tests read it
    private int partnerHigh;

    ShmTransport(Engine engine, int ctrlFd, long ctrlAddr) {
        this.engine = engine;
        this.context = engine.context;
        this.pid = Native.getpid();
        this.ctrlFd = ctrlFd;
        this.ctrlAddr = ctrlAddr;
        this.ctrl = MemorySegment.ofAddress(ctrlAddr).reinterpret(Ctrl.SIZE);
        this.ownHold = ownHoldForNewContexts;
        this.selfId = peerId(pid, ctrlFd);
        this.cm = new TcpConnectionManager(context, true);
        ctrl.set(ValueLayout.JAVA_INT, Ctrl.H_OWN_HOLD, ownHold ? 1 : 0); // before any peer maps the segment
        // before any peer maps the segment: whether this engine may sleep on its futex (peers read it once)
        ctrl.set(ValueLayout.JAVA_INT, Ctrl.H_MAY_SLEEP, context.invoker ? 0 : 1);
        // peers find published keys by rkey >>> 8 and can read them all: plain rxe keys, lkey = rkey
        context.keys.plain();
    }

    /** @return the GID of a context of process {@code pid} whose control segment is descriptor {@code fd} */
    static Gid gid(int pid, int fd) {
        byte[] g = {(byte) 0xfd, 'j', 'r', 'd', 'm', 'a', 's', 'h', 0, 0, 0, 0, 0, 0, 0, 0};
        java.nio.ByteBuffer.wrap(g).putInt(8, pid).putInt(12, fd);
        return Gid.of(g);
    }

    /** @return {pid, fd} of a shared-memory GID, or null when the GID is no shared-memory port's */
    static int[] parseGid(Gid gid) {
        byte[] g = gid.raw();
        byte[] prefix = gid(0, 0).raw();
        for (int i = 0; i < 8; i++) {
            if (g[i] != prefix[i]) {
                return null;
            }
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(g);
        return new int[] {b.getInt(8), b.getInt(12)};
    }

    long pdId(Pd pd) {
        Long id = pdIds.get(pd); // a look-up first: the capturing function below is an allocation per call
        return id != null ? id : pdIds.computeIfAbsent(pd, p -> PD_IDS.incrementAndGet() | (long) pid << 32);
    }

    // ------------------------------------------------------------------ memory (control path)

    @Override
    public MemorySegment allocateBuffer(long byteSize, long byteAlignment, Arena arena) {
        return SharedBuffers.allocate(byteSize, byteAlignment, arena);
    }

    private static boolean remote(int access) {
        return (access & (Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0;
    }

    @Override
    public void registered(Mr mr) {
        if (!remote(mr.access)) {
            return; // local use only: any native memory will do
        }
        if (SharedBuffers.find(mr.address, mr.length) == null) {
            // memory the application allocated itself: peers reach it by cross-memory attach (process_vm_readv and
            // process_vm_writev), a copy by the kernel, which can do no atomic (docs/shm-design.md, "Memory")
            String why = attachUnavailable();
            if (why != null) {
                throw new RdmaException(Errno.EINVAL, "the segment at 0x" + Long.toHexString(mr.address) + " ("
                        + mr.length + " bytes) is not shared memory, and peers of " + context.device.name()
                        + " cannot reach it by cross-memory attach here (" + why + "): allocate it with"
                        + " DeviceContext.allocateBuffer(size, alignment, arena), or register it without remote access");
            }
            if ((mr.access & Access.REMOTE_ATOMIC) != 0) {
                throw new RdmaException(Errno.EINVAL, "the segment at 0x" + Long.toHexString(mr.address) + " ("
                        + mr.length + " bytes) is not shared memory: peers of " + context.device.name()
                        + " reach it by cross-memory attach, a copy through the kernel, which cannot do a remote"
                        + " atomic: allocate it with DeviceContext.allocateBuffer(size, alignment, arena) for"
                        + " REMOTE_ATOMIC, or register it with REMOTE_READ and REMOTE_WRITE only");
            }
        }
        if ((mr.key >>> 8) >= Ctrl.MAX_KEYS) {
            throw new RdmaException(Errno.ENOMEM, context.device.name() + " publishes at most " + (Ctrl.MAX_KEYS - 1)
                    + " keys with remote access; deregister some regions first");
        }
        publish(mr);
    }

    @Override
    public void deregistering(Mr mr) {
        withdrawCounted(mr.key);
    }

    /** {@link #withdraw} under the entries lock, counted in {@link #withdrawing} before the lock is taken. */
    private void withdrawCounted(int key) {
        withdrawing.incrementAndGet();
        try {
            synchronized (entries) {
                withdraw(key);
            }
        } finally {
            withdrawing.decrementAndGet();
        }
    }

    /**
     * Withdrawals under way or about to take the entries lock, any thread, counted before the lock is taken (a
     * withdrawal of memory reached by cross-memory attach keeps it while a live holder holds): while any is, the
     * engine's liveness check leaves the lingering list alone rather than wait for the lock ({@link #pruneLingering})
     */
    private final java.util.concurrent.atomic.AtomicInteger withdrawing = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Publishes {@code mr}'s entry for peers (registration, REG_MR) or withdraws it (invalid, not shared, no
     * remote access). The entry's fields are written while its key is 0, then the key with a volatile store.
     */
    void publish(Mr mr) {
        int index = mr.key >>> 8;
        if (index >= Ctrl.MAX_KEYS) {
            return;
        }
        withdrawing.incrementAndGet();
        try {
            publishWithdrawn(mr, index);
        } finally {
            withdrawing.decrementAndGet();
        }
    }

    /** {@link #publish} under the entries lock: the entry withdrawn, then written again if {@code mr} grants remote access. */
    private void publishWithdrawn(Mr mr, int index) {
        synchronized (entries) {
            withdraw(mr.key);
            if (mr.isClosed() || mr.parent != null && mr.parent.isClosed() || mr.invalidated || !remote(mr.access)) {
                return; // a region being deregistered, or a window of one (its close set closed before this lock)
            }
            SharedBuffers.Buffer b = SharedBuffers.find(mr.lo, mr.span);
            if (b == null) {
                publishAttached(mr, index);
                return;
            }
            attachedKey[index] = false;
            long e = Ctrl.key(index);
            // the access bits peers test (the low 16: REMOTE_*), and a generation bumped by every publication,
            // so that the word of key and access read by an initiator differs from the one it cached its
            // fields under even when the same key comes back with another range (REG_MR after LOCAL_INV)
            int gen = ((ctrl.get(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS) >>> 16) + 1) & 0x7FFF;
            ctrl.set(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS, (mr.access & 0xFFFF) | gen << 16);
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_PD, pdId(mr.pd));
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_INODE, b.inode());
            ctrl.set(ValueLayout.JAVA_INT, e + Ctrl.K_FD, b.fd());
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_VA, mr.lo);
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN, mr.span);
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF, mr.lo - b.address());
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_BUFSIZE, b.size());
            ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_SERIAL, b.serial());
            ctrl.set(ValueLayout.JAVA_INT, e + Ctrl.K_QPN, mr.boundQpn + 1); // a type 2 window's QP, else 0: any
            INT.setVolatile(ctrl, e + Ctrl.K_KEY, mr.key); // release: the fields above are visible with the key
        }
    }

    /**
     * Under the entries lock, the entry withdrawn: publishes a region of memory that is not shared (the application
     * allocated it), which peers reach by cross-memory attach ({@link #attachedCopy}): in the key entry its word and
     * no descriptor ({@link Ctrl#K_FD} -1, inode 0); in the attach table, which only this process writes, the word
     * again, its PD, range, address here and serial; its access without REMOTE_ATOMIC (a kernel copy is no atomic:
     * such a request fails with REM_ACCESS_ERR). A registration of such
     * memory with REMOTE_ATOMIC is refused before ({@link #registered}); a fast registration (REG_MR) or a window may
     * still ask for it, and then gets the rest. Nothing is published without cross-memory attach or without a remote
     * access left: every remote access is refused then.
     */
    private void publishAttached(Mr mr, int index) {
        int access = mr.access & ~Access.REMOTE_ATOMIC;
        if (!remote(access) || attachUnavailable() != null) {
            return;
        }
        long e = Ctrl.key(index);
        int gen = ((ctrl.get(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS) >>> 16) + 1) & 0x7FFF;
        int accessWord = (access & 0xFFFF) | gen << 16;
        // of the key entry, initiators read the word (key, access) and the marker; the rest is the table's
        ctrl.set(ValueLayout.JAVA_INT, e + Ctrl.K_ACCESS, accessWord);
        ctrl.set(ValueLayout.JAVA_LONG, e + Ctrl.K_INODE, 0);
        ctrl.set(ValueLayout.JAVA_INT, e + Ctrl.K_FD, Ctrl.ATTACHED);
        // what an initiator believes: the attach table's entry, which only this process writes (any peer can write the
        // key entry above, and must not be able to aim another's cross-memory attach at this process's memory)
        long a = attachAddr + Ctrl.attach(index);
        ALL.set(ValueLayout.JAVA_LONG, a + Ctrl.A_PD, pdId(mr.pd));
        ALL.set(ValueLayout.JAVA_LONG, a + Ctrl.A_VA, mr.lo);
        ALL.set(ValueLayout.JAVA_LONG, a + Ctrl.A_LEN, mr.span);
        ALL.set(ValueLayout.JAVA_LONG, a + Ctrl.A_ADDR, mr.lo); // a region's VA is its address here
        ALL.set(ValueLayout.JAVA_INT, a + Ctrl.A_QPN, mr.boundQpn + 1);
        ALL.set(ValueLayout.JAVA_LONG, a + Ctrl.A_SERIAL, ++attachSerial);
        ALL.set(ValueLayout.JAVA_INT, a + Ctrl.A_WORD + 4, accessWord); // the key entry's word's layout: key, access
        INT.setVolatile(ALL, a + Ctrl.A_WORD, mr.key);
        attachedKey[index] = true;
        INT.setVolatile(ctrl, e + Ctrl.K_KEY, mr.key); // release: the fields above are visible with the key
    }

    /**
     * Memory reached by cross-memory attach: which key indices hold such a region now (this process's own record,
     * under the entries lock; the key entries' markers are peers' to write too)
     */
    private final boolean[] attachedKey = new boolean[Ctrl.MAX_KEYS];
    /** the attach table ({@link Ctrl#H_ATTACH_FD}): made with the first such region; 0 until then */
    private long attachAddr;
    /** the last publication's serial in the attach table (under the entries lock) */
    private long attachSerial;
    private int attachFd = -1;
    /** why the attach table could not be made (the kernel), once tried; null before or when it was */
    private String attachFailed;

    /**
     * Under the entries lock, or from {@link #registered}: makes the attach table if it is not there yet.
     *
     * @return why cross-memory attach cannot serve this context's regions, or null when it can
     */
    private String attachUnavailable() {
        if (!Native.crossMemoryAttach()) {
            return "the C library has no process_vm_readv/process_vm_writev";
        }
        if (!ownHold) {
            // a copy into the application's memory runs only under the initiator's own hold, whose holder the
            // withdrawal can name and wait for (docs/shm-design.md, "Cross-memory attach")
            return "this context holds keys with locked instructions: " + (Native.asymmetric()
                    ? "-Djrdma.shm.ownHold=off or a test" : Native.asymmetricReason());
        }
        synchronized (entries) {
            if (attachAddr == 0 && attachFailed == null) {
                try {
                    long[] t = Native.memfdOwnerWrites("jrdma-shm-attach", Ctrl.ATTACH_SIZE);
                    attachFd = (int) t[0];
                    attachAddr = t[1];
                    ALL.set(ValueLayout.JAVA_LONG, attachAddr + Ctrl.A_CTRL_INODE, Native.inode(ctrlFd)); // whose table
                    INT.setVolatile(ctrl, Ctrl.H_ATTACH_FD, attachFd + 1);
                } catch (RdmaException ex) {
                    attachFailed = ex.getMessage();
                }
            }
            return attachFailed;
        }
    }

    /**
     * Under the entries lock: makes the key's entry unreachable: key 0 (a volatile store), then waits until no peer
     * is inside a copy on it. Each takes, around its copy and before it reads the key, its own hold word (a
     * partner's: after a membarrier here, {@link #partnerHolds}), its destination QP's held word for the entry, or
     * else the entry's in-use count.
     */
    private void withdraw(int key) {
        int index = key >>> 8;
        if (index >= Ctrl.MAX_KEYS) {
            return;
        }
        long e = Ctrl.key(index);
        boolean attached = attachedKey[index]; // this process's record: the entry's marker is peers' to write too
        if (!attached && (int) INT.getVolatile(ctrl, e + Ctrl.K_KEY) == 0) {
            return; // (a peer can zero the key entry's word, not this record: such a region is always withdrawn here)
        }
        attachedKey[index] = false;
        if (attached) {
            long a = attachAddr + Ctrl.attach(index);
            INT.setVolatile(ALL, a + Ctrl.A_WORD, 0);
            LONG.setVolatile(ALL, a + Ctrl.A_SERIAL, 0L);
        }
        INT.setVolatile(ctrl, e + Ctrl.K_KEY, 0);
        if (partners > 0) {
            // every partner thread's hold store made before this point is visible below, and its key load after it
            // reads the 0 stored above: the other half of the pairing with target()'s plain store
            Native.membarrier();
        }
        long deadline = System.nanoTime() + DRAIN_NANOS;
        boolean interrupted = false;
        while ((int) INT.getVolatile(ctrl, e + Ctrl.K_IN_USE) != 0 || held(index) || partnerHolds(index, false)) {
            if (System.nanoTime() - deadline > 0) {
                if (attached && partnerHolds(index, true)) {
                    // memory reached by cross-memory attach is the application's own, which it may free and reuse once
                    // this returns: a copy that landed later would write into whatever lies there then. So the wait
                    // goes on while a live process holds the entry (a peer stopped inside its copy, SIGSTOP): it ends
                    // when the copy does or the holder dies (docs/shm-design.md, "Cross-memory attach"). The entries
                    // lock stays held: let go, another withdrawal of the index returned at once and the lingering
                    // list lost the holder (found in review)
                    java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
                    interrupted |= Thread.interrupted(); // a park returns at once while the flag is set
                    continue;
                }
                // a peer stopped or died inside a copy: the key is refused from now on; only its copy in flight can land
                engine.counters.increment(io.jrdma.engine.core.Counter.ENGINE_ERRORS);
                break;
            }
            Thread.onSpinWait();
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** the errno of {@link #partnerHolds}'s liveness checks (under the entries lock) */
    private final MemorySegment withdrawState = Native.callState(scratchArena);

    /** @return the former partners on the lingering list (tests) */
    int lingering() {
        synchronized (entries) {
            return lingerCount;
        }
    }

    /** former partners whose own hold word named memory reached by cross-memory attach when their QP let them go */
    private Peer[] lingerPeer = new Peer[4];
    private long[] lingerHold = new long[4];
    private int lingerCount;

    /**
     * Engine thread (the liveness check): takes off the lingering list each former partner whose word names no such
     * entry now or whose process is gone, and lets its mapping go when nothing else uses it.
     */
    private void pruneLingering() {
        if (lingerCount == 0 || withdrawing.get() != 0) {
            return; // (a withdrawal that keeps the lock for a live holder: the next check prunes)
        }
        Peer gone = null;
        synchronized (entries) {
            for (int i = lingerCount - 1; i >= 0; i--) {
                Peer p = lingerPeer[i];
                if (holdsAttached(p, (int) INT.getVolatile(ALL, lingerHold[i]))) {
                    continue;
                }
                lingerPeer[i] = lingerPeer[--lingerCount];
                lingerHold[i] = lingerHold[lingerCount];
                lingerPeer[lingerCount] = null;
                if (p.unlinger()) {
                    gone = p; // at most one a call: the next check takes the rest
                    break;
                }
            }
        }
        if (gone != null) {
            dropPeer(peerId(gone.pid, gone.ctrlFd), gone);
        }
    }

    /**
     * Engine thread: whether own hold word value {@code v} of peer {@code p} names an entry of memory reached by
     * cross-memory attach, with {@code p}'s process alive: a holder that keeps a former partner lingering.
     */
    private boolean holdsAttached(Peer p, int v) {
        return v > 0 && v < Ctrl.MAX_KEYS && attachedKey[v] && alive(p, pollFd, callState);
    }

    /** @return true while peer {@code p}'s process lives: its pidfd (a reused pid or a zombie is not it), else kill(pid, 0) */
    private boolean alive(Peer p, MemorySegment pfd, MemorySegment st) {
        return p.pidfd >= 0 ? !Native.exited(p.pidfd, pfd) : p.pid == pid || Native.alive(p.pid, st);
    }

    /** the pollfd of {@link #partnerHolds}'s pidfd checks (under the entries lock) */
    private final MemorySegment withdrawPollFd = scratchArena.allocate(8, 8);

    /**
     * Any thread ({@link #withdraw}): a scan of the QP entries' held words, volatile loads after the key's withdrawal.
     *
     * @return true while a peer's one-sided operation holds key entry {@code index} through one of them
     */
    private boolean held(int index) {
        for (int i = 0, n = qpEntries; i < n; i++) {
            if ((int) INT.getVolatile(ctrl, Ctrl.qp(i) + Ctrl.Q_HELD) == index) {
                return true;
            }
        }
        return false;
    }

    /**
     * Under the entries lock, after a membarrier ({@link #withdraw}): a scan of the partners' own hold words, and of
     * the former partners that linger (their QP let them go while their word named memory of cross-memory attach).
     *
     * @param live count only a holder whose process still lives (its pidfd, else kill(pid, 0)): the withdrawal's wait
     *        past its second for such memory; else every holder not known dead (the engine's liveness check)
     * @return true while a partner's one-sided operation holds key entry {@code index} by its own word
     */
    private boolean partnerHolds(int index, boolean live) {
        for (int i = 0; i < partnerHigh; i++) {
            Peer p = partnerPeer[i];
            if (p == null) {
                continue;
            }
            long h = partnerHold[i];
            if (h == 0 && (h = partnerHold[i] = holdOf(p, partnerQpn[i])) == 0) {
                continue; // its QP is not there (yet): it holds nothing
            }
            if ((int) INT.getVolatile(ALL, h) == index && holding(p, live)) {
                return true;
            }
        }
        for (int i = 0; i < lingerCount; i++) {
            if ((int) INT.getVolatile(ALL, lingerHold[i]) == index && holding(lingerPeer[i], live)) {
                return true;
            }
        }
        return false;
    }

    /** {@link #partnerHolds}: whether a word of {@code p}'s that names the entry counts (a process that is gone copies nothing). */
    private boolean holding(Peer p, boolean live) {
        return live ? alive(p, withdrawPollFd, withdrawState) : !p.dead;
    }

    /** @return the address here of the own hold word of QP {@code qpn} of peer {@code p}, or 0 when it has no such QP */
    private static long holdOf(Peer p, int qpn) {
        int i = qpIndex(p, qpn);
        return i < 0 ? 0 : p.ctrlAddr + Ctrl.hold(i);
    }

    /**
     * @return the index of QP {@code qpn} in peer {@code p}'s QP directory, or -1 when it has no such QP
     *         (allocation-free); only the entries the peer has used are searched ({@link Ctrl#H_QP_ENTRIES})
     */
    private static int qpIndex(Peer p, int qpn) {
        // acquire; release partner: the owner's store of the word before the QPN of each QP it makes
        int n = Math.min((int) INT.getAcquire(p.ctrl, Ctrl.H_QP_ENTRIES), Ctrl.MAX_QPS); // (a negative one: none)
        for (int i = 0; i < n; i++) {
            if ((int) INT.getVolatile(p.ctrl, Ctrl.qp(i) + Ctrl.Q_QPN) == qpn) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Engine thread, modify to RTR: QP {@code qp}'s partner goes on the list a withdrawal reads (both contexts
     * registered for membarrier), then its identity into the QP's entry (always: senders and initiators check that
     * it names them), where the partner finds it and may hold by its own word from then on.
     */
    private void addPartner(ShmQp qp, Peer p, long id) {
        if (ownHold && p.ownHold) { // else one end without a membarrier: the locked holds
            synchronized (entries) {
                partnerPeer[qp.slot] = p;
                partnerQpn[qp.slot] = qp.destQpn;
                partnerHold[qp.slot] = 0;
                partners++;
                partnerHigh = Math.max(partnerHigh, qp.slot + 1);
            }
        }
        LONG.setVolatile(ctrl, qp.dir + Ctrl.Q_DEST_ID, id);
        INT.setVolatile(ctrl, qp.dir + Ctrl.Q_DEST_QPN, qp.destQpn);
        nextGeneration(qp);
    }

    /**
     * Engine thread, after a change of the QP entry's fields that initiators check (state, access, partner, QPN):
     * raises its generation, so that an initiator that checked them at the old one checks them all again.
     */
    private void nextGeneration(ShmQp qp) {
        LONG.setVolatile(ctrl, qp.dir + Ctrl.Q_GEN, (long) LONG.getVolatile(ctrl, qp.dir + Ctrl.Q_GEN) + 1);
    }

    /**
     * Engine thread, before the QP lets its peer go (reset, destroy, another connection): the partner's identity
     * out of the QP's entry; then, for a partner on the list (its own holds), a membarrier and a wait until it holds
     * nothing by its own word (an operation that read the identity before it was cleared has its hold visible now),
     * and off the list.
     */
    private void dropPartner(ShmQp qp) {
        int s = qp.slot;
        Peer p = partnerPeer[s];
        if (p == null && ctrl.get(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_DEST_QPN) == 0) {
            return; // connected to no one
        }
        INT.setVolatile(ctrl, qp.dir + Ctrl.Q_DEST_QPN, 0);
        LONG.setVolatile(ctrl, qp.dir + Ctrl.Q_DEST_ID, 0L);
        nextGeneration(qp); // before the membarrier: a partner that saw the old generation has its hold visible after it
        if (p == null) {
            // a partner without own holds (one end without membarrier): its SEND holds this entry's held word, taken
            // with a CAS before its check of the name cleared above (volatile stores, then this volatile load)
            long deadline = System.nanoTime() + DRAIN_NANOS;
            while ((int) INT.getVolatile(ctrl, qp.dir + Ctrl.Q_HELD) == Ctrl.SEND_HOLD) {
                if (System.nanoTime() - deadline > 0) {
                    engine.counters.increment(io.jrdma.engine.core.Counter.ENGINE_ERRORS); // a sender stopped inside its store
                    break;
                }
                Thread.onSpinWait();
            }
            return;
        }
        Native.membarrier();
        long h = holdOf(p, partnerQpn[s]);
        long deadline = System.nanoTime() + DRAIN_NANOS;
        int v;
        boolean linger = false;
        while (h != 0 && !p.dead && (v = (int) INT.getVolatile(ALL, h)) != 0) {
            if (System.nanoTime() - deadline > 0) {
                // a copy into the application's own memory: off the list, no withdrawal would see its hold, and a
                // deregistration could return before it lands; it lingers on a list of its own instead, read by
                // withdrawals until its word names no such entry or its process is gone (pruneLingering), and the QP
                // goes on (docs/shm-design.md, "Cross-memory attach")
                linger = holdsAttached(p, v);
                engine.counters.increment(io.jrdma.engine.core.Counter.ENGINE_ERRORS); // a partner stopped inside a copy
                break;
            }
            Thread.onSpinWait();
        }
        synchronized (entries) {
            if (linger) {
                if (lingerCount == lingerPeer.length) {
                    lingerPeer = java.util.Arrays.copyOf(lingerPeer, lingerCount * 2);
                    lingerHold = java.util.Arrays.copyOf(lingerHold, lingerCount * 2);
                }
                lingerPeer[lingerCount] = p;
                lingerHold[lingerCount++] = h;
                p.lingers++; // its mapping stays while the word is read (releasePeer, pruneLingering)
            }
            partnerPeer[s] = null;
            partnerQpn[s] = 0;
            partnerHold[s] = 0;
            partners--;
            while (partnerHigh > 0 && partnerPeer[partnerHigh - 1] == null) {
                partnerHigh--;
            }
        }
    }

    /**
     * Engine thread: a region or a window changed by a local operation (REG_MR, LOCAL_INV, BIND_MW) or a peer's
     * SEND_WITH_INV: its entry follows (published again, or withdrawn when it grants nothing now).
     */
    private void republish(int key) {
        Mr m = context.keys.lookup(key);
        if (m != null) {
            publish(m);
        } else {
            withdrawCounted(key);
        }
    }

    // ------------------------------------------------------------------ QP life (engine thread)

    @Override
    public Qp newQp(Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
        if (init.type() != QpType.RC && init.type() != QpType.UC && init.type() != QpType.UD) {
            throw new RdmaException(Errno.EOPNOTSUPP, context.device.name() + " has RC, UC and UD QPs, not " + init.type());
        }
        int slot = -1;
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] == null) {
                slot = i;
                break;
            }
        }
        if (slot < 0) {
            throw new RdmaException(Errno.ENOMEM, context.device.name() + " has room for " + Ctrl.MAX_QPS
                    + " QPs per context; destroy one first");
        }
        ShmQp qp = new ShmQp(context, pd, qpn, init, sendCq, recvCq, slot);
        slots[slot] = qp;
        slotHigh = Math.max(slotHigh, slot + 1); // its ring is clean: a memfd's zeros, or cleared when its last user went
        if (slot >= qpEntries) {
            qpEntries = slot + 1; // before the QPN's volatile store below: no peer can hold the entry before it
        }
        // for peers that search the directory (qpIndex), before that store too: one that finds the QPN found it below
        // this; stored at every QP's making, so a word a peer lowered is put right by the next
        INT.setRelease(ctrl, Ctrl.H_QP_ENTRIES, qpEntries);
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_STATE, QpState.RESET.ordinal());
        ctrl.set(ValueLayout.JAVA_LONG, qp.dir + Ctrl.Q_PD, pdId(pd));
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_ACCESS, 0);
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_ERROR, 0);
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_WATCHED, 0);
        ctrl.set(ValueLayout.JAVA_LONG, qp.dir + Ctrl.Q_RING, qp.ring);
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_DEST_QPN, 0);
        // a UD QP's mark for its senders, for its life (no partner is ever named there): RC and UC senders find no
        // partner in it, UD senders nothing else
        ctrl.set(ValueLayout.JAVA_LONG, qp.dir + Ctrl.Q_DEST_ID, qp.ud ? Ctrl.UD_MARK : 0L);
        INT.setVolatile(ctrl, Ctrl.hold(slot), 0);
        clearResponses(qp);
        INT.setVolatile(ctrl, qp.dir + Ctrl.Q_QPN, qpn);
        return qp;
    }

    private void clearRing(ShmQp qp) {
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            INT.setVolatile(ctrl, qp.ring + (long) i * Ctrl.SLOT + Ctrl.S_SEQ, 0);
        }
    }

    /**
     * Zeroes the QP's response entry: when the QP is made (its entry may be a destroyed QP's) and when it connects
     * (RTR), not when it is reset or destroyed: a result stored just before stays readable by the sender that
     * waits for it (a peer that destroys its QP right after its last receive, as perftest's teardown does).
     */
    private void clearResponses(ShmQp qp) {
        LONG.setVolatile(ctrl, qp.resp + Ctrl.R_READ, 0L);
        LONG.setVolatile(ctrl, qp.resp + Ctrl.R_RESULT, 0L);
    }

    @Override
    public void checkModify(Qp qp, QpState from, QpState to) {
        if (to == QpState.RTR && from == QpState.INIT) {
            // the address vector comes with this modify; it is checked in modified()
        }
    }

    @Override
    public void modified(Qp q, QpAttr attr, QpState from, QpState to) {
        ShmQp qp = (ShmQp) q;
        if (to == QpState.RTR && from == QpState.INIT) {
            if (qp.ud) {
                udReady(qp);
            } else {
                connect(qp, attr);
            }
        }
        if (attr.has(QpAttr.RNR_RETRY) || to == QpState.RTS) {
            qp.rnrLeft = qp.rnrRetry;
        }
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_ACCESS, qp.accessFlags);
        ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_MIN_RNR, qp.minRnrTimer);
        INT.setVolatile(ctrl, qp.dir + Ctrl.Q_STATE, to.ordinal());
        nextGeneration(qp);
        rescan = true; // a ring the scan skipped while the QP did not receive may hold slots already
    }

    /**
     * Engine thread, modify to RTR: maps the peer named by the destination GID and looks for its QP. As a NIC
     * takes any address vector, a GID that names no live shm context or a QPN that its context does not have
     * is no error here: the QP's requests then find nothing to answer them and fail with RETRY_EXC_ERR.
     */
    private void connect(ShmQp qp, QpAttr attr) {
        if (qp.peer != null) {
            dropPartner(qp);
            releasePeer(qp);
        }
        qp.ownHold = false;
        qp.resetProgress(); // and the checks of the last connection's peer forgotten
        qp.ringUsed = true;
        clearResponses(qp); // a new connection: no result of an earlier one may match its sender's message numbers
        startRing(qp); // before the partner's name is published: every sender finds the base there
        qp.peerDir = -1;
        int[] who = parseGid(qp.av.dgid());
        if (who == null) {
            return;
        }
        long id = peerId(who[0], who[1]);
        Peer p = mapPeer(who, id);
        if (p == null) {
            return; // not reachable (gone, another user's): nothing will answer
        }
        p.attach(qp);
        qp.peer = p;
        qp.ownHold = ownHold && p.ownHold;
        qp.ownHoldAddr = ctrlAddr + Ctrl.hold(qp.slot);
        addPartner(qp, p, id);
        findPeerQp(qp);
    }

    /**
     * A connection's (or a UD QP's) ring starts anew: its positions from a random base, published as R_READ. A slot a
     * stalled sender of an earlier connection stores after the ring's clear (its hold given up on after DRAIN_NANOS)
     * is read only if its position's low 32 bits fall in the ring of positions read next when it lands, a chance of
     * 16 in 2^32, where from 0 it was the first message's (docs/shm-design.md, "Connections, peers and liveness").
     *
     * @return the base
     */
    private long startRing(ShmQp qp) {
        long base = java.util.concurrent.ThreadLocalRandom.current().nextLong() >>> 2;
        qp.ringBase = base;
        qp.ringRead = base;
        qp.ringReadPublished = base;
        LONG.setVolatile(ctrl, qp.resp + Ctrl.R_READ, base);
        return base;
    }

    /** Finds the peer QP's directory entry and inbound ring (allocation-free). @return false when it has no such QP */
    private static boolean findPeerQp(ShmQp qp) {
        int i = qpIndex(qp.peer, qp.destQpn);
        if (i < 0) {
            return false;
        }
        qp.peerDir = Ctrl.qp(i);
        // from the layout, not the entry's Q_RING word: the peer writes that word, and slots go where it says
        qp.peerRing = Ctrl.ring(i);
        qp.peerResp = Ctrl.resp(i);
        return true;
    }

    /**
     * The peer context {pid, fd} names, as mapped now: the mapping already there while the GID still names that context,
     * else a new one (a context closed, or its process died, and the GID names another now: the QPs that still use the
     * old mapping keep it until they let it go).
     *
     * @return the peer, or null when it cannot be reached (gone, another user's, not a control segment)
     */
    private Peer mapPeer(int[] who, long id) {
        Peer p = peers.get(id);
        if (p != null && p.stillAt()) {
            return p;
        }
        try {
            p = new Peer(who[0], who[1]);
        } catch (RdmaException e) {
            return null;
        }
        peers.put(id, p);
        Peer[] list = java.util.Arrays.copyOf(peerList, peerList.length + 1);
        list[peerList.length] = p;
        peerList = list; // every peer a QP uses, a stale one too: its process's death still reaches its QPs
        return p;
    }

    /** @return the id of the peer context of process {@code pid} and control descriptor {@code fd}: its GID's, a partner's Q_DEST_ID */
    private static long peerId(int pid, int fd) {
        return (long) pid << 32 | (fd & 0xFFFFFFFFL);
    }

    private void releasePeer(ShmQp qp) {
        Peer p = qp.peer;
        qp.peer = null;
        if (p != null) {
            letGo(p, qp);
        }
    }

    /** {@code qp} no longer uses peer {@code p}: unmapped when nothing else of this context does. */
    private void letGo(Peer p, ShmQp qp) {
        if (p.detach(qp)) {
            dropPeer(peerId(p.pid, p.ctrlFd), p);
        }
    }

    private void dropPeer(long id, Peer p) {
        peers.remove(id, p); // not a newer peer at the same GID
        Peer[] old = peerList;
        for (int i = 0; i < old.length; i++) {
            if (old[i] == p) {
                Peer[] list = java.util.Arrays.copyOf(old, old.length - 1);
                System.arraycopy(old, i + 1, list, i, old.length - 1 - i);
                peerList = list;
                break;
            }
        }
        p.unmap();
    }

    @Override
    public void enteredError(Qp q) {
        INT.setVolatile(ctrl, ((ShmQp) q).dir + Ctrl.Q_STATE, QpState.ERROR.ordinal());
        nextGeneration((ShmQp) q);
    }

    @Override
    public void flushed(Qp q) {
        ShmQp qp = (ShmQp) q;
        qp.sending = false;
        qp.retry = false;
        qp.receiving = false;
        qp.recv = null;
    }

    @Override
    public void reset(Qp q) {
        ShmQp qp = (ShmQp) q;
        if (qp.ud) {
            udReset(qp);
        }
        qp.resetProgress();
        dropPartner(qp); // first: a slot whose sender checked the partner's name before it was cleared is in by then
        releasePeer(qp);
        if (qp.ringUsed) {
            clearRing(qp);
            qp.ringUsed = false;
        }
        if (qp.destroyed) {
            INT.setVolatile(ctrl, qp.dir + Ctrl.Q_QPN, 0);
            slots[qp.slot] = null;
            while (slotHigh > 0 && slots[slotHigh - 1] == null) {
                slotHigh--;
            }
        } else {
            ctrl.set(ValueLayout.JAVA_INT, qp.dir + Ctrl.Q_ERROR, 0);
            INT.setVolatile(ctrl, qp.dir + Ctrl.Q_STATE, QpState.RESET.ordinal());
        }
        nextGeneration(qp); // a destroyed QP's too: the next QP in its entry starts past every generation it had
    }

    // ------------------------------------------------------------------ duty cycle (data path)

    @Override
    public int receive() {
        int work = 0;
        // peers store the pending word after writing a ring slot or an error request: with nothing flagged
        // there is nothing to scan; the word is cleared before the scan (volatile), so a slot written after
        // the scan passed it flags the next cycle
        if (rescan || (int) INT.getAcquire(ALL, ctrlAddr + Ctrl.H_PENDING) != 0) {
            rescan = false;
            INT.setVolatile(ctrl, Ctrl.H_PENDING, 0);
            work += scanRings();
        } else {
            work += pollWatched();
        }
        if (--livenessTicks <= 0) { // the clock only every LIVENESS_TICKS cycles: a read costs as much as a cycle
            livenessTicks = LIVENESS_TICKS;
            long now = engine.clock.nanoTime();
            if (now - nextLivenessCheck >= 0) {
                nextLivenessCheck = now + LIVENESS_NANOS;
                checkPeers();
            }
        }
        return work;
    }

    /** Engine thread: every QP's error request and inbound ring. @return the work done */
    private int scanRings() {
        int work = 0;
        for (int i = 0; i < slotHigh; i++) {
            ShmQp qp = slots[i];
            if (qp == null) {
                continue;
            }
            QpState s = qp.state;
            if (s == QpState.RESET || s == QpState.INIT || s == QpState.ERROR) {
                continue;
            }
            int req = (int) INT.getVolatile(ctrl, qp.dir + Ctrl.Q_ERROR);
            if (req != 0) {
                // a peer found a fatal error in its request to this QP (the NAK a responder would send): ours stops too
                context.events.raise(req - 1 == Ctrl.NAK_REMOTE_ACCESS ? AsyncEvent.Type.QP_ACCESS_ERR
                        : req - 1 == Ctrl.NAK_INVALID_REQUEST ? AsyncEvent.Type.QP_REQ_ERR : AsyncEvent.Type.QP_FATAL, qp);
                engine.enterError(qp);
                work++;
                continue;
            }
            int n = receiveRing(qp, Engine.QP_SEND_BUDGET);
            if (n == Engine.QP_SEND_BUDGET) {
                rescan = true; // the ring may hold more than one cycle's budget
            }
            work += n;
            track(qp, n > 0 && lastResult == Ctrl.DONE);
        }
        return work;
    }

    /**
     * The watched QPs' rings (the duty cycle when no peer flagged input): one load of the next slot's sequence per
     * QP, in this context's own memory. A QP that no longer receives (ERROR, RESET, destroyed) leaves the list.
     */
    private int pollWatched() {
        int work = 0;
        for (int i = watchedCount - 1; i >= 0; i--) { // backwards: unwatch moves the last entry into i
            ShmQp qp = watchedQps[i];
            QpState s = qp.state;
            if (qp.destroyed || s != QpState.RTS && s != QpState.RTR && s != QpState.SQD) {
                unwatch(qp);
                continue;
            }
            long pos = qp.ringRead;
            // acquire; release partner: the sender's store of the slot's sequence (its header, payload before it)
            if ((int) INT.getAcquire(ALL, ctrlAddr + qp.ring + (pos & MASK) * Ctrl.SLOT + Ctrl.S_SEQ) == seq(pos)) { // (low int)
                work += receiveRing(qp, Engine.QP_SEND_BUDGET);
                track(qp, false); // watched: nothing to do, unless an RNR just took it off
            }
        }
        return work;
    }

    /**
     * INVOKER, a poll of one completion from {@code cq} (empty) by the thread driving the engine: the next slot of a
     * watched QP that receives into {@code cq}, when it is a whole SEND or SEND_WITH_IMM of 1 to {@link Ctrl#INLINE}
     * bytes (in its header's line) for a receive of one SGE that its key lets it write, is placed and completed
     * straight into {@code wc} (docs/shm-performance.md, "The 8 B SEND ping-pong, ninth pass"). What {@link #place} does for
     * it happens here in the same order (the data, the receive's completion, then the sender's DONE) with the same
     * counters; anything else (a message of more than one slot or another opcode, a check that fails, a refused or
     * SRQ QP) is left in the ring for the duty cycle, whose checks and errors are the only ones.
     */
    @Override
    public boolean receiveInto(Cq cq, WorkCompletion wc) {
        for (int i = 0; i < watchedCount; i++) {
            ShmQp qp = watchedQps[i];
            if (qp.recvCq != cq) {
                continue;
            }
            long pos = qp.ringRead;
            long s = qp.ring + (pos & MASK) * Ctrl.SLOT;
            // acquire; release partner: the sender's store of the sequence, after the header and payload
            long seq = (long) LONG.getAcquire(ALL, ctrlAddr + s + Ctrl.S_SEQ);
            if (low(seq) == seq(pos)) {
                return placeInto(qp, pos, s, seq, wc);
            }
        }
        return false;
    }

    /** the flags a message {@link #placeInto} takes may carry besides these: SOLICITED, and IMM for SEND_WITH_IMM */
    private static final int WHOLE = Ctrl.F_FIRST | Ctrl.F_LAST;

    private boolean placeInto(ShmQp qp, long pos, long s, long seq, WorkCompletion wc) {
        long flagsLen = ALL.get(ValueLayout.JAVA_LONG, ctrlAddr + s + Ctrl.S_FLAGS_LEN);
        int len = high(flagsLen);
        RecvWqe r;
        if (!takesInto(qp, seq, low(flagsLen), len) || (r = qp.peekRecv()) == null || r.numSge != 1 || len > r.sgeLength[0]) {
            return false; // RNR, a scatter list or a length error, or a message this does not take: the duty cycle's
        }
        qp.recvOffset = 0; // as place() sets it for a first chunk
        if (!scatter(qp, r, s + Ctrl.S_INLINE, len)) { // its key checked, then the data (nothing copied on a refusal)
            return false; // the duty cycle completes it with LOC_PROT_ERR
        }
        // nothing fails from here on: as place() for a whole message, in its order
        long immMsg = ALL.get(ValueLayout.JAVA_LONG, ctrlAddr + s + Ctrl.S_IMM_MSG);
        qp.packetIn();
        long wrId = r.wrId;
        qp.recvDone();
        wc.set(wrId, WcStatus.SUCCESS, WcOpcode.RECV, 0, len, low(immMsg), wcFlags(low(flagsLen)), qp.qpn, qp.destQpn);
        respond(qp, high(immMsg), Ctrl.DONE); // after the receive's completion, as place() stores it
        placedInto(qp, pos, len);
        return true;
    }

    /**
     * @return whether {@link #placeInto} takes the slot of sequence word {@code seq}, flags and opcode {@code flagsOp}
     *         and chunk length {@code len} for {@code qp}: a whole SEND or SEND_WITH_IMM of 1 to {@link Ctrl#INLINE}
     *         bytes for this QP, which receives from its own queue, has no message in progress and refused none (so
     *         a slot marked {@link Ctrl#F_RETRY}, which only a refusing QP reads, is a message as any other: an RC
     *         sender's first since it connected carries the mark)
     */
    private static boolean takesInto(ShmQp qp, long seq, int flagsOp, int len) {
        QpState st = qp.state;
        int flags = flagsOp & 0xFF;
        int op = flagsOp >>> 8 & 0xFF;
        return !qp.destroyed && !qp.ud && (st == QpState.RTS || st == QpState.RTR || st == QpState.SQD) && !qp.receiving
                && !qp.refused && qp.srq == null && high(seq) == qp.qpn
                && (flags & (WHOLE | Ctrl.F_INV)) == WHOLE && len > 0 && len <= Ctrl.INLINE
                && (op == WrOpcode.SEND.ordinal() ? (flags & Ctrl.F_IMM) == 0
                        : op == WrOpcode.SEND_WITH_IMM.ordinal() && (flags & Ctrl.F_IMM) != 0);
    }

    /** @return the receive completion's flags for a message's slot flags */
    private static int wcFlags(int flags) {
        return ((flags & Ctrl.F_SOLICITED) != 0 ? WorkCompletion.SOLICITED : 0)
                | ((flags & Ctrl.F_IMM) != 0 ? WorkCompletion.WITH_IMM : 0);
    }

    /** receives completed straight into a poll ({@link #receiveInto}); engine thread; read by the tests */
    long receivedIntoPoll;
    /** SENDs written by their post behind SENDs in flight ({@link #directBehind}); engine thread; read by the tests */
    long sentBehind;

    /** {@link #placeInto}'s message is done: counted and consumed, as {@link #receiveRing} does it. */
    private void placedInto(ShmQp qp, long pos, int len) {
        receivedIntoPoll++;
        engine.counters.increment(qp.stats, QpCounter.RCVD_PKTS);
        engine.counters.add(qp.stats, QpCounter.RCVD_BYTES, len);
        qp.ringRead = pos + 1;
        lastResult = Ctrl.DONE;
        consumed(qp);
    }

    /** After slots of {@code qp}'s ring were read ({@link #receiveRing}, {@link #placeInto}): tells the sender. */
    private void consumed(ShmQp qp) {
        if (qp.ringRead - qp.ringReadPublished >= (qp.ud ? 1 : Ctrl.RING_SLOTS / 2)) {
            // every half ring, not per slot (the sender reads it only when its view of the ring is full: it never
            // waits for a slot the receiver read without saying so, since 16 written slots make 8 unpublished);
            // UD: per read (a datagram that finds the ring full is dropped, not held back);
            // release: every read of the slots comes before it; acquire partner: the sender's ring-room check
            qp.ringReadPublished = qp.ringRead;
            LONG.setRelease(ALL, ctrlAddr + qp.resp + Ctrl.R_READ, qp.ringRead);
        }
        if (qp.peer != null && qp.peer.maySleep) {
            VarHandle.fullFence(); // the result and R_READ before the look at the sender's sleeping flag
            wake(qp.peer.ctrl); // the sender may sleep until its SEND's result is in
        }
    }

    /**
     * Engine thread, after a receiving QP's ring was read: a QP with a receive posted (or a message in progress)
     * joins the watched list, and so does one whose last message was just placed into a receive (the queue may be
     * empty until the application's next post: an application that posts one receive at a time, after each
     * message, is then polled as one that keeps receives ahead), but only into a free place. It leaves the list
     * only when a message finds no receive (RNR, in receiveRing), when it stops receiving (pollWatched) or when a
     * QP with a receive needs its place.
     *
     * @param placed the last slot read was placed (DONE): the QP receives, whether or not a receive is left
     */
    private void track(ShmQp qp, boolean placed) {
        if (qp.watched) {
            return;
        }
        if (qp.receiving || qp.peekRecv() != null) {
            watch(qp);
        } else if (placed && watchedCount < WATCH_MAX) {
            watch(qp); // no other QP gives up its place for one with no receive posted now
        }
    }

    private void watch(ShmQp qp) {
        if (watchedCount == WATCH_MAX) {
            ShmQp idle = null;
            for (int i = 0; i < watchedCount && idle == null; i++) {
                ShmQp w = watchedQps[i];
                if (!w.receiving && w.peekRecv() == null) {
                    idle = w;
                }
            }
            if (idle == null) {
                return; // the rest go by the pending word
            }
            unwatch(idle);
        }
        watchedQps[watchedCount++] = qp;
        qp.watched = true;
        INT.setVolatile(ctrl, qp.dir + Ctrl.Q_WATCHED, 1);
    }

    /**
     * Takes the QP off the watched list: its senders store the pending word again. The flag's clear is a volatile
     * store, and the next cycle scans every ring: a sender that read the flag as 1 stored its slot's sequence
     * (volatile) before that read, so the scan after this store sees the slot (the Dekker pair of
     * docs/shm-design.md, "Memory ordering").
     */
    private void unwatch(ShmQp qp) {
        for (int i = 0; i < watchedCount; i++) {
            if (watchedQps[i] == qp) {
                watchedQps[i] = watchedQps[--watchedCount];
                watchedQps[watchedCount] = null;
                break;
            }
        }
        qp.watched = false;
        if (!qp.destroyed) { // a destroyed QP's entry may be another QP's by now
            INT.setVolatile(ctrl, qp.dir + Ctrl.Q_WATCHED, 0);
        }
        rescan = true;
    }

    /** A peer process that is gone: its QPs here move to ERROR (their requests are flushed). */
    private void checkPeers() {
        pruneLingering();
        checkRings();
        Peer[] list = peerList;
        for (Peer p : list) {
            if (p.dead || alive(p, pollFd, callState)) {
                continue;
            }
            p.dead = true;
            for (int i = 0; i < slotHigh; i++) {
                ShmQp qp = slots[i];
                if (qp != null && qp.ud) {
                    udForget(qp, p); // its datagrams to that context are dropped from now on (a new one there is mapped anew)
                    continue;
                }
                if (qp != null && qp.peer == p) {
                    // a hold it left in this QP's held word (it died inside a copy) holds nothing now: the QP's
                    // partner alone takes it (peerQpLive), and that process is gone; left, every withdrawal of
                    // that key index waited out its whole drain (1 s)
                    INT.setVolatile(ctrl, qp.dir + Ctrl.Q_HELD, 0);
                    if (qp.state != QpState.ERROR && qp.state != QpState.RESET) {
                        context.events.raise(AsyncEvent.Type.QP_FATAL, qp);
                        engine.enterError(qp);
                    }
                }
            }
        }
    }

    /**
     * Engine thread, with the liveness check: an RC sender with messages in flight whose receiver's R_READ lies outside
     * the positions this connection wrote (below where this QP found its position, or past its next one) lost its
     * ring: the receiver was reset and connected again alone (its positions start at a new random base) and will
     * never answer what was written before. As a NIC's responder that no longer expects the requester's PSNs, it
     * fails the SENDs in flight: RETRY_EXC_ERR ({@link #answers}), where the sender waited for ever before.
     */
    private void checkRings() {
        for (int i = 0; i < slotHigh; i++) {
            ShmQp qp = slots[i];
            if (qp == null || qp.uc || qp.ringLost || qp.ringGen < 0 || qp.inFlight() == 0 || qp.peer == null
                    || qp.peer.dead || qp.peerDir < 0) {
                continue;
            }
            long r = (long) LONG.getAcquire(ALL, qp.peer.ctrlAddr + qp.peerResp + Ctrl.R_READ);
            if (r - qp.ringStart < 0 || r - qp.ringWrite > 0) {
                qp.ringLost = true;
            }
        }
    }

    /** a refused message sent again: its first chunk, marked (the one slot a refused QP takes) */
    private static final int RETRY_FIRST = Ctrl.F_FIRST | Ctrl.F_RETRY;
    /** the flags that tell a message's chunks apart; the rest of a slot's flags and its opcode are the message's own */
    private static final int PER_CHUNK = Ctrl.F_FIRST | Ctrl.F_LAST | Ctrl.F_RETRY;

    /** Engine thread: what receiveRing did with the last slot it read (DONE, DISCARDED, RNR or a NAK). */
    private int lastResult;

    /** Engine thread: the receiver's side of the QP's inbound ring: places and completes arrived SENDs. */
    private int receiveRing(ShmQp qp, int budget) {
        int n = 0;
        while (n < budget) {
            long pos = qp.ringRead;
            long s = qp.ring + (pos & MASK) * Ctrl.SLOT;
            // acquire; release partner: the sender's store of the sequence, after the header and payload
            long seq = (long) LONG.getAcquire(ALL, ctrlAddr + s + Ctrl.S_SEQ); // sequence and QPN, one load
            if (low(seq) != seq(pos)) {
                break;
            }
            long flagsLen = ALL.get(ValueLayout.JAVA_LONG, ctrlAddr + s + Ctrl.S_FLAGS_LEN);
            int len = high(flagsLen);
            int result = high(seq) != qp.qpn ? Ctrl.DISCARDED // written for a QP that was in this place before
                    : qp.ud ? placeUd(qp, s, low(flagsLen), len)
                    : qp.refused && (low(flagsLen) & RETRY_FIRST) != RETRY_FIRST ? Ctrl.DISCARDED // behind a refused one
                    : Integer.compareUnsigned(len, Ctrl.CHUNK) > 0 ? malformed(qp, s, low(flagsLen)) // no sender's chunk
                    : place(qp, s, low(flagsLen), len);
            engine.counters.increment(qp.stats, QpCounter.RCVD_PKTS);
            if (result == Ctrl.DONE) {
                engine.counters.add(qp.stats, QpCounter.RCVD_BYTES, len);
            } else if (result != Ctrl.DISCARDED && !qp.ud) { // (UD answers nothing)
                engine.counters.increment(qp.stats, QpCounter.SENT_NAKS);
            }
            qp.ringRead = pos + 1;
            n++;
            lastResult = result;
            if (result == Ctrl.RNR && qp.watched) {
                unwatch(qp); // no receive: its sender flags its next messages (and RNR retries) by the pending word
            }
            if (result >= Ctrl.ERROR) {
                engine.enterError(qp);
                break;
            }
        }
        if (n > 0) {
            consumed(qp);
        }
        return n;
    }

    /**
     * Publishes the result of message {@code msg} for its sender (release, after the receive completed). Stored for
     * every message, not once for a batch (which the sender's reading, every result covering the messages before it,
     * would allow): the store travels while the receiver still works, and stored at a batch's end it made the 8 B
     * SEND ping-pong 13% slower (docs/shm-design.md, "Several SENDs in flight").
     */
    private void respond(ShmQp qp, int msg, int status) {
        LONG.setRelease(ALL, ctrlAddr + qp.resp + Ctrl.R_RESULT, word(msg, status)); // acquire partner: the sender's answers()
    }

    /**
     * A slot no sender writes (a chunk longer than a slot's payload or negative, a message whose total is not a
     * length), as a peer process that can write this context's rings may leave it: dropped, nothing of it copied
     * (a total is checked before the message's invalidation, if any), and counted ({@code rcvd_malformed}); the
     * message fails as an invalid request. Its receive (the one in progress, or the next posted one for a first
     * chunk, as a responder takes it before the length check) completes with LOC_LEN_ERR, the sender's message with
     * REM_INV_REQ_ERR, and the QP moves to ERROR.
     *
     * @return the NAK (ERROR + NAK_INVALID_REQUEST)
     */
    private int malformed(ShmQp qp, long s, int flagsOp) {
        engine.counters.increment(io.jrdma.engine.core.Counter.RCVD_MALFORMED);
        int msg = high(ALL.get(ValueLayout.JAVA_LONG, ctrlAddr + s + Ctrl.S_IMM_MSG));
        if (!qp.receiving && (flagsOp & Ctrl.F_FIRST) != 0) {
            qp.packetIn(); // a request arrived, as place() counts one
            RecvWqe r = qp.takeRecv();
            if (r != null) {
                qp.recv = r;
                qp.receiving = true;
            }
        }
        if (qp.receiving) {
            completeRecv(qp, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
        }
        respond(qp, msg, Ctrl.ERROR + Ctrl.NAK_INVALID_REQUEST);
        return Ctrl.ERROR + Ctrl.NAK_INVALID_REQUEST;
    }

    /** @return what was done with the slot: DONE, DISCARDED, RNR or a NAK (ERROR + syndrome) */
    private int place(ShmQp qp, long s, int flagsOp, int len) {
        long immMsg = ALL.get(ValueLayout.JAVA_LONG, ctrlAddr + s + Ctrl.S_IMM_MSG);
        int msg = high(immMsg);
        int flags = flagsOp & 0xFF;
        if ((flags & Ctrl.F_FIRST) != 0) {
            if (qp.refused) {
                if ((flags & Ctrl.F_RETRY) == 0) {
                    return Ctrl.DISCARDED; // written behind a refused message: the sender sends it again after it
                }
                qp.refused = false; // the refused message, sent again
            }
            if (qp.receiving && qp.uc && flagsFit(flags, flagsOp >>> 8 & 0xFF)) {
                // UC: a message that starts ends the one in progress, which is lost (its sender was reset in its
                // middle and connected again: "UC" in docs/shm-design.md); its receive takes this one
                abandonUc(qp);
            }
            if (qp.receiving || !flagsFit(flags, flagsOp >>> 8 & 0xFF)) {
                // a message begun while another is in progress, or flags its opcode never carries: no sender
                // writes that (it would complete the receive with a mix of two messages, or invalidate on a WRITE)
                return malformed(qp, s, flagsOp);
            }
            qp.packetIn();
            RecvWqe r = qp.takeRecv();
            if (r == null && qp.uc) {
                engine.counters.increment(io.jrdma.engine.core.Counter.UC_DROPPED_MSGS); // UC: no RNR, the message is lost
                return Ctrl.DISCARDED; // and the rest of its chunks (nothing in progress)
            }
            if (r == null) {
                // this message and every one behind it are dropped, until the sender marks the first it sends again
                qp.refused = true;
                respond(qp, msg, Ctrl.RNR | (qp.minRnrTimer & 0x1F) << Ctrl.RNR_CODE_SHIFT);
                engine.counters.increment(io.jrdma.engine.core.Counter.SEND_RNR_ERR);
                return Ctrl.RNR;
            }
            qp.recv = r;
            qp.recvOffset = 0;
            qp.recvMsg = msg;
            qp.recvFlagsOp = flagsOp & ~PER_CHUNK;
            qp.receiving = true;
        } else if (qp.refused || !qp.receiving) {
            return Ctrl.DISCARDED; // behind a refused message, or the rest of one dropped
        } else if (msg != qp.recvMsg || (flagsOp & ~PER_CHUNK) != qp.recvFlagsOp) {
            return malformed(qp, s, flagsOp); // another message's chunk, or another opcode, in the middle of one
        }
        RecvWqe r = qp.recv;
        boolean writeImm = (flagsOp >>> 8 & 0xFF) == WrOpcode.RDMA_WRITE_WITH_IMM.ordinal();
        if (!writeImm) {
            if (qp.recvOffset + len > r.capacity && qp.uc) {
                // UC (rxe's class D, as the soft-RoCE responder): the message is lost, the receive not consumed (the
                // next message takes it; one from an SRQ stays with the QP for its next message)
                engine.counters.increment(io.jrdma.engine.core.Counter.RCVD_TOO_LONG);
                abandonUc(qp);
                return Ctrl.DISCARDED;
            }
            if (qp.recvOffset + len > r.capacity) {
                completeRecv(qp, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
                respond(qp, msg, Ctrl.ERROR + Ctrl.NAK_INVALID_REQUEST);
                return Ctrl.ERROR + Ctrl.NAK_INVALID_REQUEST;
            }
            if (!scatter(qp, r, len <= Ctrl.INLINE ? s + Ctrl.S_INLINE : s + Ctrl.SLOT_HEADER, len)) {
                completeRecv(qp, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                respond(qp, msg, Ctrl.ERROR + Ctrl.NAK_REMOTE_OP);
                return Ctrl.ERROR + Ctrl.NAK_REMOTE_OP;
            }
            qp.recvOffset += len;
        }
        if ((flags & Ctrl.F_LAST) != 0) {
            long total = writeImm ? ctrl.get(ValueLayout.JAVA_LONG, s + Ctrl.S_TOTAL) : qp.recvOffset;
            if (total < 0 || total > Integer.MAX_VALUE + 1L) { // a message is 2^31 bytes at most (Qp.postSend)
                return malformed(qp, s, flagsOp); // before an invalidation: a malformed message changes nothing
            }
            int imm = low(immMsg);
            int wcFlags = (flags & Ctrl.F_SOLICITED) != 0 ? WorkCompletion.SOLICITED : 0;
            if ((flags & Ctrl.F_IMM) != 0) {
                wcFlags |= WorkCompletion.WITH_IMM;
            } else if ((flags & Ctrl.F_INV) != 0) {
                Mr target = context.keys.lookup(imm);
                if (target == null || !target.invalidateFor(qp.pd, qp.qpn)) {
                    completeRecv(qp, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                    respond(qp, msg, Ctrl.ERROR + Ctrl.NAK_REMOTE_ACCESS);
                    return Ctrl.ERROR + Ctrl.NAK_REMOTE_ACCESS;
                }
                republish(imm);
                wcFlags |= WorkCompletion.WITH_INV;
            }
            int byteLen = (int) total;
            if (!completeRecv(qp, WcStatus.SUCCESS, writeImm ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV, byteLen,
                    imm, wcFlags)) {
                // the receive's CQ is full (CQ_ERR, its QPs to ERROR): the message was not delivered, and its sender
                // is told so, not DONE; this QP stops here, leaving what follows in the ring unanswered
                respond(qp, msg, Ctrl.ERROR + Ctrl.NAK_REMOTE_OP);
                return Ctrl.ERROR + Ctrl.NAK_REMOTE_OP;
            }
            respond(qp, msg, Ctrl.DONE); // after the receive's completion: the SEND completes once it is consumed
        }
        return Ctrl.DONE;
    }

    /** UC, a sender: the receiver let this QP go in a message's middle: it is lost (no retries); what follows starts anew. */
    private int ucLost(ShmQp qp) {
        qp.sending = false;
        qp.sendOffset = 0;
        return unanswered(qp); // UC_DROPPED: the service completes it
    }

    /** UC: the message in progress is lost (counted): no completion, its receive not consumed (the next message takes it). */
    private void abandonUc(ShmQp qp) {
        engine.counters.increment(io.jrdma.engine.core.Counter.UC_DROPPED_MSGS);
        qp.receiving = false;
        qp.recv = null;
    }

    /** @return whether a message's flags are ones its opcode carries (immediate data, invalidation) */
    private static boolean flagsFit(int flags, int op) {
        boolean imm = (flags & Ctrl.F_IMM) != 0;
        boolean inv = (flags & Ctrl.F_INV) != 0;
        if (op == WrOpcode.SEND.ordinal()) {
            return !imm && !inv;
        }
        if (op == WrOpcode.SEND_WITH_IMM.ordinal() || op == WrOpcode.RDMA_WRITE_WITH_IMM.ordinal()) {
            return imm && !inv;
        }
        return op == WrOpcode.SEND_WITH_INV.ordinal() && inv && !imm;
    }

    /**
     * Copies {@code len} bytes of a slot at {@code src} into the receive's scatter list at its current offset
     * ({@link Sgl#scatter}, with its checks); 8 bytes into one SGE are one load and one store.
     *
     * @return false on a protection error
     */
    private boolean scatter(ShmQp qp, RecvWqe r, long src, int len) {
        if (len == 8 && r.numSge == 1 && qp.recvOffset == 0) {
            Mr mr = context.keys.lookupLocal(r.sgeLkey[0]);
            long va = r.sgeAddr[0];
            if (mr == null || !mr.permits(qp.recvPd, Access.LOCAL_WRITE, va, 8) || !mr.segment.scope().isAlive()) {
                return false; // a region whose memory was freed while registered, as Sgl.scatter refuses it
            }
            mr.segment.set(ValueLayout.JAVA_LONG_UNALIGNED, va - mr.address, ALL.get(ValueLayout.JAVA_LONG_UNALIGNED, ctrlAddr + src));
            return true;
        }
        return Sgl.scatter(context.keys, qp, r, qp.recvOffset, ctrl, src, len);
    }

    /** @return false when the receive's CQ was full (its completion is lost: CQ_ERR, counted in cq_overflow) */
    private boolean completeRecv(ShmQp qp, WcStatus st, WcOpcode op, int len, int imm, int flags) {
        long wrId = qp.recv.wrId;
        qp.receiving = false;
        qp.recv = null;
        qp.recvDone();
        return qp.recvCq.push(wrId, st, op, len, imm, flags, qp.qpn, qp.destQpn);
    }

    @Override
    public int transmit(Qp qp, int budget) {
        // a post (or a doorbell) writes what it can and leaves the results to the duty cycle's service, which runs
        // next (the QP is scheduled): a stream of posts would otherwise read the receiver's result line, which the
        // receiver writes for every message, once per post
        return qp.state == QpState.ERROR ? 0 : underWay((ShmQp) qp, service((ShmQp) qp, budget, false));
    }

    @Override
    public int service(Qp q, int budget) {
        return underWay((ShmQp) q, service((ShmQp) q, budget, true));
    }

    /** Sets the post's hint ({@link Qp#sqUnderWay}: {@link #directBehind}'s position) after a service. @return {@code work} */
    private static int underWay(ShmQp qp, int work) {
        qp.sqUnderWay = qp.sqSent;
        return work;
    }

    /** @param answers read the receiver's result for the SENDs in flight first ({@link #answers}) */
    private int service(ShmQp qp, int budget, boolean answers) {
        if (qp.state != QpState.RTS && qp.state != QpState.SQD) {
            return 0;
        }
        int work = 0;
        if (qp.sqSent - qp.sqConsumer < 0) {
            qp.sqSent = qp.sqConsumer; // after a flush or a reset
        }
        if (answers && !qp.uc && qp.inFlight() > 0) { // UC: nothing waits for a result (a message being written neither)
            int before = (int) qp.sqConsumer;
            int st = answers(qp); // retires what the receiver's result covers
            work += (int) qp.sqConsumer - before;
            if (st >= 0) {
                retireHead(qp, st);
                engine.enterError(qp);
                return work + 1;
            }
        }
        while (work < budget) {
            long next = qp.sqSent;
            if (next == qp.sqProducerAcquire()) { // release partner: Qp.postSend
                break;
            }
            Wqe w = qp.sq[(int) (next & qp.sqMask)];
            // nothing in flight before w: it is the head, and a request other than a SEND may start
            boolean head = next == qp.sqConsumer && !qp.sending;
            int st;
            if (w.isLocalOp()) {
                if (!head) {
                    break; // after every SEND before it was answered: the send queue's order
                }
                st = LocalOps.execute(qp, w);
                if (st < 0) { // a bind's key is the window's new one
                    republish(w.opcode == WrOpcode.LOCAL_INV ? w.imm : w.localKey);
                }
                st = st < 0 ? WcStatus.SUCCESS.ordinal() : st;
            } else {
                if (!w.validated) {
                    Sgl.validate(context.keys, qp, w);
                }
                boolean ring = w.opcode == WrOpcode.SEND || w.opcode == WrOpcode.SEND_WITH_IMM
                        || w.opcode == WrOpcode.SEND_WITH_INV || w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM;
                if (!head && (w.localError >= 0 || !ring || w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM && !w.started)) {
                    break; // an error, or memory touched here (a WRITE's data, a READ, an atomic), after the SENDs before it
                }
                if (w.localError >= 0) {
                    st = w.localError;
                } else if (qp.ud) {
                    st = sendUd(qp, w);
                    if (st == PENDING) {
                        break; // the receiving QP's held word is another sender's: the next cycle tries again
                    }
                } else if (ring) {
                    st = send(qp, w, head);
                    if (st == PENDING) {
                        break;
                    }
                    if (st == SENT && !qp.uc) {
                        qp.sqSent = next + 1;
                        work++;
                        continue; // its result comes later
                    }
                    if (st == SENT || st == UC_DROPPED) {
                        st = WcStatus.SUCCESS.ordinal(); // UC: complete once sent (or dropped), no result to wait for
                    }
                } else {
                    st = oneSided(qp, w);
                    if (st == PENDING) {
                        break; // nothing answers yet: the retries run
                    }
                    if (st == UC_DROPPED) {
                        st = WcStatus.SUCCESS.ordinal();
                    }
                }
            }
            retireHead(qp, st);
            work++;
            if (st != WcStatus.SUCCESS.ordinal()) {
                engine.enterError(qp);
                break;
            }
        }
        return work;
    }

    /** Retires the head WQE with {@code status}: the one at sqSent too when nothing was in flight. */
    private void retireHead(ShmQp qp, int status) {
        retire(qp, qp.sq[(int) (qp.sqConsumer & qp.sqMask)], status);
        if (qp.sqSent - qp.sqConsumer < 0) {
            qp.sqSent = qp.sqConsumer;
        }
    }

    private void retire(ShmQp qp, Wqe w, int status) {
        boolean complete = w.signaled || status != WcStatus.SUCCESS.ordinal();
        long wrId = w.wrId;
        WrOpcode op = w.opcode;
        int len = op.isAtomic() ? 8 : (int) w.length;
        w.started = false;
        qp.unansweredUntil = 0;
        if (status == WcStatus.SUCCESS.ordinal() && !w.isLocalOp()) {
            // per QP, in this process's counters file: two plain stores to a line only this engine writes
            engine.counters.increment(qp.stats, QpCounter.OPS);
            engine.counters.add(qp.stats, QpCounter.OP_BYTES, op.isAtomic() ? 8 : w.length); // 2^31 too
        }
        qp.sqConsumerRelease(qp.sqConsumer + 1); // acquire partner: Qp.postSend's full check
        if (complete) {
            qp.sendCq.push(wrId, STATUS[status], WcOpcode.of(op), len, 0, 0, qp.qpn, 0);
        }
    }

    /**
     * @return true when the peer's QP is there, takes requests (RTR, RTS, SQD) and is connected to this QP (its
     *         entry names this QP and this context: a peer QP reset and connected to another QP since takes nothing
     *         more from this one, whose SENDs in flight and requests fail with RETRY_EXC_ERR, as toward a QP gone)
     */
    private boolean peerQpLive(ShmQp qp) {
        if (qp.peer == null || qp.peer.dead || qp.peerDir < 0 && !findPeerQp(qp)) {
            return false;
        }
        long d = qp.peer.ctrlAddr + qp.peerDir; // one line: QPN, state and partner
        long qs = (long) LONG.getVolatile(ALL, d + Ctrl.Q_QPN); // QPN and state: one load
        if (low(qs) != qp.destQpn) {
            return false;
        }
        int s = high(qs);
        return takesRequests(s)
                && (int) INT.getVolatile(ALL, d + Ctrl.Q_DEST_QPN) == qp.qpn
                && (long) LONG.getVolatile(ALL, d + Ctrl.Q_DEST_ID) == selfId;
    }

    /** @return whether a QP entry's state (its ordinal, as peers read it) takes requests: RTR, RTS or SQD */
    private static boolean takesRequests(int state) {
        return state == QpState.RTR.ordinal() || state == QpState.RTS.ordinal() || state == QpState.SQD.ordinal();
    }

    /**
     * A request the responder's checks refused: counted by reason (and as a NAK) for the QP, and the peer's QP
     * asked to stop. @return REM_ACCESS_ERR's ordinal
     */
    private int refused(ShmQp qp, QpCounter reason) {
        engine.counters.increment(qp.stats, reason);
        if (qp.uc) { // UC has no NAK: the responder drops the request, the requester completes it (as sent)
            engine.counters.increment(io.jrdma.engine.core.Counter.UC_DROPPED_MSGS);
            return UC_DROPPED;
        }
        engine.counters.increment(qp.stats, QpCounter.RCVD_NAKS);
        nak(qp, Ctrl.NAK_REMOTE_ACCESS);
        return WcStatus.REM_ACCESS_ERR.ordinal();
    }

    /** Asks the peer's QP to stop, as a responder does after the NAK it sends. */
    private static void nak(ShmQp qp, int syndrome) {
        boolean unused = (boolean) INT.compareAndSet(qp.peer.ctrl, qp.peerDir + Ctrl.Q_ERROR, 0, syndrome + 1);
        signal(qp.peer.ctrl);
    }

    /**
     * A WRITE, READ or atomic, done here on the target's memory after the responder's checks.
     *
     * @return the status ordinal
     */
    private int oneSided(ShmQp qp, Wqe w) {
        WrOpcode op = w.opcode;
        long len = w.length;
        if (len == 0 && !op.isAtomic()) {
            int st = peerRefuses(qp, op);
            // a zero-length RDMA operation touches no memory and names no key
            return st == UNANSWERED ? unanswered(qp) : st >= 0 ? st : OK;
        }
        if (!w.inline && !Sgl.covers(context.keys, qp, w, 0, op.isAtomic() ? 8 : len)) {
            return WcStatus.LOC_PROT_ERR.ordinal(); // a region gone since validation: the local side is checked first
        }
        long at = target(qp, op, w.rkey, w.remoteAddr, len);
        if (at < 0) {
            int st = (int) -(at + 1);
            return st == UNANSWERED ? unanswered(qp) : st;
        }
        try {
            if (qp.keyAttached) {
                int st = attachedWqe(qp, w, at);
                return st == ATTACH_GONE ? unanswered(qp) : st;
            }
            MemorySegment buf = qp.keyBuf;
            if (op.isAtomic() && (buf.address() + at & 7) != 0) {
                return misalignedAtomic(qp);
            }
            // one SGE in memmove's band: libc's copy, as the direct path's; else the SGEs' MemorySegment.copy
            Mr one = w.numSge == 1 && !w.inline && Native.moves(len, w.sgeMr[0].segment) ? w.sgeMr[0] : null;
            long local = one == null ? 0 : one.segment.address() + (w.sgeAddr[0] - one.address);
            switch (op) {
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> {
                    if (one != null) {
                        Native.move(buf.address() + at, local, len, buf, one.segment);
                    } else {
                        // in parts (PART): a message may be 2^31 bytes, which (int) makes negative
                        for (long off = 0; off < len; off += PART) {
                            Sgl.gatherCovered(w, off, (int) Math.min(PART, len - off), buf, at + off);
                        }
                    }
                }
                case RDMA_READ -> {
                    if (one != null) {
                        Native.move(local, buf.address() + at, len, one.segment, buf);
                    } else {
                        for (long off = 0; off < len; off += PART) {
                            Sgl.scatterCovered(w, off, buf, at + off, (int) Math.min(PART, len - off));
                        }
                    }
                }
                case ATOMIC_CMP_AND_SWP -> atomicResult(w, (long) LONG.compareAndExchange(buf, at, w.compareAdd, w.swap));
                case ATOMIC_FETCH_AND_ADD -> atomicResult(w, (long) LONG.getAndAdd(buf, at, w.compareAdd));
                default -> {
                    return WcStatus.LOC_QP_OP_ERR.ordinal();
                }
            }
            if (op == WrOpcode.RDMA_WRITE) {
                VarHandle.releaseFence(); // the data before anything the application does on seeing the completion
            }
            return OK;
        } finally {
            untarget(qp);
        }
    }

    // ------------------------------------------------------------------ cross-memory attach

    /** Not a status: {@link #attachedCopy} found the peer process gone (its liveness check moves the QP to ERROR). */
    private static final int ATTACH_GONE = WcStatus.values().length + 1;
    /** one local and one remote iovec for {@link #attachedCopy} (engine thread, under the claim) */
    private final MemorySegment iov = scratchArena.allocate(2L * Native.IOVEC, 8);

    /**
     * A queued WRITE or READ ({@link #oneSided}, its regions checked by {@link Sgl#covers}) into memory of the peer's
     * that is not shared: each SGE (or the inline data) copied by {@link #attachedCopy} to or from the owner's
     * address {@code at} onward, in order. An atomic cannot be done so (its key has no REMOTE_ATOMIC: refused before).
     *
     * @return the status ordinal, or {@link #ATTACH_GONE}
     */
    private int attachedWqe(ShmQp qp, Wqe w, long at) {
        boolean write = w.opcode == WrOpcode.RDMA_WRITE || w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM;
        if (!write && w.opcode != WrOpcode.RDMA_READ) {
            return refused(qp, QpCounter.REM_NO_ACCESS);
        }
        try {
            if (w.inline) {
                return attachedCopy(qp, true, w.inlineArea.address(), w.inlineArea, at, w.length);
            }
            long off = 0;
            for (int i = 0; i < w.numSge; i++) {
                int n = w.sgeLength[i];
                if (n == 0) {
                    continue;
                }
                Mr mr = w.sgeMr[i]; // recorded by Sgl.covers, which the caller ran
                int st = attachedCopy(qp, write, mr.segment.address() + (w.sgeAddr[i] - mr.address), mr.segment, at + off, n);
                if (st != OK) {
                    return st;
                }
                off += n;
            }
            return OK;
        } catch (IllegalStateException freed) { // a local region's memory freed while registered (the call checks it)
            return WcStatus.LOC_PROT_ERR.ordinal();
        }
    }

    /**
     * {@code n} bytes between this process's address {@code la} (in {@code local}, which the call keeps alive: a
     * closed one fails it with IllegalStateException before anything is copied) and the peer process's address
     * {@code ra}, by {@code process_vm_writev} ({@code write}) or {@code process_vm_readv}: the kernel copies, no
     * thread of the peer runs. A short count goes on from where it stopped (a call moves less than 2 GiB).
     *
     * @return OK; REM_ACCESS_ERR when the peer's range is not there (its owner freed the memory while registered:
     *         EFAULT or nothing moved) or the kernel refuses (EPERM: ptrace's access rules, e.g. Yama's
     *         ptrace_scope), counted as rem_bad_key or rem_no_access; {@link #ATTACH_GONE} when the process is gone
     */
    private int attachedCopy(ShmQp qp, boolean write, long la, MemorySegment local, long ra, long n) {
        long a = iov.address();
        while (n > 0) {
            iov.set(ValueLayout.JAVA_LONG, 0, la);
            iov.set(ValueLayout.JAVA_LONG, 8, n);
            iov.set(ValueLayout.JAVA_LONG, Native.IOVEC, ra);
            iov.set(ValueLayout.JAVA_LONG, Native.IOVEC + 8, n);
            long r = Native.processVm(write, callState, qp.peer.pid, a, 1, a + Native.IOVEC, 1, local);
            if (r <= 0) {
                return r == -Native.ESRCH ? ATTACH_GONE
                        : refused(qp, r == -Native.EPERM || r == -Native.EACCES ? QpCounter.REM_NO_ACCESS : QpCounter.REM_BAD_KEY);
            }
            la += r;
            ra += r;
            n -= r;
        }
        if (write) {
            VarHandle.releaseFence(); // the data before anything the application does on seeing the completion
        }
        return OK;
    }

    /**
     * membarrier through this process's threads (PRIVATE_EXPEDITED), when it registered for it: an INVOKER engine's
     * claim biased to its driving thread. Not the GLOBAL one of the own holds, which would reach every shm0 process.
     */
    @Override
    public Runnable threadFence() {
        return Native.privateBarrierWorks() ? Native::privateBarrier : null;
    }

    @Override
    public boolean remoteWritesNeedEngine() {
        return false; // a peer's WRITE is its own store into the shared buffer
    }

    /**
     * {@inheritDoc} Here: every queued request is a message whose chunks are all in the peer's ring ({@code sqSent} is
     * the producer: none is being written, none waits to be sent again after an RNR, which sets {@code sqSent} back
     * to the refused one, and none waits for a peer QP), so a SEND written now follows them in the ring and in the send
     * queue as the queued path would write it, with the next message number.
     */
    @Override
    public boolean directBehind(Qp q) {
        ShmQp qp = (ShmQp) q;
        long producer = qp.sqProducerAcquire();
        return qp.sqSent == producer && producer - qp.sqConsumer < qp.init.maxSendWr();
    }

    /**
     * The posting thread, driving the engine ({@link io.jrdma.engine.core.Engine#postDirect}): a one-sided request
     * of one SGE done from the work request itself (docs/shm-design.md, "The direct path"), with the checks of
     * {@link Sgl#validate} and of {@link #oneSided}, and the same counters ({@link #oneSidedDirect}); a SEND sent from
     * it ({@link #sendDirect}).
     */
    @Override
    public int executeDirect(Qp q, SendWorkRequest wr, WrOpcode op, int length) {
        ShmQp qp = (ShmQp) q;
        if (op != WrOpcode.RDMA_WRITE && (op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM
                || op == WrOpcode.SEND_WITH_INV)) { // the WRITE's own path first: one test more, not four
            return qp.uc ? Engine.DECLINED : sendDirect(qp, wr, op, length); // UC: the queued path completes it once sent
        }
        int st = oneSidedDirect(qp, wr, op, length);
        return st == UC_DROPPED ? OK : st; // UC: a refused WRITE is dropped, and completes
    }

    /** {@link #executeDirect} for a WRITE, READ or atomic: done here, on the peer's memory, after the responder's checks. */
    private int oneSidedDirect(ShmQp qp, SendWorkRequest wr, WrOpcode op, int length) {
        long la = wr.sgeAddr(0);
        Mr mr = context.keys.lookupLocal(wr.sgeLkey(0));
        if (mr == null || !mr.permits(qp.pd, op == WrOpcode.RDMA_WRITE ? 0 : Access.LOCAL_WRITE, la, length)) {
            return Engine.DECLINED; // the queued path completes it with LOC_PROT_ERR (or takes an inline source)
        }
        long at = target(qp, op, wr.rkey(), wr.remoteAddr(), length);
        if (at < 0) {
            int st = (int) -(at + 1);
            return st == UNANSWERED ? Engine.DECLINED : st; // the queued path waits out the retries
        }
        try {
            MemorySegment local = mr.segment;
            long lo = la - mr.address;
            if (qp.keyAttached) { // memory that is not shared: a copy by the kernel (no atomics: its access has none)
                int st = op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_READ
                        ? attachedCopy(qp, op == WrOpcode.RDMA_WRITE, local.address() + lo, local, at, length)
                        : refused(qp, QpCounter.REM_NO_ACCESS);
                return st == OK ? counted(qp, length) : st == ATTACH_GONE ? Engine.DECLINED : st;
            }
            long ta = qp.keyBase + wr.remoteAddr(); // inside the region, which lies inside the mapping (target, cacheKey)
            // tests of the opcode's identity, WRITE first (an enum switch would load its ordinal's entry in a map first)
            if (op == WrOpcode.RDMA_WRITE) {
                if (length == 8) { // write_lat's size: one load and one store, no bulk copy's set-up
                    ALL.set(ValueLayout.JAVA_LONG_UNALIGNED, ta, local.get(ValueLayout.JAVA_LONG_UNALIGNED, lo));
                } else if (Native.moves(length, local)) {
                    Native.move(ta, local.address() + lo, length, qp.keyBuf, local); // libc's copy, where it is faster
                } else {
                    MemorySegment.copy(local, lo, qp.keyBuf, at, length);
                }
                VarHandle.releaseFence(); // the data before anything the application does on seeing the completion
            } else if (op == WrOpcode.RDMA_READ) {
                if (length == 8) {
                    local.set(ValueLayout.JAVA_LONG_UNALIGNED, lo, ALL.get(ValueLayout.JAVA_LONG_UNALIGNED, ta));
                } else if (Native.moves(length, local)) {
                    Native.move(local.address() + lo, ta, length, local, qp.keyBuf);
                } else {
                    MemorySegment.copy(qp.keyBuf, at, local, lo, length);
                }
            } else if ((ta & 7) != 0) { // an atomic off an 8-byte boundary of the mapping
                return misalignedAtomic(qp);
            } else if (!local.scope().isAlive()) {
                return Engine.DECLINED; // its result's buffer was freed: before the target's word changes (below)
            } else if (op == WrOpcode.ATOMIC_FETCH_AND_ADD) {
                local.set(ValueLayout.JAVA_LONG_UNALIGNED, lo, (long) LONG.getAndAdd(ALL, ta, wr.compareAdd()));
            } else if (op == WrOpcode.ATOMIC_CMP_AND_SWP) {
                local.set(ValueLayout.JAVA_LONG_UNALIGNED, lo, (long) LONG.compareAndExchange(ALL, ta, wr.compareAdd(), wr.swap()));
            } else {
                return WcStatus.LOC_QP_OP_ERR.ordinal();
            }
        } catch (IllegalStateException freed) {
            // the local buffer was freed while registered: a WRITE's read of it, a READ's store into it, each fails
            // before anything of the target's changes; the queued path completes it with LOC_PROT_ERR (Sgl.region)
            return Engine.DECLINED;
        } finally {
            untarget(qp);
        }
        return counted(qp, length);
    }

    /** A one-sided operation of {@code length} bytes done by {@link #oneSidedDirect}: counted. @return OK */
    private int counted(ShmQp qp, int length) {
        engine.counters.increment(qp.stats, QpCounter.OPS);
        engine.counters.add(qp.stats, QpCounter.OP_BYTES, length);
        return OK;
    }

    private static final int OK = WcStatus.SUCCESS.ordinal();
    /**
     * the most a one-sided copy moves in one call of the gather or scatter: their lengths are ints, and a message may
     * be 2^31 bytes (cast whole, it was negative, and nothing was copied); 1 MiB, so that every copy of more than
     * that takes the loop (a tested path), at no measurable cost next to the copy
     */
    private static final long PART = 1L << 20;

    /**
     * The responder's checks of a one-sided request of {@code len > 0} bytes (or an atomic) against the peer's
     * QP and key. When they pass, the key entry is held (through the peer QP's held word, or else the entry's
     * in-use count: its owner cannot withdraw the key while the caller touches its memory; {@link #untarget} ends
     * it) and the entry's fields are in the QP's cache ({@code qp.keyBuf}, {@code qp.keyBase}).
     *
     * @return the offset of {@code ra} in {@code qp.keyBuf}, or {@code -(status + 1)} when refused
     */
    private long target(ShmQp qp, WrOpcode op, int rkey, long ra, long len) {
        int needed = needed(op);
        if (qp.checked && rkey == low(qp.keyWord) && !qp.peer.dead) {
            // the checks below passed at the peer QP's generation checkedGen for this key's word: the own hold, then
            // the two words that every change they depend on moves (the QP entry's generation, the key's word)
            long pa = qp.peer.ctrlAddr;
            long held = qp.ownHoldAddr;
            INT.setOpaque(ALL, held, rkey >>> 8);
            if ((long) LONG.getVolatile(ALL, pa + qp.peerDir + Ctrl.Q_GEN) == qp.checkedGen
                    && (long) LONG.getVolatile(ALL, pa + qp.keyEntry + Ctrl.K_KEY) == qp.keyWord
                    && (!qp.keyAttached || (long) LONG.getVolatile(ALL, qp.keyTableWord + Ctrl.A_SERIAL) == qp.keySerial)
                    && (qp.checkedAccess & needed) != 0 && (high(qp.keyWord) & needed) == needed
                    && inKey(qp, ra, len)) {
                qp.heldAddr = held;
                qp.heldQp = true;
                return qp.keyOff + (ra - qp.keyVa);
            }
            INT.setRelease(ALL, held, 0); // something moved, or another check applies: all of them, below
        }
        qp.checked = false; // until every check below passes again (another key's may fail: none may be skipped then)
        // the generation before any field it covers (the owner raises it after them): checks that pass hold at it
        long gen = qp.ownHold && qp.peer != null && qp.peerDir >= 0
                ? (long) LONG.getVolatile(ALL, qp.peer.ctrlAddr + qp.peerDir + Ctrl.Q_GEN) : 0;
        int st = peerRefuses(qp, op);
        if (st >= 0) {
            return -(st + 1);
        }
        Peer peer = qp.peer;
        long pa = peer.ctrlAddr; // the peer's control segment, reached through ALL (offsets checked here)
        int index = rkey >>> 8;
        if (index == 0 || index >= Ctrl.MAX_KEYS) {
            return -(refused(qp, QpCounter.REM_BAD_KEY) + 1);
        }
        long e = Ctrl.key(index);
        // the hold, before the key's read: the pair with the owner's withdraw (docs/shm-design.md, "The initiator's own
        // hold"). A partner named by the destination QP's entry holds by its own word: a plain store, which the owner
        // reads only after a membarrier (no locked instruction here: HotSpot keeps an opaque store ahead of the
        // volatile loads after it, and the membarrier takes care of the store buffer); else the peer QP's held word,
        // taken with a CAS, or, when another initiator has that, the key's in-use count with a locked add. The first
        // two are given back with a release store
        long held = 0;
        boolean heldQp = true;
        if (qp.ownHold) {
            held = qp.ownHoldAddr;
            INT.setOpaque(ALL, held, index);
            if ((int) INT.getVolatile(ALL, pa + qp.peerDir + Ctrl.Q_DEST_QPN) != qp.qpn
                    || (long) LONG.getVolatile(ALL, pa + qp.peerDir + Ctrl.Q_DEST_ID) != selfId) {
                INT.setRelease(ALL, held, 0); // not (or no longer) its destination's partner
                held = 0;
            }
        }
        if (held == 0) {
            held = pa + qp.peerDir + Ctrl.Q_HELD;
            heldQp = INT.compareAndSet(ALL, held, 0, index);
            if (!heldQp) {
                held = pa + e + Ctrl.K_IN_USE;
                int unused = (int) INT.getAndAdd(ALL, held, 1);
            }
        }
        qp.heldAddr = held;
        qp.heldQp = heldQp;
        long word = (long) LONG.getVolatile(ALL, pa + e + Ctrl.K_KEY); // the key and its access word, one load
        QpCounter reason = null;
        if (low(word) != rkey) {
            reason = QpCounter.REM_BAD_KEY;
        } else if ((word != qp.keyWord || e != qp.keyEntry
                || qp.keyAttached && (long) LONG.getVolatile(ALL, qp.keyTableWord + Ctrl.A_SERIAL) != qp.keySerial) // the owner's publication, still
                && !cacheKey(qp, peer.ctrl, e, word)) {
            reason = QpCounter.REM_BAD_KEY; // its buffer is gone, or the range it says is not inside it
        } else if (qp.keyQpn != 0 && qp.keyQpn != qp.destQpn + 1) {
            reason = QpCounter.REM_BAD_KEY; // a type 2 window bound to another QP of the peer's
        } else if (qp.keyPd != ALL.get(ValueLayout.JAVA_LONG, pa + qp.peerDir + Ctrl.Q_PD) || (high(word) & needed) != needed) {
            reason = QpCounter.REM_NO_ACCESS;
        } else if (!inKey(qp, ra, len)) {
            reason = QpCounter.REM_OUT_OF_BOUNDS;
        }
        if (reason != null) {
            untarget(qp);
            return -(refused(qp, reason) + 1);
        }
        if (qp.keyAttached && (held != qp.ownHoldAddr || !qp.ownHold)) {
            // memory reached by cross-memory attach is the owner's own: its withdrawal waits out a hold only while it
            // can tell the holder lives (withdraw, dropPartner), which only a partner's own hold word tells
            untarget(qp);
            return -(refused(qp, QpCounter.REM_NO_ACCESS) + 1);
        }
        if (held == qp.ownHoldAddr && qp.ownHold) { // its destination's partner, all checked at gen or later
            qp.checkedGen = gen;
            qp.checkedAccess = (int) INT.getVolatile(ALL, pa + qp.peerDir + Ctrl.Q_ACCESS);
            qp.checked = gen != 0; // 0: read before the QP was found (a QP in RTR has been raised at least once)
        }
        return qp.keyOff + (ra - qp.keyVa);
    }

    /** @return whether {@code len} bytes at {@code ra} lie inside the cached key's range (both paths of {@link #target}) */
    private static boolean inKey(ShmQp qp, long ra, long len) {
        // addresses are u64, as the verbs' (an iova may have its top bit set): ra below keyVa wraps to an offset past
        // any span, and a peer's K_VA near the signed limit cannot make a far address pass (len <= keySpan: cacheKey
        // has keySpan >= 0, and len is a request's length, 0 or more)
        return len <= qp.keySpan && Long.compareUnsigned(ra - qp.keyVa, qp.keySpan - len) <= 0;
    }

    /**
     * An atomic whose 8-byte aligned remote address lands off an 8-byte boundary of the target's mapping: a key
     * entry whose address and buffer offset differ modulo 8, which only a peer's write makes (a region's address,
     * a REG_MR's too, is its buffer's own). A CPU atomic cannot be done there; the request fails as rxe's misaligned
     * atomic does, with REM_INV_REQ_ERR, rather than with an exception out of the engine.
     */
    private int misalignedAtomic(ShmQp qp) {
        engine.counters.increment(qp.stats, QpCounter.RCVD_NAKS);
        nak(qp, Ctrl.NAK_INVALID_REQUEST);
        return WcStatus.REM_INV_REQ_ERR.ordinal();
    }

    /** @return the remote access a one-sided request needs */
    private static int needed(WrOpcode op) {
        return op == WrOpcode.RDMA_READ ? Access.REMOTE_READ : op.isAtomic() ? Access.REMOTE_ATOMIC : Access.REMOTE_WRITE;
    }

    /**
     * The head request found no peer QP that takes requests (none at the address, destroyed, not yet in RTR, in
     * ERROR): as a NIC's requester whose packets nothing answers, it waits out the QP's retries, timeout ×
     * (retry_cnt + 1) (IBA 9.7.6.1.3: 4.096 µs × 2^timeout; 0 waits for ever), then fails with RETRY_EXC_ERR. A
     * peer QP that comes up meanwhile (a responder reaching RTR after the requester's RTS) takes the request.
     * A peer process that dies is not this: its QPs move to ERROR at once ({@link #checkPeers}).
     *
     * @return {@link #PENDING} while the retries run, then RETRY_EXC_ERR's ordinal
     */
    private int unanswered(ShmQp qp) {
        if (qp.uc) { // no retries on UC: a request nothing takes is lost, and its sender completes it
            engine.counters.increment(io.jrdma.engine.core.Counter.UC_DROPPED_MSGS);
            return UC_DROPPED;
        }
        if (qp.timeout == 0) {
            return PENDING;
        }
        long now = engine.clock.nanoTime();
        if (qp.unansweredUntil == 0) {
            qp.unansweredUntil = (now + (4096L << qp.timeout) * (qp.retryCnt + 1)) | 1; // never 0
            return PENDING;
        }
        if (now - qp.unansweredUntil < 0) {
            return PENDING;
        }
        qp.unansweredUntil = 0;
        return WcStatus.RETRY_EXC_ERR.ordinal();
    }

    /** Not a status: {@link #peerRefuses} found no peer QP that takes requests (see {@link #unanswered}). */
    private static final int UNANSWERED = WcStatus.values().length;
    /**
     * Not a status: a UC request the responder's checks refused, or that found no peer QP ({@link #refused},
     * {@link #unanswered}): dropped, nothing written, and completed as SUCCESS (UC has no acknowledgement); counted in
     * uc_dropped_msgs and by its reason
     */
    private static final int UC_DROPPED = WcStatus.values().length + 2;

    /**
     * @return the status when the peer's QP refuses a one-sided request whatever its key (no access),
     *         {@link #UNANSWERED} when it is not there or takes no requests, else -1
     */
    private int peerRefuses(ShmQp qp, WrOpcode op) {
        if (!peerQpLive(qp)) {
            return UNANSWERED;
        }
        if (((int) INT.getVolatile(ALL, qp.peer.ctrlAddr + qp.peerDir + Ctrl.Q_ACCESS) & needed(op)) == 0) {
            return refused(qp, QpCounter.REM_NO_ACCESS);
        }
        return -1;
    }

    /** Ends {@link #target}'s hold: its own or the peer QP's held word back to 0 (a release store), or the in-use count lowered. */
    private static void untarget(ShmQp qp) {
        if (qp.heldQp) {
            INT.setRelease(ALL, qp.heldAddr, 0); // acquire partner: the owner's withdraw, which then sees the copy done
        } else {
            int unused = (int) INT.getAndAdd(ALL, qp.heldAddr, -1); // (typed: an exact VarHandle call)
        }
    }

    /**
     * Reads a key entry's fields (published before {@code word}, which the caller read with a volatile load while
     * holding the entry's in-use count) and maps its buffer, into the QP's one-entry cache: the next operation
     * through the same entry with the same word (key, access and generation) skips these reads.
     *
     * @return false when the buffer cannot be mapped (its owner closed it)
     */
    private static boolean cacheKey(ShmQp qp, MemorySegment pc, long e, long word) {
        qp.keyWord = 0;
        qp.checked = false;
        if (pc.get(ValueLayout.JAVA_INT, e + Ctrl.K_FD) == Ctrl.ATTACHED && pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_INODE) == 0) {
            return cacheAttached(qp, e, word);
        }
        qp.keyAttached = false;
        MemorySegment buf = qp.peer.buffer(pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_INODE),
                pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_SERIAL), pc.get(ValueLayout.JAVA_INT, e + Ctrl.K_FD),
                pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_BUFSIZE));
        if (buf == null) {
            return false;
        }
        long off = pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_OFF);
        long span = pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_LEN);
        if (off < 0 || span < 0 || off > buf.byteSize() - span) {
            return false; // the entry says a range its buffer's mapping does not hold: accesses go through ALL, unchecked
        }
        qp.keyBuf = buf;
        qp.keyVa = pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_VA);
        qp.keySpan = span;
        qp.keyOff = off;
        qp.keyBase = buf.address() + off - qp.keyVa;
        qp.keyPd = pc.get(ValueLayout.JAVA_LONG, e + Ctrl.K_PD);
        qp.keyQpn = pc.get(ValueLayout.JAVA_INT, e + Ctrl.K_QPN);
        qp.keyEntry = e;
        qp.keyWord = word;
        return true;
    }

    /**
     * {@link #cacheKey} for an entry of memory that is not shared ({@link Ctrl#ATTACHED}): nothing to map; the region's
     * address in its owner is {@code keyOff}, so that {@link #target}'s offset is the owner's address of the request's
     * first byte, which {@link #attachedCopy} reaches by cross-memory attach. A range that wraps the address space is
     * refused (only a peer's write makes one; a refusal's negative result must not look like an address).
     */
    private static boolean cacheAttached(ShmQp qp, long e, long word) {
        if (!Native.crossMemoryAttach()) {
            return false;
        }
        long t = qp.peer.attachTable();
        if (t == 0) {
            return false; // none published, or not the owner's sealed one
        }
        // the owner's own record of the key (any peer can write the key entry, none the table): the same word, or
        // the key is not one it published for cross-memory attach
        long a = t + Ctrl.attach((int) ((e - Ctrl.KEYS) / Ctrl.KEY_BYTES));
        if ((long) LONG.getAcquire(ALL, a + Ctrl.A_WORD) != word) { // release partner: the owner's publishAttached
            return false;
        }
        long serial = ALL.get(ValueLayout.JAVA_LONG, a + Ctrl.A_SERIAL); // stored before the word
        long off = ALL.get(ValueLayout.JAVA_LONG, a + Ctrl.A_ADDR);
        long span = ALL.get(ValueLayout.JAVA_LONG, a + Ctrl.A_LEN);
        if (serial == 0 || off < 0 || span < 0 || off > Long.MAX_VALUE - span) {
            return false;
        }
        qp.keyAttached = true;
        qp.keyTableWord = a + Ctrl.A_WORD;
        qp.keySerial = serial;
        qp.keyBuf = null;
        qp.keyVa = ALL.get(ValueLayout.JAVA_LONG, a + Ctrl.A_VA);
        qp.keySpan = span;
        qp.keyOff = off;
        qp.keyBase = 0; // no mapping here: a direct path that would reach it by address tests keyAttached first
        qp.keyPd = ALL.get(ValueLayout.JAVA_LONG, a + Ctrl.A_PD);
        qp.keyQpn = ALL.get(ValueLayout.JAVA_INT, a + Ctrl.A_QPN);
        qp.keyEntry = e;
        qp.keyWord = word;
        return true;
    }

    private static final boolean LITTLE = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

    /** @return the int at the lower address of an 8-byte word read with one load */
    private static int low(long word) {
        return LITTLE ? (int) word : (int) (word >>> 32);
    }

    /** @return the int at the higher address of an 8-byte word read with one load */
    private static int high(long word) {
        return LITTLE ? (int) (word >>> 32) : (int) word;
    }

    /** Stores an atomic's original value into its one 8-byte SGE (its region checked by the step: Sgl.covers). */
    private static void atomicResult(Wqe w, long value) {
        Mr mr = w.sgeMr[0];
        mr.segment.set(ValueLayout.JAVA_LONG_UNALIGNED, w.sgeAddr[0] - mr.address, value);
    }

    /** {@link #send}'s answer when the message's last chunk is in the ring: its result comes later ({@link #answers}). */
    private static final int SENT = -2;

    /**
     * The sender's side of a SEND (with immediate data, with invalidate) or a WRITE with immediate data (the data is
     * written first, when nothing is in flight before it, then an empty message consumes the receive): writes the
     * WQE at {@code sqSent} into the peer QP's ring, chunk by chunk as slots come free, behind the messages still in
     * flight (docs/shm-design.md, "Two-sided operations: inbound rings").
     *
     * @param head nothing is in flight before it
     * @return {@link #SENT} when its last chunk is in the ring, {@link #PENDING} while it waits (ring room, the RNR
     *         timer, a peer QP that takes no requests), or the status ordinal it fails with (the head only)
     */
    private int send(ShmQp qp, Wqe w, boolean head) {
        if (!qp.sending) { // its first chunk: a new message, or one sent again after an RNR
            if (qp.rnrUntil != 0) {
                if (engine.clock.nanoTime() - qp.rnrUntil < 0) {
                    return PENDING; // the RNR timer runs
                }
                qp.rnrUntil = 0;
            }
            if (!peerQpLive(qp) || qp.ringLost) { // (ringLost: a ring started anew takes nothing more of this one)
                return head ? unanswered(qp) : PENDING; // behind messages in flight: their answers fail first
            }
            if (w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM && !w.started) { // the head only (service)
                int st = oneSided(qp, w);
                if (st != WcStatus.SUCCESS.ordinal()) {
                    return st; // UC_DROPPED on UC: its message is dropped with its data (the service completes it)
                }
                w.started = true;
            }
            int before = qp.inFlight();
            qp.msg++; // a new number for each message and each try: a result for an earlier try never matches it
            if (before == 0) {
                qp.firstMsg = qp.msg;
            }
            qp.sendOffset = 0;
            qp.sending = true;
        }
        long pa = qp.peer.ctrlAddr; // the data path's accesses go through ALL (offsets from the layout)
        boolean writeImm = w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM;
        long total = writeImm ? 0 : w.length;
        while (true) {
            long pos = qp.ringWrite;
            if (pos - qp.ringReadSeen >= Ctrl.RING_SLOTS) {
                // acquire; release partner: the receiver's R_READ, stored after its reads of the slots
                qp.ringReadSeen = (long) LONG.getAcquire(ALL, pa + qp.peerResp + Ctrl.R_READ);
                if (pos - qp.ringReadSeen >= Ctrl.RING_SLOTS) {
                    if (qp.uc && !peerQpLive(qp)) { // UC, no result to say so: the receiver let it go
                        return ucLost(qp);
                    }
                    if (!qp.uc || qp.peerDir < 0 || peerGeneration(qp) == qp.ringGen) {
                        return PENDING; // the ring is full: the receiver has not read that far yet
                    }
                    // UC: the receiver's entry changed since the ring's position was found (it may have been reset
                    // and connected again, its ring empty): found again under the hold, below
                }
            }
            if (!sendHold(qp)) {
                if (qp.uc) { // lost when the receiver let it go; a held word another took is tried again, for a while
                    if (!peerQpLive(qp)) {
                        return ucLost(qp);
                    }
                    long now = engine.clock.nanoTime();
                    if (qp.ucHoldSince == 0) {
                        qp.ucHoldSince = now | 1;
                    } else if (now - qp.ucHoldSince > DRAIN_NANOS) { // a word left by a holder that died: no end
                        qp.ucHoldSince = 0;
                        return ucLost(qp);
                    }
                    return PENDING;
                }
                return head ? unanswered(qp) : PENDING; // the receiver let this QP go in the middle of the message
            }
            qp.ucHoldSince = 0;
            if (qp.uc || qp.ringGen < 0) { // UC, and RC's first chunk since it connected
                long gen = peerGeneration(qp);
                if (gen != qp.ringGen) { // the first chunk since this QP connected, or (UC) the receiver's entry changed
                    long was = qp.ringWrite;
                    if (!qp.uc && qp.ringGen < 0 && qp.sendOffset == 0) {
                        // RC's first message since it connected is marked as one sent again after an RNR: a receiver
                        // still refusing a message of this QP before its reset alone takes it (none other reads it)
                        qp.retry = true;
                    }
                    findPosition(qp, gen);
                    sendUnhold(qp);
                    if (qp.uc && qp.ringWrite != was && qp.sendOffset > 0) {
                        return ucLost(qp); // its first chunks went into a ring the receiver has cleared since
                    }
                    continue; // from the position found, its ring room checked again (a modify that cleared nothing
                              // leaves the position, and a ring that was full is still full)
                }
            }
            int n = (int) Math.min(Ctrl.CHUNK, total - qp.sendOffset);
            if (!w.inline && !Sgl.covers(context.keys, qp, w, qp.sendOffset, n)) {
                // a region gone since validation: nothing of this chunk is written. The WQE fails with LOC_PROT_ERR
                // once it is the head (the service's loop), then the QP enters ERROR
                sendUnhold(qp);
                w.localError = WcStatus.LOC_PROT_ERR.ordinal();
                qp.sending = false;
                return head ? w.localError : PENDING;
            }
            boolean last = writeSlot(qp, w, pos, n, total, writeImm);
            sendUnhold(qp);
            notify(qp.peer, qp.peerDir);
            if (last) {
                qp.sending = false;
                return SENT;
            }
        }
    }

    /**
     * The receiver's result for the messages in flight (acquire; the peer QP's liveness only when it covers none of
     * them, and when that QP stopped, the result once more, so that one stored before it stopped is seen). The
     * receiver takes messages in the ring's order and answers each one it finishes or refuses, so a result for
     * message {@code m} covers every message before it: DONE retires them and {@code m}; RNR retires those before
     * {@code m}, and {@code m} and every message after it go again, after the RNR timer, as new messages (the first
     * marked {@link Ctrl#F_RETRY}: the receiver drops every slot after a refused one until it comes); a NAK retires
     * those before {@code m}, which fails. Retires through {@link #retire}.
     *
     * @return -1, or the status ordinal the head request fails with
     */
    private int answers(ShmQp qp) {
        long pa = qp.peer.ctrlAddr;
        int n = qp.inFlight();
        long r = (long) LONG.getAcquire(ALL, pa + qp.peerResp + Ctrl.R_RESULT); // release partner: the receiver's respond
        int d = covered(qp, r, n);
        boolean live = true;
        if (d < 0 && !(live = peerQpLive(qp) && !qp.ringLost)) {
            r = (long) LONG.getAcquire(ALL, pa + qp.peerResp + Ctrl.R_RESULT);
            d = covered(qp, r, n);
        }
        if (d < 0) {
            // the receiver stopped taking messages, or (RC) started its ring anew under this connection
            return live ? -1 : WcStatus.RETRY_EXC_ERR.ordinal();
        }
        int st = high(r);
        int kind = st & 0xFF;
        if (kind == Ctrl.DONE) {
            if (d >= qp.sqSent - qp.sqConsumer) {
                return -1; // names a message not yet whole in the ring: no receiver answers that (a broken peer's word)
            }
            retireDone(qp, d + 1);
            qp.rnrLeft = qp.rnrRetry;
            return -1;
        }
        retireDone(qp, d); // taken before the one refused
        if (d > 0) {
            qp.rnrLeft = qp.rnrRetry; // progress, as a DONE: the retries count for the refused message alone
        }
        if (kind == Ctrl.RNR) {
            engine.counters.increment(qp.stats, QpCounter.RCVD_RNR_NAKS);
            if (qp.rnrRetry != 7) {
                if (qp.rnrLeft == 0) {
                    return WcStatus.RNR_RETRY_EXC_ERR.ordinal();
                }
                qp.rnrLeft--;
            }
            qp.rnrUntil = engine.clock.nanoTime() + rnrNanos(st >>> Ctrl.RNR_CODE_SHIFT); // not the cycle's: this may run at post time
            if (qp.rnrUntil == 0) {
                qp.rnrUntil = 1;
            }
            qp.sqSent = qp.sqConsumer; // go back: the refused message and every one after it are sent again
            qp.sending = false;
            qp.retry = true;
            return -1;
        }
        engine.counters.increment(qp.stats, QpCounter.RCVD_NAKS);
        int syndrome = kind - Ctrl.ERROR;
        return (syndrome == Ctrl.NAK_REMOTE_ACCESS ? WcStatus.REM_ACCESS_ERR
                : syndrome == Ctrl.NAK_INVALID_REQUEST ? WcStatus.REM_INV_REQ_ERR : WcStatus.REM_OP_ERR).ordinal();
    }

    /**
     * @return which of the {@code n} messages in flight the result word {@code r} answers (0: the first, whose number
     *         is {@code firstMsg}), or -1 when it answers none of them (no result yet, or one for an earlier message)
     */
    private static int covered(ShmQp qp, long r, int n) {
        int d = low(r) - qp.firstMsg;
        return high(r) != 0 && d >= 0 && d < n ? d : -1;
    }

    /** Completes the first {@code k} messages in flight: the receiver took them. */
    private void retireDone(ShmQp qp, int k) {
        for (int i = 0; i < k; i++) {
            retire(qp, qp.sq[(int) (qp.sqConsumer & qp.sqMask)], WcStatus.SUCCESS.ordinal());
        }
        qp.firstMsg += k;
    }

    /**
     * Writes the next chunk of the SEND at {@code sqSent}, {@code n} bytes from {@code qp.sendOffset} of its {@code total}, into the
     * peer's ring at position {@code pos} (the caller checked the room and holds it: {@link #sendHold}) and
     * publishes it; the caller ends its hold and then tells the receiver ({@link #notify}).
     *
     * @return true when it was the message's last chunk
     */
    private boolean writeSlot(ShmQp qp, Wqe w, long pos, int n, long total, boolean writeImm) {
        long pa = qp.peer.ctrlAddr; // the data path's accesses go through ALL (offsets from the layout)
        long s = qp.peerRing + (pos & MASK) * Ctrl.SLOT;
        if (n <= Ctrl.INLINE) {
            gather(w, qp.sendOffset, n, pa + s + Ctrl.S_INLINE); // in the header's own line
        } else {
            Sgl.gatherCovered(w, qp.sendOffset, n, qp.peer.ctrl, s + Ctrl.SLOT_HEADER);
        }
        if (writeImm) {
            ALL.set(ValueLayout.JAVA_LONG, pa + s + Ctrl.S_TOTAL, w.length);
        }
        boolean last = qp.sendOffset + n == total;
        int flags = (qp.sendOffset == 0 ? Ctrl.F_FIRST | (qp.retry ? Ctrl.F_RETRY : 0) : 0) | (last ? Ctrl.F_LAST : 0)
                | messageFlags(w.opcode, w.flags, writeImm);
        publishSlot(qp, pos, pa + s, flags | w.opcode.ordinal() << 8, n, w.imm);
        qp.sendOffset += n;
        return last;
    }

    /** @return a message's flags that every chunk of it carries: SOLICITED, IMM, INV */
    private static int messageFlags(WrOpcode op, int sendFlags, boolean writeImm) {
        return ((sendFlags & io.jrdma.verbs.SendFlags.SOLICITED) != 0 ? Ctrl.F_SOLICITED : 0)
                | (op == WrOpcode.SEND_WITH_IMM || writeImm ? Ctrl.F_IMM : 0)
                | (op == WrOpcode.SEND_WITH_INV ? Ctrl.F_INV : 0);
    }

    /** Stores the header of the slot at absolute address {@code at} (ring position {@code pos}), its payload written: the sequence last. */
    private void publishSlot(ShmQp qp, long pos, long at, int flagsOp, int n, int imm) {
        ALL.set(ValueLayout.JAVA_LONG, at + Ctrl.S_FLAGS_LEN, word(flagsOp, n));
        ALL.set(ValueLayout.JAVA_LONG, at + Ctrl.S_IMM_MSG, word(imm, qp.msg));
        // sequence and QPN in one store, last: release for the receiver's acquire of the sequence; volatile: the
        // first half of the Dekker pair with the receiver's clear of its watched flag (notify's load comes after)
        LONG.setVolatile(ALL, at + Ctrl.S_SEQ, word(seq(pos), qp.destQpn));
        engine.counters.increment(qp.stats, QpCounter.SENT_PKTS);
        engine.counters.add(qp.stats, QpCounter.SENT_BYTES, n);
        qp.ringWrite = pos + 1;
        qp.retry = false;
    }

    /**
     * A sender, before a slot's stores: takes its hold ({@link Ctrl#SEND_HOLD}: its own word, else the destination
     * QP's held word with a CAS), then checks that the peer QP is live and names it as partner ({@link #peerQpLive}).
     * A QP that lets its partner go clears the name, then waits while the hold is set before it clears its ring, so
     * a slot stored under a check that passed is in the ring by the time it is cleared, and a check after the clear
     * fails. {@link #sendUnhold} ends it, after the sequence's store.
     *
     * @return false (nothing held) when the peer QP is not live or not this QP's partner, or when another
     *         initiator has its held word (locked holds only; the next cycle tries again)
     */
    private boolean sendHold(ShmQp qp) {
        long held;
        if (qp.ownHold) {
            held = qp.ownHoldAddr;
            INT.setOpaque(ALL, held, Ctrl.SEND_HOLD); // the plain store of target()'s own hold, same pairing
        } else {
            if (qp.peer == null || qp.peer.dead || qp.peerDir < 0 && !findPeerQp(qp)) {
                return false; // no entry to hold
            }
            held = qp.peer.ctrlAddr + qp.peerDir + Ctrl.Q_HELD;
            if (!INT.compareAndSet(ALL, held, 0, Ctrl.SEND_HOLD)) {
                return false;
            }
        }
        if (peerQpLive(qp)) {
            return true;
        }
        INT.setRelease(ALL, held, 0);
        return false;
    }

    /** Ends {@link #sendHold}'s hold with a release store of 0, after the slot's sequence store. */
    private static void sendUnhold(ShmQp qp) {
        INT.setRelease(ALL, qp.ownHold ? qp.ownHoldAddr : qp.peer.ctrlAddr + qp.peerDir + Ctrl.Q_HELD, 0);
    }

    /**
     * The posting thread, driving the engine, the send queue empty or holding only messages in the ring whole
     * ({@link #executeDirect}, {@link #directBehind}): a SEND (with immediate data, with invalidate) of one SGE that
     * fits one slot, written into the peer's ring from the work request itself, with the checks and counters of the
     * queued path ({@link Sgl#validate}, {@link #send}), and the next message number. The request is kept as the send
     * queue's next WQE after the slot's stores ({@link #keepSent}), already in the ring whole ({@code sqSent} past it), so
     * the service that follows only reads its result, as for a queued SEND whose slot it wrote: the completion
     * when it says DONE, a resend from the WQE after an RNR, a NAK's error, the flush if the QP fails meanwhile.
     * INLINE data is copied into the WQE's inline area as the post would have (the application may reuse its
     * buffer at once; a resend reads the copy).
     *
     * @return {@link Engine#IN_FLIGHT}, or {@link Engine#DECLINED} (nothing written) when the queued path must take
     *         it: a local key it cannot use here (the queued path completes it with LOC_PROT_ERR, or takes an
     *         INLINE source another region of the PD covers), a message of more than one slot, a peer QP that takes
     *         no requests (the queued path waits out the retries), a ring with no room, the first SEND since the QP
     *         connected (the queued path finds its position) or a ring lost to its receiver's new connection (the
     *         queued path fails it)
     */
    private int sendDirect(ShmQp qp, SendWorkRequest wr, WrOpcode op, int length) {
        // (the first SEND since it connected: the queued path finds the position; a lost ring: it fails there)
        if (length > Ctrl.CHUNK || qp.ringGen < 0 || qp.ringLost) {
            return Engine.DECLINED;
        }
        long la = wr.sgeAddr(0);
        Mr mr = context.keys.lookupLocal(wr.sgeLkey(0));
        // a region whose memory was freed while registered: the queued path completes it with LOC_PROT_ERR
        if (mr == null || !mr.permits(qp.pd, 0, la, length) || !mr.segment.scope().isAlive() || !sendHold(qp)) {
            return Engine.DECLINED;
        }
        long pos = qp.ringWrite;
        if (pos - qp.ringReadSeen >= Ctrl.RING_SLOTS && !ringRoom(qp, pos)) {
            sendUnhold(qp);
            return Engine.DECLINED;
        }
        // the slot first, from the request: what must outlive the post is kept after it (keepSent), off the message's path
        long at = qp.peer.ctrlAddr + qp.peerRing + (pos & MASK) * Ctrl.SLOT;
        long from = la - mr.address;
        try {
            if (length == 8) { // one load and one store (perftest's latency tests post 8 B)
                ALL.set(ValueLayout.JAVA_LONG_UNALIGNED, at + Ctrl.S_INLINE, mr.segment.get(ValueLayout.JAVA_LONG_UNALIGNED, from));
            } else {
                copyIntoSlot(qp, mr, from, at, length);
            }
        } catch (IllegalStateException freedMeanwhile) { // the application closed the source's arena during the post
            sendUnhold(qp);
            return Engine.DECLINED; // nothing published, no number taken: the queued path's LOC_PROT_ERR
        }
        qp.msg++; // a new number for each message and each try: a result for an earlier try never matches it
        int flags = Ctrl.F_FIRST | Ctrl.F_LAST | (qp.retry ? Ctrl.F_RETRY : 0) | messageFlags(op, wr.flags(), false);
        publishSlot(qp, pos, at, flags | op.ordinal() << 8, length, wr.imm());
        sendUnhold(qp);
        notify(qp.peer, qp.peerDir);
        keepSent(qp, wr, op, length, mr, from);
        return Engine.IN_FLIGHT;
    }

    /** Copies {@code length} bytes at {@code from} in {@code mr} into the peer's slot at absolute address {@code at}. */
    private static void copyIntoSlot(ShmQp qp, Mr mr, long from, long at, int length) {
        MemorySegment.copy(mr.segment, from, qp.peer.ctrl, at - qp.peer.ctrlAddr
                + (length <= Ctrl.INLINE ? Ctrl.S_INLINE : Ctrl.SLOT_HEADER), length);
    }

    /** @return the peer QP entry's generation ({@link Ctrl#Q_GEN}; volatile: after the partner's fields were read) */
    private static long peerGeneration(ShmQp qp) {
        return (long) LONG.getVolatile(ALL, qp.peer.ctrlAddr + qp.peerDir + Ctrl.Q_GEN);
    }

    /**
     * A sender holding the receiving QP (its partner check passed) whose entry's generation is not the one at which
     * this QP last found its position in that ring ({@link ShmQp#ringGen}): the first chunk since this QP connected
     * (RC or UC: a receiver's positions start at a random base at each connection), or, UC, the receiver was
     * modified since (reset and connected again, its ring cleared). The position to
     * write next is found from the ring itself: one past the newest slot the ring holds (each slot's sequence names
     * its position), or the receiver's R_READ when it holds none. A NIC's UC responder takes the next message that
     * starts, whatever its PSN; here the positions must agree, so a UC connection goes on when only one end was reset
     * and connected again (docs/shm-design.md, "UC"). A slot whose sequence names a position behind R_READ, or a
     * ring or more past it (where no sender writes), is ignored.
     */
    private static void findPosition(ShmQp qp, long gen) {
        long pa = qp.peer.ctrlAddr;
        // acquire; release partner: the receiver's R_READ, stored after its reads of the slots (and set to the
        // connection's base, its ring cleared, before its partner's name was published: this QP holds it and read
        // that name)
        long r = (long) LONG.getAcquire(ALL, pa + qp.peerResp + Ctrl.R_READ);
        long w = r;
        for (int i = 0; i < Ctrl.RING_SLOTS; i++) {
            int sq = (int) INT.getAcquire(ALL, pa + qp.peerRing + (long) i * Ctrl.SLOT + Ctrl.S_SEQ);
            if (sq == 0) {
                continue; // cleared, or never written
            }
            long p = r + (sq - 1 - (int) r); // the position nearest R_READ whose sequence this is
            if ((p & MASK) != i && sq == 1) {
                p--; // seq() skips 0: 1 is also the sequence of the position before a multiple of 2^32
            }
            // a sender writes a position only while it is less than a ring past the R_READ it last read, and R_READ
            // only grows: every slot names a position less than a ring past r
            if ((p & MASK) == i && p >= w && p < r + Ctrl.RING_SLOTS) { // (w >= r: nothing behind R_READ counts)
                w = p + 1;
            }
        }
        qp.ringWrite = w;
        qp.ringReadSeen = r;
        qp.ringStart = r;
        qp.ringGen = gen;
    }

    /** A sender whose view of the peer's ring is full: reads the receiver's R_READ again. @return true when there is room */
    private static boolean ringRoom(ShmQp qp, long pos) {
        // acquire; release partner: the receiver's R_READ, stored after its reads of the slots
        qp.ringReadSeen = (long) LONG.getAcquire(ALL, qp.peer.ctrlAddr + qp.peerResp + Ctrl.R_READ);
        return pos - qp.ringReadSeen < Ctrl.RING_SLOTS;
    }

    /**
     * {@link #sendDirect}, after the slot's publication: keeps the request as the send queue's next WQE, in the ring
     * whole behind the SENDs in flight before it (if any), numbered {@code qp.msg}, and publishes it.
     */
    private void keepSent(ShmQp qp, SendWorkRequest wr, WrOpcode op, int length, Mr mr, long from) {
        long producer = qp.sqProducerAcquire();
        if (qp.sqConsumer == producer) {
            qp.firstMsg = qp.msg; // nothing in flight before it: it is the first one numbered
        } else {
            sentBehind++;
        }
        qp.sendOffset = length;
        boolean inline = (wr.flags() & io.jrdma.verbs.SendFlags.INLINE) != 0;
        Wqe w = qp.keepDirect(wr, op, length, inline ? null : mr);
        if (inline) { // copied as the post copies it (the application may reuse its buffer at once; a resend reads it)
            if (length == 8) {
                w.inlineArea.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, mr.segment.get(ValueLayout.JAVA_LONG_UNALIGNED, from));
            } else {
                MemorySegment.copy(mr.segment, from, w.inlineArea, 0, length);
            }
        }
        qp.sqSent = producer + 1; // the kept WQE (at the producer: every one before it in flight) is in the ring whole
        qp.sqUnderWay = qp.sqSent;
        qp.publishKept();
    }

    /**
     * After a slot's sequence was stored (volatile): tells the receiver, peer {@code p} whose QP entry is at {@code dir}
     * (an RC or UC partner, a UD datagram's receiving QP). A QP on its engine's watched list needs
     * nothing (its engine loads the slot itself); otherwise the pending word is flagged. Then a receiver whose
     * engine may sleep is woken if it does.
     */
    private static void notify(Peer p, long dir) {
        if ((int) INT.getVolatile(ALL, p.ctrlAddr + dir + Ctrl.Q_WATCHED) == 0) {
            signal(p.ctrl);
        } else if (p.maySleep) {
            wake(p.ctrl);
        }
    }

    /** Copies {@code n <= Ctrl.INLINE} bytes of the WQE's gather list to address {@code at} of a slot (through ALL): 8 bytes of one SGE are one load and one store. */
    private static void gather(Wqe w, long off, int n, long at) {
        if (n == 8 && w.numSge == 1 && off == 0) {
            long v;
            if (w.inline) {
                v = w.inlineArea.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            } else {
                Mr mr = w.sgeMr[0];
                v = mr.segment.get(ValueLayout.JAVA_LONG_UNALIGNED, w.sgeAddr[0] - mr.address);
            }
            ALL.set(ValueLayout.JAVA_LONG_UNALIGNED, at, v);
        } else {
            Sgl.gatherCovered(w, off, n, ALL, at);
        }
    }

    /**
     * @return the sequence a slot holds once written for ring position {@code pos}: {@code (int) (pos + 1)}, but
     *         never 0, which is a cleared slot's (after 2^32 positions the int wraps)
     */
    static int seq(long pos) {
        int v = (int) (pos + 1);
        return v == 0 ? 1 : v;
    }

    /** @return the 8-byte word that holds {@code lo} at its lower address and {@code hi} at its higher */
    private static long word(int lo, int hi) {
        return LITTLE ? (lo & 0xFFFFFFFFL) | (long) hi << 32 : (long) lo << 32 | (hi & 0xFFFFFFFFL);
    }

    /** IBA table 45: the RNR NAK timer's codes in nanoseconds. */
    static long rnrNanos(int code) {
        return RNR_NANOS[code & 31];
    }

    private static final long[] RNR_NANOS = {
        655_360_000L, 10_000, 20_000, 30_000, 40_000, 60_000, 80_000, 120_000, 160_000, 240_000, 320_000,
        480_000, 640_000, 960_000, 1_280_000, 1_920_000, 2_560_000, 3_840_000, 5_120_000, 7_680_000,
        10_240_000, 15_360_000, 20_480_000, 30_720_000, 40_960_000, 61_440_000, 81_920_000, 122_880_000,
        163_840_000, 245_760_000, 327_680_000, 491_520_000
    };

    // ------------------------------------------------------------------ UD (docs/shm-design.md, "UD")

    /**
     * Engine thread, a UD QP's modify to RTR: its ring's positions start at a random base, as a connection's do, and
     * R_TAIL, where its senders write next, with them; both before the state's store that lets senders in.
     */
    private void udReady(ShmQp qp) {
        qp.resetProgress();
        qp.ringUsed = true;
        LONG.setVolatile(ctrl, qp.resp + Ctrl.R_TAIL, startRing(qp));
    }

    /**
     * Engine thread, a UD QP reset or destroyed: as a receiver, its state stored first (a sender checks it while it
     * holds the QP's held word), then a wait while a sender holds the word, so that a datagram whose checks passed is
     * in the ring before the ring is cleared; as a sender, the peers it mapped let go.
     */
    private void udReset(ShmQp qp) {
        udRelease(qp);
        if (!qp.ringUsed) {
            return;
        }
        INT.setVolatile(ctrl, qp.dir + Ctrl.Q_STATE, QpState.RESET.ordinal());
        nextGeneration(qp);
        long start = System.nanoTime();
        long asked = start - 1_000_000L;
        int v;
        while ((v = (int) INT.getVolatile(ctrl, qp.dir + Ctrl.Q_HELD)) != 0) {
            long now = System.nanoTime();
            boolean ask = now - asked >= 1_000_000L; // whether its holder lives: at most once a millisecond
            if (ask) {
                asked = now;
            }
            if (ask && v <= UD_HOLD_BASE && holderGone(holderPid(v)) || now - start > DRAIN_NANOS) {
                // a sender that died inside its hold, or one stopped there: its word goes, its slot (if it ever lands)
                // is one the next RTR's random base does not read as a datagram
                boolean unused = (boolean) INT.compareAndSet(ctrl, qp.dir + Ctrl.Q_HELD, v, 0);
                engine.counters.increment(io.jrdma.engine.core.Counter.ENGINE_ERRORS);
                break;
            }
            Thread.onSpinWait();
        }
    }

    /**
     * A UD sender's value for the held word: {@code -2 - (pid | serial << 22)}, at most {@link #UD_HOLD_BASE} (SEND_HOLD
     * is -1, a one-sided initiator's key index positive; the serial below 511, so the value never wraps), naming its
     * process (pids are below 2^22) and, by a serial of this process's holds, the hold among the process's last 511: a
     * sender lets go of the word by a CAS from this value, so one stopped past a reset's drain, whose word the reset
     * took back, clears another sender's hold later only if that one holds with the same value
     */
    private int udHoldValue() {
        return UD_HOLD_BASE - (pid | Math.floorMod(UD_HOLD_SERIAL.getAndIncrement(), 511) << 22);
    }

    private static final java.util.concurrent.atomic.AtomicInteger UD_HOLD_SERIAL = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Tests: run once by the next UD sender of this context inside its hold, at {@link #udStallPoint}, as if its
     * thread stopped there (what a reset that outwaits the hold, and the senders after it, do meanwhile)
     */
    Runnable udStallForTests;
    /** Tests: where {@link #udStallForTests} runs: one of the {@code UD_STALL_*} points of {@link #udWrite} */
    int udStallPoint;
    /** {@link #udWrite}'s stall points for tests: before the copy (after the look at the word before it) */
    static final int UD_STALL_BEFORE_COPY = 0;
    /** after the copy and the header's stores, before the look at the word that precedes the sequence */
    static final int UD_STALL_AFTER_COPY = 1;
    /** after that look, before the sequence's CAS */
    static final int UD_STALL_BEFORE_SEQ = 2;
    /** after the sequence's CAS, before R_TAIL's */
    static final int UD_STALL_BEFORE_TAIL = 3;

    /** Runs {@link #udStallForTests} once when it is set for {@code point}. */
    private void udStall(int point) {
        Runnable stall = udStallForTests;
        if (stall != null && udStallPoint == point) {
            udStallForTests = null;
            stall.run();
        }
    }

    /** set by {@link #udWrite} when it let the word go itself (before telling the receiver); engine thread */
    private boolean udLetGo;

    private static int holderPid(int v) {
        return (UD_HOLD_BASE - v) & 0x3FFFFF;
    }

    /** the largest UD hold value */
    private static final int UD_HOLD_BASE = -2;

    /** the pollfd of {@link #holderGone} (engine thread) */
    private final MemorySegment udPollFd = scratchArena.allocate(8, 8);

    /**
     * @return true when process {@code p} has exited: its pidfd says so (a zombie too, which kill(pid, 0) still finds),
     *         or there is no such process; two or three system calls, on the path of a word that stays held
     */
    private boolean holderGone(int p) {
        int fd = Native.pidfd(p);
        if (fd < 0) {
            return !Native.alive(p, callState); // no such process (ESRCH), or a kernel without pidfd_open
        }
        try {
            return Native.exited(fd, udPollFd);
        } finally {
            Native.close(fd);
        }
    }

    /** @return the peer contexts this context maps now (tests) */
    int mappedPeers() {
        return peerList.length;
    }

    /** A UD QP lets every peer it mapped go, and forgets where its datagrams went. */
    private void udRelease(ShmQp qp) {
        java.util.Arrays.fill(qp.udAh, null);
        java.util.Arrays.fill(qp.udPeer, null);
        for (int k = 0; k < qp.udPeerCount; k++) {
            Peer p = qp.udPeers[k];
            qp.udPeers[k] = null;
            letGo(p, qp);
        }
        qp.udPeerCount = 0;
        qp.udWaitSince = 0;
    }

    /** Engine thread, peer {@code p} found dead: UD QP {@code qp} forgets it, and lets it go if it used it. */
    private void udForget(ShmQp qp, Peer p) {
        for (int i = 0; i < ShmQp.UD_TARGETS; i++) {
            if (qp.udPeer[i] == p) {
                qp.udPeer[i] = null;
                qp.udAh[i] = null;
            }
        }
        for (int k = 0; k < qp.udPeerCount; k++) {
            if (qp.udPeers[k] == p) {
                qp.udPeers[k] = qp.udPeers[--qp.udPeerCount];
                qp.udPeers[qp.udPeerCount] = null;
                letGo(p, qp);
                return;
            }
        }
    }

    /**
     * Where UD QP {@code qp}'s datagram to QP {@code qpn} through {@code ah} goes: an entry of the QP's small table
     * of receivers (the address handle and QPN, the peer context mapped, the receiving QP's index in its directory),
     * checked by one load of the QPN there; on a miss the handle's GID is parsed, its context mapped (or found
     * mapped) and its directory searched, the control path's work.
     *
     * @return the table's entry, or -1 when the GID names no live shared-memory context or it has no such QP
     */
    private int udTarget(ShmQp qp, io.jrdma.engine.core.Ah ah, int qpn) {
        int stale = -1;
        for (int i = 0; i < ShmQp.UD_TARGETS; i++) {
            if (qp.udAh[i] == ah && qp.udQpn[i] == qpn) {
                Peer p = qp.udPeer[i];
                if (p != null && !p.dead
                        && (int) INT.getVolatile(ALL, p.ctrlAddr + Ctrl.qp(qp.udIndex[i]) + Ctrl.Q_QPN) == qpn) {
                    return i;
                }
                qp.udAh[i] = null; // its QP or context went: found again below, into this entry
                stale = i;
                break;
            }
        }
        int[] who = parseGid(ah.attr().dgid());
        Peer p = who == null ? null : udPeer(qp, who);
        int index = p == null ? -1 : qpIndex(p, qpn);
        if (index < 0) {
            udUnused(qp, p); // (a peer mapped for nothing)
            return -1;
        }
        int i = stale;
        if (i < 0) {
            i = qp.udNextTarget;
            qp.udNextTarget = (i + 1) % ShmQp.UD_TARGETS;
        }
        Peer old = qp.udPeer[i];
        qp.udAh[i] = ah;
        qp.udQpn[i] = qpn;
        qp.udPeer[i] = p;
        qp.udIndex[i] = index;
        udUnused(qp, old);
        return i;
    }

    /**
     * {@code qp} lets peer {@code p} go when no entry of its table of receivers names it: a UD QP maps at most as many
     * peers as the table has entries, whatever number of contexts it sends to (each mapping is the peer's whole
     * control segment, a pidfd, and a place in the liveness check)
     */
    private void udUnused(ShmQp qp, Peer p) {
        if (p == null) {
            return;
        }
        for (int i = 0; i < ShmQp.UD_TARGETS; i++) {
            if (qp.udPeer[i] == p) {
                return;
            }
        }
        udForget(qp, p);
    }

    /** @return the peer context {pid, fd} names, mapped (as a connection maps its peer) and used by {@code qp}, or null when unreachable */
    private Peer udPeer(ShmQp qp, int[] who) {
        Peer p = mapPeer(who, peerId(who[0], who[1]));
        for (int k = qp.udPeerCount - 1; k >= 0; k--) {
            Peer q = qp.udPeers[k];
            if (q != p && q.pid == who[0] && q.ctrlFd == who[1]) {
                udForget(qp, q); // its context closed and the GID names another now (or nothing)
            }
        }
        if (p == null) {
            return null; // its datagrams are dropped
        }
        for (int k = 0; k < qp.udPeerCount; k++) {
            if (qp.udPeers[k] == p) {
                return p;
            }
        }
        if (qp.udPeerCount == qp.udPeers.length) {
            qp.udPeers = java.util.Arrays.copyOf(qp.udPeers, qp.udPeerCount * 2);
        }
        qp.udPeers[qp.udPeerCount++] = p;
        p.attach(qp);
        return p;
    }

    /**
     * A UD SEND or SEND_WITH_IMM of at most the MTU (the post checked it), as one slot of the receiving QP's ring:
     * the sender takes that QP's held word (a CAS: the ring's senders write one at a time, in any process), checks
     * that the QP is a UD QP that takes datagrams, writes at R_TAIL if the ring has room (R_READ, published by the
     * receiver after each read), stores the sequence last, then R_TAIL, and lets the word go. A datagram that finds
     * no such QP is dropped and counted ({@code ud_dropped_sends}); one that finds the word busy or the ring full waits
     * ({@link #udWait}); either way the SEND completes, as UD's do once sent. The receiver checks the Q_Key and takes
     * a receive ({@link #placeUd}).
     *
     * @return SUCCESS's ordinal, or {@link #PENDING} while it waits for the word or for room
     */
    private int sendUd(ShmQp qp, Wqe w) {
        int i = udTarget(qp, w.ah, w.remoteQpn);
        if (i < 0) {
            return udDropped(qp);
        }
        int n = (int) w.length;
        if (!w.inline && !Sgl.covers(context.keys, qp, w, 0, n)) {
            // a region deregistered or freed since validation (while the datagram waited): nothing is written
            qp.udWaitSince = 0;
            return WcStatus.LOC_PROT_ERR.ordinal();
        }
        Peer p = qp.udPeer[i];
        long pa = p.ctrlAddr;
        long dir = Ctrl.qp(qp.udIndex[i]);
        long held = pa + dir + Ctrl.Q_HELD;
        int mine = udHoldValue();
        if (!INT.compareAndSet(ALL, held, 0, mine)) {
            return udBusy(qp, held);
        }
        udLetGo = false;
        try {
            return udWrite(qp, w, i, p, dir, held, mine, n);
        } finally {
            if (!udLetGo) {
                // by a CAS from its own value: a reset that outwaited this hold took the word back, and it may be
                // another sender's now (also after a copy that threw: the region's memory freed meanwhile)
                boolean unused = (boolean) INT.compareAndSet(ALL, held, mine, 0);
            }
        }
    }

    /**
     * {@link #sendUd} under the receiving QP's held word ({@code held}, value {@code mine}): the checks, the slot,
     * R_TAIL, the word let go, then the receiver told; on the other paths sendUd lets the word go.
     */
    private int udWrite(ShmQp qp, Wqe w, int i, Peer p, long dir, long held, int mine, int n) {
        long pa = p.ctrlAddr;
        long qs = (long) LONG.getVolatile(ALL, pa + dir + Ctrl.Q_QPN); // QPN and state: one load, after the hold
        int st = high(qs);
        long resp = pa + Ctrl.resp(qp.udIndex[i]);
        long tail = (long) LONG.getAcquire(ALL, resp + Ctrl.R_TAIL); // acquire partner: the sender before's release
        long read = (long) LONG.getAcquire(ALL, resp + Ctrl.R_READ); // release partner: the receiver's consumed()
        long loaded = tail;
        if (low(qs) != w.remoteQpn || !takesRequests(st) || (long) LONG.getVolatile(ALL, pa + dir + Ctrl.Q_DEST_ID) != Ctrl.UD_MARK) {
            return udDropped(qp); // not a UD QP taking datagrams (a reset one among them)
        }
        if (tail - read < 0) {
            // a sender died between its slot's sequence and R_TAIL, and the receiver has read that slot: the next
            // position is the first one unread
            tail = read;
        }
        long ring = pa + Ctrl.ring(qp.udIndex[i]);
        for (int k = 0; k < Ctrl.RING_SLOTS
                && (int) INT.getAcquire(ALL, ring + (tail & MASK) * Ctrl.SLOT + Ctrl.S_SEQ) == seq(tail); k++) {
            // a sender died there after its sequence and before R_TAIL (or several did, one after another), and the
            // receiver has not read it yet: that datagram stays, this one goes after it (only a datagram of this
            // position carries its sequence)
            tail++;
        }
        if (tail - read >= Ctrl.RING_SLOTS) {
            return udWait(qp); // its ring full: held back while the receiver reads, as a lossless fabric's pause
        }
        long s = ring + (tail & MASK) * Ctrl.SLOT;
        // the slot's sequence now (the previous lap's, or 0 after a clear): published over by a CAS from it below
        long before = (long) LONG.getAcquire(ALL, s + Ctrl.S_SEQ);
        if (udStallForTests != null) { // a test's stand-in for this thread stopped here (once)
            udStall(UD_STALL_BEFORE_COPY);
        }
        if ((int) INT.getVolatile(ALL, held) != mine) {
            return udDropped(qp); // a reset outwaited this hold and took the word back: the ring is not this one's now
        }
        Sgl.gatherCovered(w, 0, n, ALL, s + Ctrl.SLOT_HEADER);
        var attr = w.ah.attr();
        int qkey = w.remoteQkey < 0 ? qp.qkey : w.remoteQkey; // IBA 10.2.4.2: a Q_Key with its high bit set is the QP's own
        ALL.set(ValueLayout.JAVA_INT, s + Ctrl.U_QKEY, qkey);
        ALL.set(ValueLayout.JAVA_INT, s + Ctrl.U_SRC_PID, pid);
        ALL.set(ValueLayout.JAVA_INT, s + Ctrl.U_SRC_FD, ctrlFd);
        ALL.set(ValueLayout.JAVA_INT, s + Ctrl.U_TCLASS_HOP, (attr.trafficClass() & 0xFF) << 8 | attr.hopLimit() & 0xFF);
        ALL.set(ValueLayout.JAVA_INT, s + Ctrl.U_FLOW, attr.flowLabel() & 0xFFFFF);
        int flags = Ctrl.F_FIRST | Ctrl.F_LAST | messageFlags(w.opcode, w.flags, false);
        ALL.set(ValueLayout.JAVA_LONG, s + Ctrl.S_FLAGS_LEN, word(flags | w.opcode.ordinal() << 8, n));
        ALL.set(ValueLayout.JAVA_LONG, s + Ctrl.S_IMM_MSG, word(w.imm, qp.qpn));
        if (udStallForTests != null) {
            udStall(UD_STALL_AFTER_COPY);
        }
        // last, by a CAS from the value read before the copy (volatile: release for the receiver's acquire, and the
        // Dekker pair with its watched flag, below), and only while the word is still this hold's: a sender stopped
        // past a reset's drain, whose word was taken back, does not publish (into a ring cleared since, or over a
        // datagram written there since)
        if ((int) INT.getVolatile(ALL, held) != mine) {
            return udDropped(qp);
        }
        if (udStallForTests != null) {
            udStall(UD_STALL_BEFORE_SEQ);
        }
        if (!LONG.compareAndSet(ALL, s + Ctrl.S_SEQ, before, word(seq(tail), w.remoteQpn))) {
            return udDropped(qp);
        }
        if (udStallForTests != null) {
            udStall(UD_STALL_BEFORE_TAIL);
        }
        // a CAS from the tail read: a reset that outwaited this hold has set another base, which this must not move
        boolean unused = (boolean) LONG.compareAndSet(ALL, resp + Ctrl.R_TAIL, loaded, tail + 1);
        // let go here, before the receiver's wake-up (a system call when it sleeps), by a CAS from its own value
        boolean letGo = (boolean) INT.compareAndSet(ALL, held, mine, 0);
        udLetGo = true;
        qp.udWaitSince = 0;
        notify(p, dir);
        engine.counters.increment(qp.stats, QpCounter.SENT_PKTS);
        engine.counters.add(qp.stats, QpCounter.SENT_BYTES, n);
        return OK;
    }

    /**
     * The receiving QP's held word is not free: another sender writes (the next cycle tries again, {@link #udWait}),
     * or one that died inside its hold left it (taken over once the word has been busy for 1 ms), or one stopped
     * inside it (the datagram dropped after the wait).
     */
    private int udBusy(ShmQp qp, long held) {
        int v = (int) INT.getVolatile(ALL, held);
        long now = System.nanoTime();
        if (qp.udWaitSince != 0 && now - qp.udWaitSince > 1_000_000L && now - qp.udHolderChecked > 1_000_000L
                && v <= UD_HOLD_BASE && holderPid(v) != pid) {
            qp.udHolderChecked = now; // at most once a millisecond
            if (holderGone(holderPid(v)) && INT.compareAndSet(ALL, held, v, 0)) {
                return PENDING; // a dead sender's word (its process gone): free now, the next cycle takes it
            }
        }
        return udWait(qp);
    }

    /**
     * A datagram that cannot go yet (its receiving QP's held word busy, or its ring full): the next duty cycle tries
     * again, for at most {@link #UD_WAIT_NANOS} in all; then it is dropped and counted.
     *
     * @return {@link #PENDING}, or SUCCESS's ordinal when it was dropped
     */
    private int udWait(ShmQp qp) {
        long now = System.nanoTime();
        if (qp.udWaitSince == 0) {
            qp.udWaitSince = now | 1; // never 0
            return PENDING;
        }
        if (now - qp.udWaitSince > UD_WAIT_NANOS) {
            qp.udWaitSince = 0;
            return udDropped(qp);
        }
        return PENDING;
    }

    /**
     * how long a UD datagram waits for its receiving QP's held word and for room in its ring, in all, before it is
     * dropped: a receiver that reads holds its senders back, one that stops reading (or a sender stopped inside its
     * hold) costs each datagram this much
     */
    static final long UD_WAIT_NANOS = 100_000_000L;

    private int udDropped(ShmQp qp) {
        qp.udWaitSince = 0; // the next datagram's wait starts anew
        engine.counters.increment(io.jrdma.engine.core.Counter.UD_DROPPED_SENDS);
        return OK;
    }

    /** The 40 bytes a UD receive's GRH is built in before it is scattered. */
    private final MemorySegment udGrh = scratchArena.allocate(io.jrdma.verbs.Grh.LENGTH, 8);

    /**
     * The receiver's side of a UD datagram (as rxe's responder for UD): the QP must take datagrams and the Q_Key be
     * its own (else dropped and counted, no completion); it takes the next receive (none: dropped and counted, UD has
     * no RNR), which gets the 40-byte GRH (an IPv6 header: shm0's GIDs are IPv6-shaped; the sender's and this
     * context's GIDs, the address handle's traffic class, flow label and hop limit, the payload's length, next header
     * 0x1B: an IB transport header follows, none here) and then the payload; a datagram longer than the receive is
     * dropped and counted, the receive kept. The completion has the source QP and the GRH flag, byte_len the 40 bytes
     * too. A slot no sender writes (not a whole SEND or SEND_WITH_IMM of at most the MTU) is dropped and counted.
     *
     * @return DONE, DISCARDED, or ERROR when the receive's memory refused the data (LOC_PROT_ERR: the QP fails)
     */
    private int placeUd(ShmQp qp, long s, int flagsOp, int len) {
        long at = ctrlAddr + s;
        QpState state = qp.state;
        if (state != QpState.RTR && state != QpState.RTS && state != QpState.SQD) {
            engine.counters.increment(io.jrdma.engine.core.Counter.RCVD_BAD_STATE);
            return Ctrl.DISCARDED;
        }
        int flags = flagsOp & 0xFF;
        int op = flagsOp >>> 8 & 0xFF;
        boolean imm = op == WrOpcode.SEND_WITH_IMM.ordinal();
        if ((flags & (Ctrl.F_FIRST | Ctrl.F_LAST | Ctrl.F_INV)) != (Ctrl.F_FIRST | Ctrl.F_LAST)
                || op != WrOpcode.SEND.ordinal() && !imm || ((flags & Ctrl.F_IMM) != 0) != imm
                || Integer.compareUnsigned(len, qp.mtuBytes) > 0) {
            engine.counters.increment(io.jrdma.engine.core.Counter.RCVD_MALFORMED);
            return Ctrl.DISCARDED;
        }
        if (ALL.get(ValueLayout.JAVA_INT, at + Ctrl.U_QKEY) != qp.qkey) {
            engine.counters.increment(io.jrdma.engine.core.Counter.RCVD_BAD_QKEY);
            return Ctrl.DISCARDED;
        }
        RecvWqe r = qp.peekRecv(); // its own queue or its SRQ
        if (r == null) {
            engine.counters.increment(io.jrdma.engine.core.Counter.UD_DROPPED_NO_RECV);
            return Ctrl.DISCARDED;
        }
        if (io.jrdma.verbs.Grh.LENGTH + (long) len > r.capacity) {
            engine.counters.increment(io.jrdma.engine.core.Counter.RCVD_TOO_LONG); // the receive stays for the next
            return Ctrl.DISCARDED;
        }
        r = qp.takeRecv();
        long immSrc = ALL.get(ValueLayout.JAVA_LONG, at + Ctrl.S_IMM_MSG);
        writeUdGrh(at, len);
        int wcFlags = WorkCompletion.GRH | wcFlags(flags);
        long wrId = r.wrId;
        boolean placed = Sgl.scatter(context.keys, qp, r, 0, udGrh, 0, io.jrdma.verbs.Grh.LENGTH)
                && Sgl.scatter(context.keys, qp, r, io.jrdma.verbs.Grh.LENGTH, ctrl, s + Ctrl.SLOT_HEADER, len);
        qp.recvDone();
        if (!placed) { // a bad receive (rxe's class A): it fails, the QP moves to ERROR, the rest is flushed
            qp.recvCq.push(wrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, WorkCompletion.GRH, qp.qpn, high(immSrc));
            return Ctrl.ERROR;
        }
        qp.recvCq.push(wrId, WcStatus.SUCCESS, WcOpcode.RECV, io.jrdma.verbs.Grh.LENGTH + len, imm ? low(immSrc) : 0,
                wcFlags, qp.qpn, high(immSrc));
        return Ctrl.DONE;
    }

    /** {@link #placeUd}'s GRH, from the slot at absolute address {@code at}: allocation-free. */
    private void writeUdGrh(long at, int len) {
        MemorySegment g = udGrh;
        int tclassHop = ALL.get(ValueLayout.JAVA_INT, at + Ctrl.U_TCLASS_HOP);
        int flow = ALL.get(ValueLayout.JAVA_INT, at + Ctrl.U_FLOW) & 0xFFFFF;
        g.set(BE32, 0, 6 << 28 | (tclassHop >>> 8 & 0xFF) << 20 | flow);
        g.set(BE16, 4, (short) len);
        g.set(ValueLayout.JAVA_BYTE, 6, (byte) 0x1B);
        g.set(ValueLayout.JAVA_BYTE, 7, (byte) tclassHop);
        gidInto(g, 8, ALL.get(ValueLayout.JAVA_INT, at + Ctrl.U_SRC_PID), ALL.get(ValueLayout.JAVA_INT, at + Ctrl.U_SRC_FD));
        gidInto(g, 24, pid, ctrlFd);
    }

    /** Writes the GID of the context of process {@code p} and control descriptor {@code fd} at {@code off} of {@code g} ({@link #gid}). */
    private static void gidInto(MemorySegment g, long off, int p, int fd) {
        g.set(BE64, off, GID_PREFIX);
        g.set(BE32, off + 8, p);
        g.set(BE32, off + 12, fd);
    }

    /** the first 8 bytes of every shm0 GID ({@link #gid}), big-endian */
    private static final long GID_PREFIX = java.nio.ByteBuffer.wrap(gid(0, 0).raw()).getLong(0);
    private static final ValueLayout.OfLong BE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort BE16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    // ------------------------------------------------------------------ sleeping and waking (engine thread)

    /**
     * The idle engine sleeps on its control segment's futex word, so that a peer process that writes one of
     * its rings (or the result of one of its SENDs) can wake it: the "sleeping" flag is raised, the input
     * checked once more, then {@code FUTEX_WAIT} on the word read before the flag went up. A waker stores its
     * input with a volatile store, then reads the flag (the Dekker pair: one of the two sees the other).
     */
    @Override
    public boolean park(long nanos) {
        int seq = (int) INT.getVolatile(ctrl, Ctrl.H_FUTEX);
        INT.setVolatile(ctrl, Ctrl.H_SLEEPING, 1);
        if (!engine.hasPendingSignals() && !inputPending()) {
            parkUntil = engine.clock.nanoTime() + nanos;
            timespec.set(ValueLayout.JAVA_LONG, 0, nanos / 1_000_000_000L);
            timespec.set(ValueLayout.JAVA_LONG, 8, nanos % 1_000_000_000L);
            Native.futexWait(ctrlAddr + Ctrl.H_FUTEX, seq, timespec.address());
        }
        INT.setVolatile(ctrl, Ctrl.H_SLEEPING, 0);
        livenessTicks = 0; // after a sleep (up to the next liveness check: maxParkNanos) the next cycle reads the clock
        return true;
    }

    /**
     * With no QP active (no SEND waiting for its result, an RNR timer or ring room, no request waiting for a peer QP
     * to take requests, no flush) the idle engine parks until its next liveness check: every input ends the park
     * (a peer's slot, result, read position or error request wakes the futex; a local post, doorbell or control
     * operation wakes it too), and the check is the one thing left that needs the clock; with no peer to check, up
     * to {@value #NO_PEER_PARK_NANOS} ns (a context that waits for its first connection). With a QP active, or the
     * check due within 1 ms, the default 1 ms.
     */
    @Override
    public long maxParkNanos() {
        if (engine.hasActiveQps()) {
            return Idler.MAX_PARK;
        }
        if (peerList.length == 0) {
            return NO_PEER_PARK_NANOS;
        }
        long left = nextLivenessCheck - engine.clock.nanoTime();
        return left <= Idler.MAX_PARK ? Idler.MAX_PARK : Math.min(left, LIVENESS_NANOS);
    }

    /**
     * Tests, any thread: how long the engine may still sleep, read while it sleeps (its sleeping flag up): the rest
     * of its park's timeout, or -1 when it does not sleep now (tests wait until it says the engine is deep in a long
     * park before they give it input).
     */
    long sleepLeftNanos() {
        if ((int) INT.getVolatile(ctrl, Ctrl.H_SLEEPING) == 0) {
            return -1;
        }
        return parkUntil - engine.clock.nanoTime();
    }

    /** Engine thread: when the current (or last) park's timeout ends; read by {@link #sleepLeftNanos} */
    private volatile long parkUntil;

    @Override
    public void wake() {
        wake(ctrl);
    }

    /**
     * After a volatile store of input for the context whose control segment is {@code c} (a slot's sequence, an error
     * request): flags it in the context's pending word (stored only when it reads 0: a 1 read after the input's
     * store means that the engine has not cleared it yet, and its scan, after the clear, finds the input), then
     * wakes its engine if it sleeps.
     */
    static void signal(MemorySegment c) {
        if ((int) INT.getVolatile(c, Ctrl.H_PENDING) == 0) {
            INT.setVolatile(c, Ctrl.H_PENDING, 1);
        }
        wake(c);
    }

    /** Wakes the engine of the context whose control segment is {@code c} if it sleeps (a system call only then). */
    private static void wake(MemorySegment c) {
        if ((int) INT.getVolatile(c, Ctrl.H_SLEEPING) != 0) {
            int unused = (int) INT.getAndAdd(c, Ctrl.H_FUTEX, 1);
            Native.futexWake(c.address() + Ctrl.H_FUTEX);
        }
    }

    /** @return true when a ring, an error request or a SEND's result (or ring room) waits for this engine */
    private boolean inputPending() {
        for (int i = 0; i < slotHigh; i++) {
            ShmQp qp = slots[i];
            if (qp == null) {
                continue;
            }
            QpState s = qp.state;
            if (s == QpState.RESET || s == QpState.INIT || s == QpState.ERROR) {
                continue;
            }
            if ((int) INT.getVolatile(ctrl, qp.dir + Ctrl.Q_ERROR) != 0 || (int) INT.getVolatile(ctrl, qp.ring
                    + (qp.ringRead & MASK) * Ctrl.SLOT + Ctrl.S_SEQ) == seq(qp.ringRead)) {
                return true;
            }
            int n = qp.inFlight();
            if (n > 0 && qp.peer != null) {
                long r = (long) LONG.getVolatile(qp.peer.ctrl, qp.peerResp + Ctrl.R_RESULT);
                if (covered(qp, r, n) >= 0 || qp.sending
                        && qp.ringWrite - (long) LONG.getVolatile(qp.peer.ctrl, qp.peerResp + Ctrl.R_READ) < Ctrl.RING_SLOTS) {
                    return true;
                }
            }
        }
        return false;
    }

    @Override
    public boolean readsCycleClock() {
        return false; // the liveness check and RNR timers read the clock themselves
    }

    @Override
    public boolean hasWork(Qp q) {
        ShmQp qp = (ShmQp) q;
        return qp.sqConsumer != qp.sqProducerAcquire() || qp.sending;
    }

    // ------------------------------------------------------------------ device facts (control path)

    @Override
    public ConnectionManager connectionManager() {
        return cm;
    }

    @Override
    public String describe() {
        return "shm, pid " + pid + ", control fd " + ctrlFd;
    }

    @Override
    public java.util.List<String> limitations() {
        return ownHold ? java.util.List.of()
                : java.util.List.of(lockedHolds(Native.asymmetric() ? "turned off for this context" : Native.asymmetricReason()));
    }

    /** @return the limitation {@code jrdma devices -v} lists for a context (or the device) without the own hold */
    static String lockedHolds(String why) {
        return "one-sided operations hold a peer's key entry with a locked instruction each, not by their own word ("
                + why + ")";
    }

    @Override
    public DeviceAttr deviceAttr(DeviceAttr base) {
        // fast registration, LOCAL_INV, SEND_WITH_INV, SRQs (through Qp.takeRecv) and memory windows of both types
        // (type 2 as 2B: bound to a QP; their key entries say which, and initiators check it)
        DeviceAttr b = LocalOps.withMemoryManagement(Srq.declare(base), DeviceCap.MEM_MGT_EXTENSIONS | DeviceCap.MEM_WINDOW
                | DeviceCap.MEM_WINDOW_TYPE_2B, base.maxMr());
        // UC and UD: docs/shm-design.md, "UC" and "UD"
        java.util.Set<QpType> types = java.util.EnumSet.of(QpType.RC, QpType.UC, QpType.UD);
        types.addAll(b.qpTypes());
        return new DeviceAttr(b.fwVer(), b.nodeGuid(), b.sysImageGuid(), b.maxMrSize(), b.pageSizeCap(), b.vendorId(),
                b.vendorPartId(), b.hwVer(), b.maxQp(), b.maxQpWr(), b.deviceCapFlags() | DeviceCap.BAD_QKEY_CNTR,
                b.maxSge(), b.maxSgeRd(),
                b.maxCq(), b.maxCqe(), b.maxMr(), b.maxPd(), b.maxQpRdAtom(), b.maxResRdAtom(), b.maxQpInitRdAtom(),
                b.atomicCap(), b.maxMw(), Integer.MAX_VALUE, b.maxSrq(), b.maxSrqWr(), b.maxSrqSge(), b.maxPkeys(),
                b.physPortCnt(), types);
    }

    @Override
    public void close() {
        cm.close(); // its listeners and connections end with the context, as on the other providers
        synchronized (entries) { // no withdrawal reads a partner's word through a mapping unmapped below
            if (attachAddr != 0) {
                Native.munmap(attachAddr, Ctrl.ATTACH_SIZE);
                Native.close(attachFd);
                attachAddr = 0;
            }
            java.util.Arrays.fill(lingerPeer, null);
            lingerCount = 0;
            java.util.Arrays.fill(partnerPeer, null);
            partners = 0;
            partnerHigh = 0;
        }
        for (Peer p : peerList) {
            p.unmap();
        }
        peers.clear();
        peerList = new Peer[0];
        Native.munmap(ctrlAddr, Ctrl.SIZE);
        Native.close(ctrlFd);
        scratchArena.close();
    }
}

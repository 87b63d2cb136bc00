package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The plumbing every TCK class shares: two device contexts of the fixture's device (a server
 * and a client), each with a PD, a completion channel and one registered 8 MiB buffer; links
 * (a QP pair connected through the connection manager, the server accepting in its own
 * thread); waits that are poll loops with deadlines (driving INVOKER contexts as they go); and
 * cleanup of everything, in reverse order of creation, after each test whatever its outcome.
 */
public abstract class TckSupport {
    /** The longest any single wait may take before the test fails. */
    protected static final Duration WAIT = Duration.ofSeconds(10);
    /** The bytes of each side's registered buffer. */
    protected static final int BUF_SIZE = 8 << 20;
    /** Every access flag a buffer used for data movement needs. */
    protected static final int ALL_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC;
    /** The byte pre-filled around destinations, to see that nothing outside them was written. */
    protected static final byte SENTINEL = (byte) 0xA5;

    /** One closeable thing, who owns it and what it is (for messages). */
    private record Resource(Side owner, String what, AutoCloseable closeable) {
    }

    private final List<Resource> resources = new ArrayList<>();
    private Arena arena;
    /** The fixture of the current test ({@link #fixture()}). */
    protected ProviderFixture fx;

    /** Skips the test, with the provider's reason, when it declares {@link ProviderFixture.Deviation#NO_IMMEDIATE_DATA}. */
    protected final void requireImmediateData() {
        fx.deviation(ProviderFixture.Deviation.NO_IMMEDIATE_DATA)
                .ifPresent(why -> org.junit.jupiter.api.Assumptions.abort("skipped: " + why));
    }

    /** Skips the test when the device reports {@code ATOMIC_NONE} (and reports its attributes at all). */
    protected final void requireAtomics() {
        io.jrdma.verbs.DeviceAttr a;
        try {
            a = client.ctx.queryDevice();
        } catch (io.jrdma.verbs.RdmaException e) {
            return; // a provider without device attributes: the test itself finds out
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(a.atomicCap() != io.jrdma.verbs.DeviceAttr.AtomicCap.NONE,
                () -> "skipped: " + fx.device().name() + " reports atomic_cap NONE (no atomic operations)");
    }
    /** The passive side: it listens and accepts in a separate thread. */
    protected Side server;
    /** The active side: it connects and posts from the test thread. */
    protected Side client;

    /** For subclasses. */
    protected TckSupport() {
    }

    /** {@return the provider under test; called before each test} */
    protected abstract ProviderFixture fixture();

    /** Opens the two sides before each test. */
    @BeforeEach
    final void openSides() {
        fx = fixture();
        assertNotNull(fx, "fixture() returned null");
        arena = Arena.ofShared();
        server = new Side("server", fx.serverOptions());
        client = new Side("client", fx.clientOptions());
    }

    /**
     * Closes everything a test made, newest first, and the buffers' arena, after each test; fails with every error met.
     */
    @AfterEach
    final void closeEverything() {
        List<Throwable> errors = new ArrayList<>();
        closeAll(null, errors);
        if (arena != null) {
            try {
                arena.close();
            } catch (RuntimeException e) {
                errors.add(e);
            }
            arena = null;
        }
        if (!errors.isEmpty()) {
            AssertionError e = new AssertionError("cleanup failed: " + errors.getFirst(), errors.getFirst());
            errors.stream().skip(1).forEach(e::addSuppressed);
            throw e;
        }
    }

    /**
     * Registers {@code c} for cleanup: it is closed after everything registered later.
     *
     * @param <T>   its type
     * @param owner the side it belongs to
     * @param what  what it is, for messages
     * @param c     the resource
     * @return {@code c}
     */
    protected final <T extends AutoCloseable> T track(Side owner, String what, T c) {
        resources.add(new Resource(owner, what, c));
        return c;
    }

    /**
     * Closes {@code c} now; it is then not closed again at cleanup.
     *
     * @param c a resource registered with {@link #track}
     */
    protected final void closeNow(AutoCloseable c) {
        for (int i = resources.size() - 1; i >= 0; i--) {
            if (resources.get(i).closeable() == c) {
                resources.remove(i);
                break;
            }
        }
        try {
            c.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Closes everything {@code side} owns, newest first, then marks it closed (a peer context going away).
     *
     * @param side the side to close
     */
    protected final void closeSide(Side side) {
        List<Throwable> errors = new ArrayList<>();
        closeAll(side, errors);
        side.closed = true;
        if (!errors.isEmpty()) {
            AssertionError e = new AssertionError("closing the " + side.name + " failed: " + errors.getFirst(),
                    errors.getFirst());
            errors.stream().skip(1).forEach(e::addSuppressed);
            throw e;
        }
    }

    private void closeAll(Side owner, List<Throwable> errors) {
        for (int i = resources.size() - 1; i >= 0; i--) {
            Resource r = resources.get(i);
            if (owner != null && r.owner() != owner) {
                continue;
            }
            resources.remove(i);
            try {
                r.closeable().close();
            } catch (Throwable t) {
                errors.add(new AssertionError("closing " + (r.owner() == null ? "" : r.owner().name + " ")
                        + r.what() + " failed: " + t, t));
            }
        }
    }

    // ------------------------------------------------------------------ sides

    /** One peer: a device context with a PD, a completion channel and a registered buffer. */
    protected final class Side {
        /** "server" or "client". */
        public final String name;
        /** Its device context. */
        public final DeviceContext ctx;
        /** True when its context runs in INVOKER mode (the test thread drives it). */
        public final boolean invoker;
        /** Its protection domain. */
        public final ProtectionDomain pd;
        /** Its completion channel, which its CQs notify. */
        public final CompletionChannel channel;
        /** Its buffer: {@link #BUF_SIZE} bytes of native memory, 4 KiB aligned. */
        public final MemorySegment buf;
        /** The region over the whole buffer, with {@link #ALL_ACCESS}. */
        public final MemoryRegion mr;
        boolean closed;

        Side(String name, DeviceOptions options) {
            this.name = name;
            this.ctx = track(this, "context", fx.device().open(options));
            this.invoker = ctx.options().threadingMode() == ThreadingMode.INVOKER;
            this.pd = track(this, "PD", ctx.allocPd());
            this.channel = track(this, "completion channel", ctx.createCompletionChannel());
            this.buf = ctx.allocateBuffer(BUF_SIZE, 4096, arena); // memory peers can reach (shared memory on shm)
            this.mr = track(this, "MR", pd.register(buf, ALL_ACCESS));
        }

        /**
         * {@return a new CQ of {@code cqe} entries that notifies this side's channel}
         *
         * @param cqe the minimum number of entries
         */
        public CompletionQueue newCq(int cqe) {
            return track(this, "CQ", ctx.createCq(cqe, channel));
        }

        /**
         * {@return a new QP, in RESET}
         *
         * @param attr its creation attributes
         */
        public QueuePair newQp(QpInitAttr attr) {
            return track(this, "QP", pd.createQp(attr));
        }

        /**
         * {@return a new region over part of the buffer}
         *
         * @param offset where the region starts in the buffer
         * @param length its length in bytes
         * @param access a combination of {@link Access} flags
         */
        public MemoryRegion register(long offset, long length, int access) {
            return track(this, "MR", pd.register(buf.asSlice(offset, length), access));
        }

        /**
         * {@return the address a peer uses for {@code offset} in this side's buffer}
         *
         * @param offset a byte offset in the buffer
         */
        public long addr(long offset) {
            return mr.address() + offset;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    // ------------------------------------------------------------------ links

    /** A connected QP pair: the client's QP (with its own CQ) and the server's. */
    protected static final class Link {
        /** The client's CQ, for both of its QP's queues. */
        public final CompletionQueue ccq;
        /** The server's CQ, for both of its QP's queues. */
        public final CompletionQueue scq;
        /** The client's QP, in RTS. */
        public final QueuePair cqp;
        /** The server's QP, in RTS. */
        public final QueuePair sqp;
        /** The client's connection. */
        public final ConnectionManager.Connection cconn;
        /** The server's connection. */
        public final ConnectionManager.Connection sconn;
        /** What the server saw in the connection request. */
        public final ConnParam requestParam;

        Link(CompletionQueue ccq, CompletionQueue scq, QueuePair cqp, QueuePair sqp,
             ConnectionManager.Connection cconn, ConnectionManager.Connection sconn, ConnParam requestParam) {
            this.ccq = ccq;
            this.scq = scq;
            this.cqp = cqp;
            this.sqp = sqp;
            this.cconn = cconn;
            this.sconn = sconn;
            this.requestParam = requestParam;
        }

        /** {@return the path MTU in bytes the client's QP ended up with} */
        public int mtu() {
            return cqp.query().pathMtu().bytes();
        }
    }

    /** Builds a link; the defaults are {@link QpInitAttr#rc} QPs, 1024-entry CQs and {@link ConnParam#defaults()}. */
    protected final class LinkBuilder {
        private int cqe = 1024;
        private UnaryOperator<QpInitAttr> clientQp = UnaryOperator.identity();
        private UnaryOperator<QpInitAttr> serverQp = UnaryOperator.identity();
        private ConnParam clientParam = ConnParam.defaults();
        private ConnParam serverParam = ConnParam.defaults();
        private Consumer<QueuePair> beforeAccept = qp -> { };

        LinkBuilder() {
        }

        /**
         * Sets the size of both CQs.
         *
         * @param n the minimum number of entries (default 1024)
         * @return this builder
         */
        public LinkBuilder cqe(int n) {
            cqe = n;
            return this;
        }

        /**
         * Changes the client QP's creation attributes.
         *
         * @param f applied to the default {@link QpInitAttr#rc} attributes
         * @return this builder
         */
        public LinkBuilder clientQp(UnaryOperator<QpInitAttr> f) {
            clientQp = f;
            return this;
        }

        /**
         * Changes the server QP's creation attributes.
         *
         * @param f applied to the default {@link QpInitAttr#rc} attributes
         * @return this builder
         */
        public LinkBuilder serverQp(UnaryOperator<QpInitAttr> f) {
            serverQp = f;
            return this;
        }

        /**
         * Sets what the client sends with its connection request.
         *
         * @param p the client's parameters (default {@link ConnParam#defaults()})
         * @return this builder
         */
        public LinkBuilder clientParam(ConnParam p) {
            clientParam = p;
            return this;
        }

        /**
         * Sets what the server answers with.
         *
         * @param p the server's parameters (default {@link ConnParam#defaults()})
         * @return this builder
         */
        public LinkBuilder serverParam(ConnParam p) {
            serverParam = p;
            return this;
        }

        /**
         * Runs {@code c} on the server's QP (in RESET) in the test thread before the connection is made.
         *
         * @param c the action
         * @return this builder
         */
        public LinkBuilder beforeAccept(Consumer<QueuePair> c) {
            beforeAccept = c;
            return this;
        }

        /**
         * Creates the CQs and QPs and connects them through the connection manager, the server
         * accepting in its own thread.
         *
         * @return the connected pair; everything in it is closed at cleanup
         */
        public Link connect() {
            CompletionQueue ccq = client.newCq(cqe);
            CompletionQueue scq = server.newCq(cqe);
            QueuePair cqp = client.newQp(clientQp.apply(QpInitAttr.rc(ccq)));
            QueuePair sqp = server.newQp(serverQp.apply(QpInitAttr.rc(scq)));
            beforeAccept.accept(sqp);
            AtomicReference<ConnParam> seen = new AtomicReference<>();
            Accepting acc = startServer(req -> {
                seen.set(req.peerParam());
                return req.accept(sqp, serverParam, WAIT);
            });
            ConnectionManager.Connection cconn = track(client, "client connection",
                    client.ctx.connectionManager().connect(cqp, acc.address(), clientParam, WAIT));
            ConnectionManager.Connection sconn = track(server, "server connection", acc.result());
            return new Link(ccq, scq, cqp, sqp, cconn, sconn, seen.get());
        }
    }

    /** {@return a builder for a new connected QP pair} */
    protected final LinkBuilder link() {
        return new LinkBuilder();
    }

    /** {@return a connected QP pair with the defaults} */
    protected final Link connect() {
        return link().connect();
    }

    /** What the server does with the first connection request. */
    @FunctionalInterface
    protected interface RequestHandler {
        /**
         * Answers a connection request: accept it or reject it.
         *
         * @param request the request
         * @return the server's connection, or null after a rejection
         */
        ConnectionManager.Connection handle(ConnectionManager.ConnectRequest request);
    }

    /** A listener with a thread answering its first connection request. */
    protected final class Accepting implements AutoCloseable {
        private final ConnectionManager.Listener listener;
        private final CompletableFuture<ConnectionManager.Connection> done = new CompletableFuture<>();
        private final Thread thread;
        private boolean taken;

        Accepting(RequestHandler handler) {
            listener = server.ctx.connectionManager().listen(new InetSocketAddress(fx.address(), 0));
            thread = Thread.ofPlatform().daemon().name("tck-accept").start(() -> {
                try {
                    ConnectionManager.ConnectRequest req = listener.poll(WAIT);
                    if (req == null) {
                        throw new AssertionError("the server got no connection request within " + WAIT);
                    }
                    done.complete(handler.handle(req));
                } catch (Throwable t) {
                    done.completeExceptionally(t);
                }
            });
        }

        /** {@return the address clients connect to} */
        public InetSocketAddress address() {
            return listener.address();
        }

        /**
         * Waits for the server's side of the connection, up to {@link #WAIT}.
         *
         * @return the connection, or null when the handler rejected the request
         */
        public ConnectionManager.Connection result() {
            try {
                ConnectionManager.Connection c = done.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                taken = true;
                return c;
            } catch (ExecutionException e) {
                throw new AssertionError("the server side failed: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new AssertionError("the server side did not finish within " + WAIT, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }

        /** Closes the listener and waits for its thread to end. */
        @Override
        public void close() {
            listener.close();
            try {
                thread.join(WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (!taken && done.isDone() && !done.isCompletedExceptionally()) {
                ConnectionManager.Connection c = done.getNow(null);
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    /**
     * Listens on the server and answers the first request with {@code handler} in a separate thread.
     *
     * @param handler what to do with the request
     * @return the listener; closed at cleanup
     */
    protected final Accepting startServer(RequestHandler handler) {
        return track(server, "listener", new Accepting(handler));
    }

    // ------------------------------------------------------------------ waiting

    /**
     * Runs every INVOKER context once.
     *
     * @return the work done (0: idle)
     */
    protected final int pump() {
        int work = 0;
        if (client.invoker && !client.closed) {
            work += client.ctx.progress();
        }
        if (server.invoker && !server.closed) {
            work += server.ctx.progress();
        }
        return work;
    }

    /** After an idle round: yield while an INVOKER context needs this thread, else park briefly (spare the CPU). */
    private void idle(int work) {
        if (work == 0) {
            if (client.invoker || server.invoker) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(20_000);
            }
        }
    }

    /**
     * Polls (driving INVOKER contexts) until {@code condition} holds; fails at the deadline ({@link #WAIT}).
     *
     * @param condition what must become true
     * @param what what is checked or awaited, for the failure message
     */
    protected final void awaitTrue(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out after " + WAIT + " waiting for " + what + "; " + counters());
            }
            idle(pump());
        }
    }

    /**
     * {@return the next completion of {@code cq}, waiting up to {@link #WAIT}}
     *
     * @param cq the CQ to poll
     * @param what what is checked or awaited, for the failure message
     */
    protected final WorkCompletion awaitCompletion(CompletionQueue cq, String what) {
        WorkCompletion wc = new WorkCompletion();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            int work = pump();
            if (cq.poll(wc) == 1) {
                return wc;
            }
            if (System.nanoTime() - deadline > 0) {
                fail("no completion within " + WAIT + " for " + what + "; " + counters());
            }
            idle(work);
        }
    }

    /**
     * {@return the next {@code n} completions of {@code cq}, oldest first, waiting up to {@link #WAIT}}
     *
     * @param cq the CQ to poll
     * @param n  how many
     * @param what what is checked or awaited, for the failure message
     */
    protected final List<WorkCompletion> awaitCompletions(CompletionQueue cq, int n, String what) {
        List<WorkCompletion> list = new ArrayList<>(n);
        WorkCompletion[] batch = new WorkCompletion[64];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = new WorkCompletion();
        }
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (list.size() < n) {
            int work = pump();
            WorkCompletion[] want = list.size() + batch.length <= n ? batch
                    : java.util.Arrays.copyOf(batch, n - list.size());
            int got = cq.poll(want);
            for (int i = 0; i < got; i++) {
                WorkCompletion w = want[i];
                list.add(new WorkCompletion().set(w.wrId(), w.status(), w.opcode(), w.vendorErr(), w.byteLen(),
                        w.imm(), w.flags(), w.qpNum(), w.srcQp()));
            }
            if (got == 0) {
                if (System.nanoTime() - deadline > 0) {
                    fail("only " + list.size() + " of " + n + " completions within " + WAIT + " for " + what
                            + "; last: " + (list.isEmpty() ? "none" : list.getLast()) + "; " + counters());
                }
                idle(work);
            }
        }
        return list;
    }

    /**
     * Keeps every INVOKER context running for {@code quiet} and checks that {@code cq} stays empty.
     *
     * @param cq    the CQ that must stay empty
     * @param quiet how long
     * @param what what is checked or awaited, for the failure message
     */
    protected final void assertNoCompletion(CompletionQueue cq, Duration quiet, String what) {
        WorkCompletion wc = new WorkCompletion();
        long end = System.nanoTime() + quiet.toNanos();
        do {
            int work = pump();
            if (cq.poll(wc) == 1) {
                fail("unexpected completion " + wc + ": " + what);
            }
            idle(work);
        } while (System.nanoTime() - end < 0);
    }

    /**
     * Waits for {@code side}'s completion channel, driving the other side's engine if it runs in
     * INVOKER mode (the channel's own context is driven by {@code await} itself).
     *
     * @param side whose channel to wait on
     * @param max  how long at most
     * @return the CQ that fired, or null when {@code max} passed first
     */
    protected final CompletionQueue awaitEvent(Side side, Duration max) {
        Side other = side == client ? server : client;
        long deadline = System.nanoTime() + max.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            boolean drive = other.invoker && !other.closed;
            if (drive) {
                other.ctx.progress();
            }
            CompletionQueue cq = side.channel.await(Duration.ofNanos(drive ? Math.min(left, 1_000_000) : left));
            if (cq != null) {
                return cq;
            }
        }
    }

    /** {@return the non-zero counters of both contexts, for failure messages} */
    protected final String counters() {
        StringBuilder sb = new StringBuilder("counters");
        for (Side s : new Side[] {client, server}) {
            if (s == null || s.closed) {
                continue;
            }
            Map<String, Long> nonZero = new TreeMap<>();
            try {
                s.ctx.counters().forEach((k, v) -> {
                    if (v != null && v != 0) {
                        nonZero.put(k, v);
                    }
                });
            } catch (RuntimeException e) {
                nonZero.put("unavailable: " + e, 0L);
            }
            sb.append(' ').append(s.name).append('=').append(nonZero);
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ posting

    /**
     * Posts {@code wr} and fails unless the provider took it.
     *
     * @param qp the QP
     * @param wr the request
     */
    protected static void post(QueuePair qp, SendWorkRequest wr) {
        int rc = qp.postSend(wr);
        if (rc != 0) {
            fail("postSend of " + wr.opcode() + " (" + wr.totalLength() + " bytes, wrId " + wr.wrId() + ") returned "
                    + RdmaException.Errno.of(rc) + " (" + rc + ") on " + qp.state() + " QP");
        }
    }

    /**
     * Posts {@code wr} and fails unless the provider took it.
     *
     * @param qp the QP
     * @param wr the request
     */
    protected static void post(QueuePair qp, RecvWorkRequest wr) {
        int rc = qp.postRecv(wr);
        if (rc != 0) {
            fail("postRecv (wrId " + wr.wrId() + ") returned " + RdmaException.Errno.of(rc) + " (" + rc + ") on "
                    + qp.state() + " QP");
        }
    }

    /**
     * Checks the fields every completion has: status, wr_id, QP number, and the opcode when the status is SUCCESS.
     *
     * @param wc     the completion
     * @param status the expected status
     * @param opcode the expected opcode
     * @param wrId   the expected wr_id
     * @param qpNum  the expected local QP number
     * @param what what is checked or awaited, for the failure message
     */
    protected static void assertCompletion(WorkCompletion wc, WcStatus status, WcOpcode opcode, long wrId, int qpNum,
                                           String what) {
        assertEquals(status, wc.status(), what + ": status of " + wc);
        assertEquals(wrId, wc.wrId(), what + ": wr_id of " + wc);
        if (status == WcStatus.SUCCESS) {
            assertEquals(opcode, wc.opcode(), what + ": opcode of " + wc);
        }
        assertEquals(qpNum, wc.qpNum(), what + ": qp_num of " + wc + " (QP 0x" + Integer.toHexString(qpNum) + ")");
    }

    // ------------------------------------------------------------------ data

    /**
     * {@return the test pattern's byte: it depends on the seed and the position, with no period shorter than 4 KiB}
     *
     * @param seed the pattern
     * @param i    the position
     */
    protected static byte pattern(int seed, long i) {
        return (byte) (seed * 31 + i * 13 + (i >>> 12) * 7 + (i >>> 8));
    }

    /**
     * Fills {@code seg[off, off + len)} with the pattern of {@code seed}.
     *
     * @param seg  the memory
     * @param off  where to start
     * @param len  how many bytes
     * @param seed the pattern
     */
    protected static void fill(MemorySegment seg, long off, long len, int seed) {
        fill(seg, off, len, seed, 0);
    }

    /**
     * Fills {@code seg[off, off + len)} with the pattern of {@code seed} from position {@code from} on.
     *
     * @param seg  the memory
     * @param off  where to start
     * @param len  how many bytes
     * @param seed the pattern
     * @param from the pattern position of the first byte
     */
    protected static void fill(MemorySegment seg, long off, long len, int seed, long from) {
        for (long i = 0; i < len; i++) {
            seg.set(ValueLayout.JAVA_BYTE, off + i, pattern(seed, from + i));
        }
        VarHandle.fullFence();
    }

    /**
     * Fills {@code seg[off, off + len)} with {@link #SENTINEL}.
     *
     * @param seg the memory
     * @param off where to start
     * @param len how many bytes
     */
    protected static void fillSentinel(MemorySegment seg, long off, long len) {
        seg.asSlice(off, len).fill(SENTINEL);
        VarHandle.fullFence();
    }

    /**
     * Fails unless {@code seg[off, off + len)} holds the pattern of {@code seed}.
     *
     * @param seg  the memory
     * @param off  where to start
     * @param len  how many bytes
     * @param seed the pattern
     * @param what what is checked or awaited, for the failure message
     */
    protected static void assertPattern(MemorySegment seg, long off, long len, int seed, String what) {
        assertPattern(seg, off, len, seed, 0, what);
    }

    /**
     * Fails unless {@code seg[off, off + len)} holds the pattern of {@code seed} from position {@code from} on.
     *
     * @param seg  the memory
     * @param off  where to start
     * @param len  how many bytes
     * @param seed the pattern
     * @param from the pattern position of the first byte
     * @param what what is checked or awaited, for the failure message
     */
    protected static void assertPattern(MemorySegment seg, long off, long len, int seed, long from, String what) {
        VarHandle.fullFence();
        for (long i = 0; i < len; i++) {
            byte b = seg.get(ValueLayout.JAVA_BYTE, off + i);
            byte want = pattern(seed, from + i);
            if (b != want) {
                fail(what + ": byte " + i + " of " + len + " is 0x" + Integer.toHexString(b & 0xff) + ", expected 0x"
                        + Integer.toHexString(want & 0xff));
            }
        }
    }

    /**
     * {@return true if {@code seg[off, off + len)} holds the pattern of {@code seed} from position {@code from} on}
     *
     * @param seg  the memory
     * @param off  where to start
     * @param len  how many bytes
     * @param seed the pattern
     * @param from the pattern position of the first byte
     */
    protected static boolean holdsPattern(MemorySegment seg, long off, long len, int seed, long from) {
        VarHandle.fullFence();
        for (long i = 0; i < len; i++) {
            if (seg.get(ValueLayout.JAVA_BYTE, off + i) != pattern(seed, from + i)) {
                return false;
            }
        }
        return true;
    }

    /**
     * After a WRITE's completion: when the provider completes WRITEs before they are placed
     * remotely ({@link ProviderFixture#writeCompletionMeansPlaced()} false, iWARP), waits until
     * {@code placed} holds; otherwise the data must already be there and this returns at once.
     *
     * @param placed true once the data is in the remote memory
     * @param what   what is awaited, for the failure message
     */
    protected final void awaitPlaced(BooleanSupplier placed, String what) {
        if (!fx.writeCompletionMeansPlaced()) {
            awaitTrue(placed, what);
        }
    }

    /**
     * Fails unless {@code seg[off, off + len)} still holds {@link #SENTINEL}.
     *
     * @param seg the memory
     * @param off where to start
     * @param len how many bytes
     * @param what what is checked or awaited, for the failure message
     */
    protected static void assertSentinel(MemorySegment seg, long off, long len, String what) {
        VarHandle.fullFence();
        for (long i = 0; i < len; i++) {
            byte b = seg.get(ValueLayout.JAVA_BYTE, off + i);
            if (b != SENTINEL) {
                fail(what + ": byte at offset " + (off + i) + " was overwritten (0x" + Integer.toHexString(b & 0xff)
                        + ")");
            }
        }
    }

    /**
     * {@return the 8 bytes at {@code off}, read after a full fence (data an engine thread placed)}
     *
     * @param seg the memory
     * @param off the offset
     */
    protected static long getLong(MemorySegment seg, long off) {
        VarHandle.fullFence();
        return seg.get(ValueLayout.JAVA_LONG, off);
    }

    /**
     * Writes 8 bytes at {@code off}, then a full fence (so an engine thread sees them).
     *
     * @param seg the memory
     * @param off the offset
     * @param v   the value
     */
    protected static void putLong(MemorySegment seg, long off, long v) {
        seg.set(ValueLayout.JAVA_LONG, off, v);
        VarHandle.fullFence();
    }
}

package io.jrdma.tools.rping;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * {@code rping} from rdma-core's librdmacm examples, over jrdma's connection manager: the client
 * advertises a buffer (address, rkey, length in a 16-byte SEND), the server READs it, says "go on"
 * with a SEND, the client advertises a second buffer, the server WRITEs what it read into it and
 * says "done" with another SEND; the client can then check that the two buffers match. Either end
 * can be rdma-core's rping (over iWARP: Linux siw; over RoCE: Linux rxe), as the messages and their order are rping's.
 *
 * <p>Every message is checked for rping's length, as rping's {@code server_recv} and {@code client_recv} do: one of
 * another length ends the connection with rping's "Received bogus data". A server gives up on a client that sends
 * nothing for {@code --timeout} seconds, between pings too (one gone without a disconnect sends nothing more). A
 * persistent server ({@code -P}) ends a failing client's connection only, and each connection's buffers, regions,
 * QP, CQ and PD are released when it ends. A client stopped by Ctrl-C disconnects (over RoCE a DREQ: no stream's
 * end tells the server) before the JVM exits.
 */
public final class Rping {
    /** rping's default port. */
    public static final int DEFAULT_PORT = 7174;
    /** rping's RPING_MSG_FMT. */
    static final String MSG_FORMAT = "rdma-ping-%d: ";
    /** rping's smallest buffer: room for the format with the largest int (sizeof("INT_MAX") + sizeof(RPING_MSG_FMT)). */
    public static final int MIN_SIZE = 23;
    /** rping's largest buffer (it refuses RPING_BUFSIZE, 64 KiB, itself). */
    public static final int MAX_SIZE = 65535;
    /** struct rping_rdma_info: __be64 buf, __be32 rkey, __be32 size. */
    static final int INFO_LENGTH = 16;
    private static final ValueLayout.OfLong BE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final long RECV_ID = 1;
    private static final long SEND_ID = 2;
    private static final long RDMA_ID = 3;
    /** How long a client waits for the answer to its disconnect (the DREQ's DREP) before it closes its QP and exits. */
    static final Duration DISCONNECT_WAIT = Duration.ofSeconds(2);

    /**
     * The options, as rping's flags.
     *
     * @param server     -s
     * @param address    -a: the server's address (a server binds to it; null = any)
     * @param port       -p
     * @param count      -C: pings (0 = until interrupted)
     * @param size       -S: the ping buffer size
     * @param verbose    -v: print the ping data
     * @param validate   -V: the client compares what came back
     * @param debug      -d
     * @param persistent -P: the server serves one client after another
     * @param device     -D (jrdma): the device; default: the iWARP device of the address
     * @param timeout    seconds without progress before giving up (a server waits that long for a client only if given)
     * @param waitForClient whether the server's wait for a client is bounded by {@code timeout}
     */
    public record Options(boolean server, InetAddress address, int port, int count, int size, boolean verbose,
                          boolean validate, boolean debug, boolean persistent, String device, int timeout,
                          boolean waitForClient) {
    }

    /** A failure of the ping itself: the message is rping's where rping has one; exit code 1. */
    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    /** The peer disconnected (the posted receive was flushed). */
    private static final class Disconnected extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Disconnected() {
            super("disconnected", null, false, false);
        }
    }

    /** Told each connection's protection domain and buffers as they are made (tests: that a connection's end frees them). */
    interface SessionWatcher {
        void made(ProtectionDomain pd, MemorySegment... buffers);
    }

    private final Options o;
    private final PrintStream out;
    private final PrintStream err;
    private final IntConsumer listening;
    private volatile SessionWatcher watcher;
    /** {@link #stop()} was called: the client stops pinging, the server serves no further client. */
    private volatile boolean stopping;
    /** The connection being served or pinged over, for {@link #stop()}. */
    private volatile Session current;
    /** -P: clients whose connection failed (each counted and told once, as it ends). */
    private long failedClients;

    Rping(Options o, PrintStream out, PrintStream err, IntConsumer listening) {
        this.o = o;
        this.out = out;
        this.err = err;
        this.listening = listening;
    }

    /** Tells {@code w} of each connection's resources (tests). */
    Rping watch(SessionWatcher w) {
        this.watcher = w;
        return this;
    }

    /**
     * Stops, from another thread (a client's Ctrl-C, see {@link io.jrdma.tools.Progress#onInterrupt}): the
     * current connection is disconnected (over RoCE a DREQ, which the peer answers with a DREP and takes as
     * rdma_cm's DISCONNECTED), and no further ping is sent or client served. Waits, at most {@link #DISCONNECT_WAIT}
     * and a little, for the connection's end; {@link #run()} then returns.
     */
    void stop() {
        stopping = true;
        Session s = current;
        ConnectionManager.Connection c = s == null ? null : s.conn;
        if (c == null) {
            return; // connecting, accepting or between clients: nothing to disconnect; the loops see the flag
        }
        debug("stopping: disconnecting");
        c.close();
        try {
            s.closed.await(DISCONNECT_WAIT.toMillis() + 500, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private Device device() {
        if (o.device() != null) {
            return DeviceChoice.named(o.device());
        }
        if (o.address() == null) {
            return DeviceChoice.forServer(Transport.IWARP);
        }
        Gid own = Gid.of(o.address());
        for (Device d : Rdma.devices()) { // a server binds to one of its own addresses: that interface's device
            if (d.transport() == Transport.IWARP && d.gids().contains(own)) {
                return d;
            }
        }
        return Rdma.resolve(o.address(), Transport.IWARP).device();
    }

    int run() {
        Device dev = device();
        if (dev.transport() != Transport.IWARP && dev.transport() != Transport.ROCE_V2) {
            throw new DeviceChoice.NoSuchDevice("rping runs over iWARP (iwarp_<interface>) and RoCE (roce_<interface>)"
                    + " devices, not " + dev.name() + ": rping's peers find each other through rdma_cm, which jrdma"
                    + " speaks over iWARP (TCP + MPA) and RoCE (the InfiniBand CM)");
        }
        debug("device " + dev.name());
        // Linux rxe's IPv4 packets carry real IP Identifications that their ICRC covers: accepted (SoftRoceOptions)
        DeviceOptions opts = dev.transport() == Transport.ROCE_V2
                ? DeviceOptions.defaults().with(io.jrdma.soft.SoftRoceOptions.defaults().withAnyIpv4Id(true))
                : DeviceOptions.defaults();
        try (DeviceContext ctx = dev.open(opts)) {
            if (o.server()) {
                InetSocketAddress at = new InetSocketAddress(
                        o.address() == null ? InetAddress.getByName("0.0.0.0") : o.address(), o.port());
                ConnectionManager.Listener l;
                try {
                    l = ctx.rdmaCm().listen(at);
                } catch (RdmaException e) {
                    throw new Failure(e.getMessage() + (e.errno() == RdmaException.Errno.EADDRINUSE
                            ? ": " + io.jrdma.tools.oob.SideChannel.PORT_BUSY : ""));
                }
                try {
                    listening.accept(l.address().getPort());
                    debug("listening on " + l.address());
                    do {
                        ConnectionManager.ConnectRequest req = awaitClient(l);
                        if (req == null) {
                            break; // stopped
                        }
                        InetSocketAddress peer = req.peerAddress(); // before the connection: a closed one has none
                        try {
                            serve(ctx, req);
                        } catch (Failure | RdmaException e) {
                            if (!o.persistent() || stopping) {
                                throw e;
                            }
                            // as rping -P's thread per client: this client's connection ends, the server goes on
                            failedClients++;
                            err.println("jrdma rping: client " + (peer == null ? "?" : peer.getAddress().getHostAddress()
                                    + ":" + peer.getPort()) + ": " + e.getMessage()
                                    + "; its connection is closed (" + failedClients + " failed client"
                                    + (failedClients == 1 ? "" : "s") + " so far), serving the next");
                            err.flush();
                        }
                    } while (o.persistent() && !stopping);
                } finally {
                    l.close();
                }
                return 0;
            }
            return pingOnce(ctx);
        } catch (java.net.UnknownHostException e) {
            throw new Failure(e.getMessage());
        }
    }

    /**
     * The resources of one connection, as rping's setup_qp and setup_buffers make them, its buffers in an arena of
     * its own: {@link #close} releases all of them (rping's rping_free_buffers and rping_free_qp).
     */
    private final class Session implements AutoCloseable {
        private final Arena arena = Arena.ofShared();
        ProtectionDomain pd;
        CompletionQueue cq;
        QueuePair qp;
        MemorySegment recvBuf;
        MemorySegment sendBuf;
        MemorySegment rdmaBuf;
        MemorySegment startBuf;
        MemoryRegion recvMr;
        MemoryRegion sendMr;
        MemoryRegion rdmaMr;
        MemoryRegion startMr;
        final SendWorkRequest wr = new SendWorkRequest();
        final RecvWorkRequest rwr = new RecvWorkRequest();
        final WorkCompletion wc = new WorkCompletion();
        volatile ConnectionManager.Connection conn;
        /** Counted down once {@link #close} has run. */
        final CountDownLatch closed = new CountDownLatch(1);

        /** @param port the port of the connection's address ({@link DeviceChoice#portFor}), for the QP's INIT */
        Session(DeviceContext ctx, int port) {
            try {
                pd = ctx.allocPd();
                cq = ctx.createCq(32);
                qp = pd.createQp(QpInitAttr.rc(cq).withDepth(16, 2));
                recvBuf = arena.allocate(INFO_LENGTH, 64);
                sendBuf = arena.allocate(INFO_LENGTH, 64);
                rdmaBuf = arena.allocate(o.size(), 64);
                recvMr = pd.register(recvBuf, Access.LOCAL_WRITE);
                sendMr = pd.register(sendBuf, 0);
                rdmaMr = pd.register(rdmaBuf, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
                if (!o.server()) {
                    startBuf = arena.allocate(o.size(), 64);
                    startMr = pd.register(startBuf, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
                }
                // as rdma_create_qp leaves it: INIT on the address's port, so that the receive can be posted before
                // connecting (rdma_cm on RoCE moves it to its rdma_cm_id's port, INIT to INIT, as librdmacm)
                qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(port)
                        .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE));
                postRecv();
            } catch (RuntimeException e) {
                try {
                    close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            SessionWatcher w = watcher;
            if (w != null) {
                w.made(pd, startBuf == null ? new MemorySegment[] {recvBuf, sendBuf, rdmaBuf}
                        : new MemorySegment[] {recvBuf, sendBuf, rdmaBuf, startBuf});
            }
        }

        void postRecv() {
            check(qp.postRecv(rwr.wrId(RECV_ID).sge(0, recvMr, 0, INFO_LENGTH)), "post recv");
        }

        void postSend(SendWorkRequest w) {
            check(qp.postSend(w), "post send");
        }

        /** Sends a {@code struct rping_rdma_info} naming {@code mr}'s buffer (the server sends its unformatted one). */
        void sendInfo(MemoryRegion mr, MemorySegment buf) {
            if (mr != null) {
                sendBuf.set(BE64, 0, buf.address());
                sendBuf.set(BE32, 8, mr.rkey());
                sendBuf.set(BE32, 12, o.size());
            }
            postSend(wr.reset().wrId(SEND_ID).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, sendMr, 0, INFO_LENGTH));
        }

        /**
         * Waits for the next message; send completions pass. A message of another length than rping's 16 bytes
         * fails the connection, as rping's server_recv and client_recv refuse it.
         *
         * @param what what is awaited, for the timeout's message
         */
        void awaitRecv(long deadlineNanos, String what) {
            while (true) {
                poll(deadlineNanos, what);
                if (wc.wrId() == RECV_ID) {
                    int n = wc.byteLen();
                    if (n != INFO_LENGTH) {
                        throw new Failure("Received bogus data, size " + n + " (rping's messages are the "
                                + INFO_LENGTH + " bytes of struct rping_rdma_info)");
                    }
                    postRecv();
                    return;
                }
                if (wc.wrId() != SEND_ID) {
                    throw new Failure("unexpected completion " + wc);
                }
            }
        }

        /** Waits for the completion of the READ or WRITE just posted; send completions pass. */
        void awaitRdma(long deadlineNanos, WcOpcode expected) {
            while (true) {
                poll(deadlineNanos, "the " + expected + " to complete");
                if (wc.wrId() == RDMA_ID) {
                    return;
                }
                if (wc.wrId() != SEND_ID) {
                    throw new Failure("unexpected completion " + wc);
                }
            }
        }

        private void poll(long deadlineNanos, String what) {
            int idle = 0;
            while (cq.poll(wc) == 0) {
                if (System.nanoTime() - deadlineNanos > 0) {
                    throw new Failure("timed out waiting for " + what + " (" + o.timeout() + " s)");
                }
                if (++idle < 1000) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(50_000);
                }
            }
            if (wc.status() == WcStatus.WR_FLUSH_ERR) {
                throw new Disconnected();
            }
            if (wc.status() == WcStatus.LOC_LEN_ERR && wc.wrId() == RECV_ID) {
                throw new Failure("Received bogus data: a message longer than the " + INFO_LENGTH + " bytes of rping's"
                        + " struct rping_rdma_info (completion status LOC_LEN_ERR)");
            }
            if (wc.status() != WcStatus.SUCCESS) {
                throw new Failure("cq completion failed status " + wc.status().ordinal() + " (" + wc.status() + ")");
            }
            debug("completion " + wc.opcode() + " wr " + wc.wrId() + " len " + wc.byteLen());
        }

        /**
         * Disconnects and releases the connection's QP, regions, CQ and PD, then frees its buffers; they stay
         * allocated only when a release failed (the engine might still write into them).
         */
        @Override
        public void close() {
            try {
                if (conn != null) {
                    conn.close();
                }
                for (AutoCloseable r : new AutoCloseable[] {qp, recvMr, sendMr, rdmaMr, startMr, cq, pd}) {
                    if (r != null) {
                        try {
                            r.close();
                        } catch (RuntimeException e) {
                            throw e;
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }
                }
                arena.close();
            } finally {
                if (current == this) {
                    current = null;
                }
                closed.countDown();
            }
        }
    }

    private static void check(int rc, String what) {
        if (rc != 0) {
            throw new Failure(what + " failed: " + RdmaException.Errno.of(rc));
        }
    }

    private long deadline() {
        return System.nanoTime() + Duration.ofSeconds(o.timeout()).toNanos();
    }

    private ConnParam param() {
        return ConnParam.defaults().withRdAtomic(1, 1); // rping: responder_resources = initiator_depth = 1
    }

    /** Waits for a client's request; null once {@link #stop()} was called. */
    private ConnectionManager.ConnectRequest awaitClient(ConnectionManager.Listener l) {
        long waitUntil = o.waitForClient() ? deadline() : Long.MAX_VALUE;
        io.jrdma.tools.Progress.step("waiting for a client on " + l.address());
        while (!stopping) {
            ConnectionManager.ConnectRequest req = l.poll(Duration.ofMillis(500));
            if (req != null) {
                return req;
            }
            if (o.waitForClient() && System.nanoTime() - waitUntil > 0) {
                throw new Failure("no client within " + o.timeout() + " s");
            }
        }
        return null;
    }

    /** Serves one client until it disconnects (rping's server ignores -C); its resources are released at the end. */
    private void serve(DeviceContext ctx, ConnectionManager.ConnectRequest req) {
        debug("connect request from " + req.peerAddress());
        // the port of the address listened on, else of the one the client is reached from
        int port = DeviceChoice.portFor(ctx, o.address() != null ? o.address() : req.peerAddress().getAddress());
        Session made;
        try {
            made = new Session(ctx, port);
        } catch (RuntimeException e) {
            try {
                req.reject(null); // the client hears at once, rather than at its connect's timeout
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        try (Session s = made) {
            current = s;
            s.conn = req.accept(s.qp, param(), Duration.ofSeconds(o.timeout()));
            debug("accepted");
            try {
                while (!stopping) {
                    // bounded as every step: a client gone without a disconnect (no DREQ over RoCE, where no
                    // stream's end tells) sends nothing more, and a persistent server has others to serve
                    s.awaitRecv(deadline(), "the client's next ping (it sent nothing and did not disconnect)");
                    long addr = s.recvBuf.get(BE64, 0);
                    int rkey = s.recvBuf.get(BE32, 8);
                    int len = s.recvBuf.get(BE32, 12);
                    debug(String.format("Received rkey %x addr %x len %d from peer", rkey, addr, len));
                    if (len < 0 || len > o.size()) {
                        throw new Failure("the client's buffer (" + Integer.toUnsignedString(len)
                                + " bytes) is larger than ours (" + o.size() + "): use the same -S on both sides");
                    }
                    s.postSend(s.wr.reset().wrId(RDMA_ID).opcode(WrOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                            .sge(0, s.rdmaMr, 0, len).remote(addr, rkey));
                    s.awaitRdma(deadline(), WcOpcode.RDMA_READ);
                    if (o.verbose()) {
                        out.println("server ping data: " + cString(s.rdmaBuf));
                        out.flush();
                    }
                    s.sendInfo(null, null); // go ahead
                    s.awaitRecv(deadline(), "the client's second buffer");
                    addr = s.recvBuf.get(BE64, 0);
                    rkey = s.recvBuf.get(BE32, 8);
                    int echo = (int) Math.min(o.size(), cLength(s.rdmaBuf) + 1);
                    s.postSend(s.wr.reset().wrId(RDMA_ID).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                            .sge(0, s.rdmaMr, 0, echo).remote(addr, rkey));
                    s.awaitRdma(deadline(), WcOpcode.RDMA_WRITE);
                    s.sendInfo(null, null); // done: begin again
                }
            } catch (Disconnected e) {
                // rping's RDMA_CM_EVENT_DISCONNECTED: the connection manager says the client is gone
                ConnectionManager.Event ev = s.conn == null ? null : s.conn.pollEvent(Duration.ofSeconds(1));
                debug(ev == ConnectionManager.Event.DISCONNECTED ? "server DISCONNECT EVENT..." : "client disconnected");
            }
        }
    }

    /** The client: pings until -C is reached, the server fails or {@link #stop()}. @return 0, or 130 once stopped */
    private int pingOnce(DeviceContext ctx) {
        try (io.jrdma.tools.Progress.Registration onCtrlC = io.jrdma.tools.Progress.onInterrupt(this::stop);
             Session s = new Session(ctx, DeviceChoice.portFor(ctx, o.address()))) {
            current = s;
            io.jrdma.tools.Progress.step("connecting to " + o.address().getHostAddress() + ":" + o.port());
            s.conn = ctx.rdmaCm().connect(s.qp, new InetSocketAddress(o.address(), o.port()), param(),
                    Duration.ofSeconds(o.timeout()));
            debug("connected");
            try {
                int start = 65;
                for (int ping = 0; (o.count() == 0 || ping < o.count()) && !stopping; ping++) {
                    int done = ping;
                    io.jrdma.tools.Progress.step(() -> "ping " + (done + 1) + (o.count() == 0 ? "" : " of " + o.count())
                            + " (" + done + " completed)");
                    fill(s.startBuf, ping, start);
                    start = start + 1 > 122 ? 65 : start + 1;
                    s.sendInfo(s.startMr, s.startBuf); // READ this
                    s.awaitRecv(deadline(), "the server's go-ahead");
                    s.sendInfo(s.rdmaMr, s.rdmaBuf); // WRITE it back here
                    s.awaitRecv(deadline(), "the server's done");
                    if (o.validate() && s.startBuf.mismatch(s.rdmaBuf) >= 0) {
                        throw new Failure("data mismatch!");
                    }
                    if (o.verbose()) {
                        out.println("ping data: " + cString(s.rdmaBuf));
                        out.flush();
                    }
                }
            } catch (RuntimeException e) {
                if (!stopping) { // else: the stop's own disconnect flushed what was under way
                    throw e instanceof Disconnected ? new Failure("the server disconnected") : e;
                }
            } finally {
                disconnect(s.conn);
            }
            return stopping ? io.jrdma.tools.Progress.INTERRUPTED : 0;
        }
    }

    /**
     * Disconnects and waits, at most {@link #DISCONNECT_WAIT}, for the server's answer: over RoCE the DREQ is all
     * that tells the server, and its retries stop when this process ends (rping's kernel keeps retrying for it).
     */
    private void disconnect(ConnectionManager.Connection c) {
        debug("done, disconnecting");
        c.close();
        long end = System.nanoTime() + DISCONNECT_WAIT.toNanos();
        for (long left; (left = end - System.nanoTime()) > 0; ) {
            ConnectionManager.Event ev = c.pollEvent(Duration.ofNanos(left));
            if (ev == null || ev == ConnectionManager.Event.DISCONNECTED) {
                return;
            }
        }
    }

    /** rping's ping text: the format, then letters A..z from {@code start} on, a NUL at the end. */
    static void fill(MemorySegment buf, int ping, int start) {
        byte[] head = String.format(MSG_FORMAT, ping).getBytes(StandardCharsets.US_ASCII);
        int size = (int) buf.byteSize();
        int cc = Math.min(head.length, size);
        MemorySegment.copy(MemorySegment.ofArray(head), 0, buf, 0, cc);
        int c = start;
        for (int i = cc; i < size; i++) {
            buf.set(ValueLayout.JAVA_BYTE, i, (byte) c);
            c = c + 1 > 122 ? 65 : c + 1;
        }
        buf.set(ValueLayout.JAVA_BYTE, size - 1, (byte) 0);
    }

    private static long cLength(MemorySegment buf) {
        for (long i = 0; i < buf.byteSize(); i++) {
            if (buf.get(ValueLayout.JAVA_BYTE, i) == 0) {
                return i;
            }
        }
        return buf.byteSize();
    }

    private static String cString(MemorySegment buf) {
        byte[] b = buf.asSlice(0, cLength(buf)).toArray(ValueLayout.JAVA_BYTE);
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    private void debug(String s) {
        if (o.debug()) {
            err.println(s);
        }
    }
}

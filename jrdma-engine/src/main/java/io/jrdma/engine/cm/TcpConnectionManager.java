package io.jrdma.engine.cm;

import io.jrdma.engine.core.ConnEvents;
import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Handshakes;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.ByteArrayInputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SocketChannel;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * jrdma's connection manager for soft-RoCE: a TCP side channel carrying a REQ / REP (or REJ) /
 * RTU exchange, the three-way handshake of the IB CM (IBA 12.9) in a simpler encoding. Each
 * message is {@code "JRCM" | type u8 | length u16 | body}; REQ and REP bodies carry
 * {@code version u8 | qpn u32 | psn u32 | gid 16 B | udp port u16 | mtu code u8 |
 * responder resources u8 | initiator depth u8 | retry u8 | rnr retry u8 | private data length u16 | private data};
 * REJ carries {@code private data length u16 | private data}. The TCP connection stays open
 * for the life of the RDMA connection; closing either end sends DREQ.
 * See docs/connection-manager.md.
 */
public final class TcpConnectionManager implements ConnectionManager {
    /** Control-path events (connections made, refused, failed, closed) at DEBUG; nothing on the data path. */
    private static final System.Logger LOG = System.getLogger(TcpConnectionManager.class.getName());

    static final int MAGIC = 0x4A52434D; // "JRCM"
    static final int REQ = 1;
    static final int REP = 2;
    static final int REJ = 3;
    static final int RTU = 4;
    static final int DREQ = 5;
    static final int VERSION = 2;
    /** Hello flag: this side's responder ACKs unrequested packets within its coalescing delay. */
    static final int FLAG_ACKS_UNREQUESTED = 1;

    private final DeviceContext context;
    private final SecureRandom random = new SecureRandom();
    /** the listeners and connections {@link #close} closes; added to through {@link #adopt} only */
    private final Set<AutoCloseable> open = ConcurrentHashMap.newKeySet();
    /** guards {@link #shut} against what {@link #adopt} adds to {@link #open} */
    private final Object lifecycle = new Object();
    /** set by {@link #close}: nothing is added to {@link #open} after it (guarded by {@link #lifecycle}) */
    private boolean shut;
    private final Handshakes.Stats handshakeStats = new Handshakes.Stats();
    /** accepted connections whose client has not confirmed with its RTU yet (see {@link Request#accept}) */
    private final Set<TcpConnection> unconfirmed = ConcurrentHashMap.newKeySet();
    /** accepted connections closed because their client's RTU did not come in time */
    private final AtomicLong rtuTimedOut = new AtomicLong();
    /**
     * Tests only, null otherwise: run by a thread about to read a connection's side channel (in {@code pollEvent}
     * or the listener's sweep), holding that connection's read lock, so that a test can hold a reader mid-read
     * and order a race with {@code close} (CmCloseRaceTest).
     */
    volatile Runnable beforeRead;

    /**
     * Whether the side channel's own addresses are unrelated to the QP's GIDs: the shared-memory
     * provider's GID names a process and its control segment, not an IP address, so the side channel
     * (loopback TCP) may leave from any address and the QP always uses GID index 0.
     */
    private final boolean gidsApart;

    public TcpConnectionManager(DeviceContext context) {
        this(context, false);
    }

    /** @param gidsApart true when the context's GIDs are no IP addresses (shared memory): GID index 0 is used */
    public TcpConnectionManager(DeviceContext context, boolean gidsApart) {
        this.context = context;
        this.gidsApart = gidsApart;
    }

    /** The parameters of one side, as exchanged. */
    record Hello(int qpn, int psn, Gid gid, int udpPort, ConnParam param, int flags) {
        Hello(int qpn, int psn, Gid gid, int udpPort, ConnParam param) {
            this(qpn, psn, gid, udpPort, param, FLAG_ACKS_UNREQUESTED);
        }
    }

    @Override
    public Listener listen(InetSocketAddress address) {
        return listen(address, Handshakes.Limits.fromProperties());
    }

    /**
     * Listens with explicit bounds on its handshakes (see {@link Handshakes}): each client's REQ must
     * arrive within {@code limits.timeout()} of its TCP connection, and at most {@code limits.maxHalfOpen()}
     * connections may be waiting for theirs.
     */
    public Listener listen(InetSocketAddress address, Handshakes.Limits limits) {
        try {
            Handshakes.Listening<Request> l = new Handshakes.Listening<>(
                    new Handshakes<>(address, new ReqProtocol(), limits, handshakeStats), open, this::sweepUnconfirmed);
            try {
                adopt(l, "a listen on " + address, "its port is released");
            } catch (RdmaException closed) {
                l.close();
                throw closed;
            }
            return l;
        } catch (IOException e) {
            throw new RdmaException(Errno.EADDRINUSE, "cannot listen on " + address + ": " + e.getMessage(), e);
        }
    }

    /** What this manager's listeners accepted and dropped, all listeners together. */
    public Handshakes.Stats handshakeStats() {
        return handshakeStats;
    }

    /** The listener counters, for the context's counter snapshot, and {@code cm_rtu_timed_out}. */
    public void addCounters(java.util.Map<String, Long> m) {
        handshakeStats.addTo(m);
        m.put("cm_rtu_timed_out", rtuTimedOut.get());
    }

    /**
     * Run while the application polls a listener: takes the RTU of every accepted connection whose RTU has
     * arrived, and ends the ones whose deadline passed without it. Never blocks on a connection another thread
     * is reading.
     */
    private void sweepUnconfirmed() {
        if (unconfirmed.isEmpty()) {
            return;
        }
        long now = System.nanoTime();
        for (TcpConnection c : unconfirmed) {
            c.sweep(now);
        }
    }

    @Override
    public Connection connect(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout) {
        checkQp(qp);
        long deadline = System.nanoTime() + nanos(timeout);
        SocketChannel ch;
        try {
            ch = SocketChannel.open();
        } catch (IOException e) {
            throw failed(new RdmaException(Errno.EIO, "cannot open a socket: " + e.getMessage(), e));
        }
        Socket s = ch.socket(); // blocking, with the caller's timeouts, until the RTU is sent
        try {
            s.setTcpNoDelay(true);
            InetAddress source = sourceFor(server.getAddress());
            if (source != null) {
                s.bind(new InetSocketAddress(source, 0));
            }
            s.connect(server, (int) Math.clamp(nanos(timeout) / 1_000_000, 1, Integer.MAX_VALUE));
            Source src = sourceOf(s);
            int psn = random.nextInt(1 << 24);
            Hello mine = new Hello(qp.qpn(), psn, src.gid(), udpPort(), param);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            write(out, REQ, mine);
            DataInputStream in = new DataInputStream(new DeadlineInput(s, deadline));
            int type = readType(in);
            if (type == REJ) {
                byte[] pd = readPrivateData(in);
                s.close();
                throw new ConnectionRejectedException("the connection request was rejected by " + server + " ("
                        + pd.length + " bytes of private data)", pd);
            }
            if (type != REP) {
                throw new RdmaException(Errno.EPROTO, "expected a REP or REJ from " + server + ", got message type " + type);
            }
            Hello peer = readHello(in);
            bringUp(qp, src, mine, peer);
            write(out, RTU, null);
            TcpConnection c = new TcpConnection(qp, ch, peer);
            adopt(c, "a connect to " + server, "its side channel is closed and its QP in ERROR"); // else closed below
            LOG.log(System.Logger.Level.DEBUG, () -> "connection established: " + c);
            return c;
        } catch (SocketTimeoutException e) {
            closeQuietly(s);
            halfUp(qp);
            throw failed(new RdmaException(Errno.ETIMEDOUT, "no answer from " + server + " within " + timeout, e));
        } catch (IOException e) {
            closeQuietly(s);
            halfUp(qp);
            String why = e instanceof EOFException ? "the server closed the side channel during setup"
                    : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
            throw failed(new RdmaException(e instanceof java.net.ConnectException ? Errno.ECONNREFUSED : Errno.EIO,
                    "cannot connect to " + server + ": " + why, e));
        } catch (RuntimeException e) {
            closeQuietly(s);
            halfUp(qp);
            throw failed(e);
        }
    }

    /**
     * A connect or accept that failed after its QP went past INIT (the RTU's or REP's write broke, or RTS failed):
     * the QP to ERROR, as a disconnect leaves it, not RTR or RTS toward a peer that is gone (found in review).
     */
    private static void halfUp(QueuePair qp) {
        try {
            QpState st = qp.state();
            if (st != QpState.RESET && st != QpState.INIT && st != QpState.ERROR) {
                qp.modify(new QpAttr().state(QpState.ERROR));
            }
        } catch (RuntimeException e) {
            // the QP was destroyed meanwhile
        }
    }

    /** @return the duration in ns, a duration too long for a long (ChronoUnit.FOREVER's) as about 146 years */
    static long nanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE / 2;
        }
    }

    /** Logs a failed connect or accept (DEBUG: the caller gets the exception) and returns it. */
    private static RuntimeException failed(RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, () -> (e instanceof ConnectionRejectedException ? "connection rejected: "
                : "connection failed: ") + e.getMessage());
        return e;
    }

    private void checkQp(QueuePair qp) {
        if (qp.pd().context() != context) {
            throw new RdmaException(Errno.EINVAL, "the QP belongs to another device context than this connection manager");
        }
        if (qp.state() != QpState.RESET && qp.state() != QpState.INIT) {
            throw new RdmaException(Errno.EINVAL, "connect/accept need a QP in RESET or INIT, not " + qp.state());
        }
    }

    private int udpPort() {
        return context.queryPort().udpPort();
    }

    /**
     * The source address for a connection to {@code destination}, as rdma_resolve_addr picks it:
     * the kernel route's source when it is one of this context's GIDs, on any of its ports (null: let the
     * kernel bind), else this context's first address of the same IP version, port 1's first (e.g.
     * 127.0.0.3 on loopback).
     */
    private InetAddress sourceFor(InetAddress destination) throws IOException {
        if (gidsApart) {
            return null;
        }
        InetAddress routed;
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.connect(new InetSocketAddress(destination, 9)); // routes only; sends nothing
            routed = ((InetSocketAddress) ch.getLocalAddress()).getAddress();
        }
        if (source(context, Gid.of(routed)) != null) {
            return null;
        }
        Gid zero = Gid.of(new byte[16]);
        for (int port = 1, n = context.portCount(); port <= n; port++) {
            for (Gid g : context.queryPort(port).gids()) {
                InetAddress a = g.toInetAddress();
                if (a.getClass() == destination.getClass() && !g.equals(zero)) {
                    return a;
                }
            }
        }
        return null;
    }

    /**
     * Where a connection's QP sends from: the port whose GID table holds the side channel's local address, and
     * that address's index there (what {@code Rdma.resolve} reports for it as {@code ResolvedAddress.portNum()}
     * and {@code sgidIndex()}, and rdma_cm as its {@code cm_id}'s port).
     */
    record Source(int port, int sgidIndex, Gid gid) {
    }

    /** The local address the TCP connection uses is the route's source: its GID is the QP's source GID. */
    private Source sourceOf(Socket s) {
        if (gidsApart) {
            return new Source(1, 0, context.gid(0));
        }
        Gid local = Gid.of(s.getLocalAddress());
        Source src = source(context, local);
        if (src == null) {
            int n = context.portCount();
            throw new RdmaException(Errno.ENETUNREACH, "the route to " + s.getRemoteSocketAddress() + " leaves from "
                    + s.getLocalAddress().getHostAddress() + ", which is not an address of " + context.device().name()
                    + (n > 1 ? " (on none of its ports 1.." + n + ")" : "")
                    + "; open the device that owns it (Rdma.resolve picks it)");
        }
        return src;
    }

    /**
     * {@return the first port of {@code ctx}, from 1 up, whose GID table holds {@code gid}, with its index there;
     * null when none does}
     */
    static Source source(DeviceContext ctx, Gid gid) {
        int i = ctx.gidIndexOf(gid); // port 1's table, the only one of the software devices
        if (i >= 0) {
            return new Source(1, i, ctx.gid(i));
        }
        for (int port = 2, n = ctx.portCount(); port <= n; port++) {
            i = ctx.gidIndexOf(port, gid);
            if (i >= 0) {
                return new Source(port, i, ctx.gid(port, i));
            }
        }
        return null;
    }

    /**
     * RTR and RTS towards the peer, from INIT on {@code src}'s port: a QP in RESET moves to INIT there; a QP the
     * caller moved to INIT on another port moves to that one (INIT to INIT, as librdmacm moves its QPs to the
     * {@code rdma_cm_id}'s port at {@code rdma_accept} and at the connect response on RoCE), since the source GID
     * the peer was given is in that port's table.
     */
    private void bringUp(QueuePair qp, Source src, Hello mine, Hello peer) {
        ConnParam m = mine.param();
        ConnParam p = peer.param();
        Mtu mtu = m.mtu().bytes() <= p.mtu().bytes() ? m.mtu() : p.mtu();
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(src.port())
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        } else if (src.port() != 1 || context.portCount() > 1) {
            int on = qp.query().portNum();
            if (on != src.port()) {
                qp.modify(new QpAttr().state(QpState.INIT).portNum(src.port()));
            }
        }
        if (context instanceof Context c) { // the rdma-core provider's contexts use this manager too
            c.peerAcksUnrequested(qp, (peer.flags() & FLAG_ACKS_UNREQUESTED) != 0);
        }
        qp.modify(new QpAttr().state(QpState.RTR)
                .av(new AddressVector(peer.gid(), src.sgidIndex(), 64, 0, peer.udpPort()))
                .pathMtu(mtu).destQpn(peer.qpn()).rqPsn(peer.psn())
                .maxDestRdAtomic(Math.min(m.responderResources(), Math.max(1, p.initiatorDepth())))
                .minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(mine.psn()).timeout(14)
                .retryCnt(m.retryCount()).rnrRetry(m.rnrRetryCount())
                .maxRdAtomic(Math.min(m.initiatorDepth(), p.responderResources())));
    }

    // ------------------------------------------------------------------ encoding

    static void write(DataOutputStream out, int type, Hello h) throws IOException {
        byte[] pd = h == null ? new byte[0] : h.param().privateData();
        int len = h == null ? 0 : 1 + 4 + 4 + 16 + 2 + 1 + 4 + 1 + 2 + pd.length; // ..., mtu, 4 counts, flags, pd
        out.writeInt(MAGIC);
        out.writeByte(type);
        out.writeShort(len);
        if (h != null) {
            ConnParam p = h.param();
            out.writeByte(VERSION);
            out.writeInt(h.qpn());
            out.writeInt(h.psn());
            out.write(h.gid().raw());
            out.writeShort(h.udpPort());
            out.writeByte(p.mtu().code());
            out.writeByte(p.responderResources());
            out.writeByte(p.initiatorDepth());
            out.writeByte(p.retryCount());
            out.writeByte(p.rnrRetryCount());
            out.writeByte(h.flags());
            out.writeShort(pd.length);
            out.write(pd);
        }
        out.flush();
    }

    static void writeReject(DataOutputStream out, byte[] pd) throws IOException {
        out.writeInt(MAGIC);
        out.writeByte(REJ);
        out.writeShort(2 + pd.length);
        out.writeShort(pd.length);
        out.write(pd);
        out.flush();
    }

    /**
     * The client's side channel while it waits for the server's answer: every read waits at most until the connect's
     * deadline (the socket's read timeout set again before each read), so a server that sends its REP a byte at a
     * time cannot hold {@code connect} past its timeout (with the timeout set once, each read had all of it again;
     * found in review).
     */
    static final class DeadlineInput extends java.io.InputStream {
        private final Socket socket;
        private final java.io.InputStream in;
        private final long deadline;

        DeadlineInput(Socket socket, long deadline) throws IOException {
            this.socket = socket;
            this.in = socket.getInputStream();
            this.deadline = deadline;
        }

        private void limit() throws IOException {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new SocketTimeoutException("the deadline passed");
            }
            socket.setSoTimeout((int) Math.clamp(left / 1_000_000, 1, Integer.MAX_VALUE));
        }

        @Override
        public int read() throws IOException {
            limit();
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            limit();
            return in.read(b, off, len);
        }
    }

    /** Reads a message header (through a {@link DeadlineInput}: each read waits until its deadline). @return the message type */
    static int readType(DataInputStream in) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) {
            throw new RdmaException(Errno.EPROTO, "not a jrdma connection manager peer (bad magic 0x"
                    + Integer.toHexString(magic) + ")");
        }
        int type = in.readUnsignedByte();
        in.readUnsignedShort();
        return type;
    }

    static Hello readHello(DataInputStream in) throws IOException {
        int version = in.readUnsignedByte();
        if (version != 1 && version != VERSION) {
            throw new RdmaException(Errno.EPROTO, "unsupported connection manager version " + version
                    + " (this side speaks 1 and " + VERSION + ")");
        }
        int qpn = in.readInt();
        int psn = in.readInt();
        byte[] gid = in.readNBytes(16);
        if (gid.length != 16) {
            throw new EOFException();
        }
        int port = in.readUnsignedShort();
        int mtu = in.readUnsignedByte();
        int rr = in.readUnsignedByte();
        int id = in.readUnsignedByte();
        int retry = in.readUnsignedByte();
        int rnr = in.readUnsignedByte();
        int flags = version >= 2 ? in.readUnsignedByte() : 0;
        byte[] pd = readPrivateData(in);
        try {
            return new Hello(qpn, psn, Gid.of(gid), port, new ConnParam(pd, rr, id, retry, rnr, Mtu.ofCode(mtu)), flags);
        } catch (RdmaException e) {
            throw new RdmaException(Errno.EPROTO, "malformed connection message: " + e.getMessage(), e);
        }
    }

    static byte[] readPrivateData(DataInputStream in) throws IOException {
        int n = in.readUnsignedShort();
        if (n > ConnParam.MAX_PRIVATE_DATA) {
            throw new RdmaException(Errno.EPROTO, "peer sent " + n + " bytes of private data; the limit is 256");
        }
        byte[] pd = in.readNBytes(n);
        if (pd.length != n) {
            throw new EOFException("private data cut short");
        }
        return pd;
    }

    static void closeQuietly(java.io.Closeable s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing after a failure
        }
    }

    /**
     * Puts what a listen, connect or accept made into {@link #open}, for {@link #close} to close; once the manager is
     * closed, throws instead (EINVAL), and the caller lets go of it: a call that finished after {@link #close} had
     * kept its socket or port where nothing closed it (found in review).
     *
     * @param call     the call, for the message
     * @param released what the caller then lets go of, for the message
     */
    private void adopt(AutoCloseable made, String call, String released) {
        synchronized (lifecycle) {
            if (!shut) {
                open.add(made);
                return;
            }
        }
        throw new RdmaException(Errno.EINVAL, call + " finished after its connection manager was closed (its device"
                + " context closing): " + released);
    }

    /**
     * Closes every listener and connection; a listen, connect or accept that finishes after this fails with EINVAL,
     * letting go of its socket (see {@link #adopt}). Idempotent.
     */
    public void close() {
        java.util.List<AutoCloseable> all;
        synchronized (lifecycle) {
            shut = true;
            all = new java.util.ArrayList<>(open);
            open.clear();
        }
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception ignored) {
                // best effort when the context closes
            }
        }
    }

    // ------------------------------------------------------------------ server side

    /** A client's first message: a JRCM header, then the REQ's hello. */
    private final class ReqProtocol implements Handshakes.Protocol<Request> {
        /** a hello with 256 bytes of private data */
        private static final int MAX_BODY = 1 + 4 + 4 + 16 + 2 + 1 + 4 + 1 + 2 + ConnParam.MAX_PRIVATE_DATA;

        @Override
        public int headerLength() {
            return 7;
        }

        @Override
        public int messageLength(byte[] h) {
            ByteBuffer b = ByteBuffer.wrap(h);
            int magic = b.getInt();
            if (magic != MAGIC) {
                throw new RdmaException(Errno.EPROTO, "not a jrdma connection manager peer (bad magic 0x"
                        + Integer.toHexString(magic) + ")");
            }
            int type = b.get() & 0xFF;
            if (type != REQ) {
                throw new RdmaException(Errno.EPROTO, "a client's first message must be a REQ, not type " + type);
            }
            int len = b.getShort() & 0xFFFF;
            if (len > MAX_BODY) {
                throw new RdmaException(Errno.EPROTO, "a REQ of " + len + " bytes (at most " + MAX_BODY + ")");
            }
            return 7 + len;
        }

        @Override
        public Request request(SocketChannel ch, byte[] message) throws IOException {
            ch.socket().setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(message, 7, message.length - 7));
            return new Request(ch, readHello(in));
        }

        @Override
        public void discard(Request r) {
            closeQuietly(r.socket);
        }
    }

    private final class Request implements ConnectRequest {
        private final SocketChannel channel;
        /** the channel's blocking view, until the connection is handed over */
        private final Socket socket;
        private final Hello peer;
        private boolean answered;

        Request(SocketChannel channel, Hello peer) {
            this.channel = channel;
            this.socket = channel.socket();
            this.peer = peer;
        }

        @Override
        public ConnParam peerParam() {
            return peer.param();
        }

        @Override
        public InetSocketAddress peerAddress() {
            return (InetSocketAddress) socket.getRemoteSocketAddress();
        }

        /**
         * Moves the QP to RTS, sends the REP and returns: the client's RTU is not waited for here, so a client
         * that sends its REQ and then nothing cannot hold up the application's next accept. The connection
         * waits for it, with {@code timeout} as its deadline, whenever the application polls the listener or
         * the connection's events; when the deadline passes without it, the connection ends as a peer's
         * departure does (its QP to ERROR, the side channel closed, DISCONNECTED), counted as
         * {@code cm_rtu_timed_out}.
         */
        @Override
        public Connection accept(QueuePair qp, ConnParam param, Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new RdmaException(Errno.EINVAL, "accept needs a positive time for the client's ready-to-use,"
                        + " not " + timeout);
            }
            checkQp(qp); // before the request counts as answered: a wrong QP leaves it to another accept or a reject
            long deadline = System.nanoTime() + nanos(timeout);
            once();
            try {
                Source src = sourceOf(socket);
                Hello mine = new Hello(qp.qpn(), random.nextInt(1 << 24), src.gid(), udpPort(), param);
                bringUp(qp, src, mine, peer);
                write(new DataOutputStream(socket.getOutputStream()), REP, mine);
                TcpConnection c = new TcpConnection(qp, channel, peer, deadline, timeout);
                adopt(c, "an accept of " + peerAddress(), "its side channel is closed and its QP in ERROR"); // else closed below
                unconfirmed.add(c);
                LOG.log(System.Logger.Level.DEBUG, () -> "connection established: " + c + " (its RTU is due within " + timeout
                        + ")");
                return c;
            } catch (IOException e) {
                closeQuietly(socket);
                halfUp(qp);
                throw failed(new RdmaException(Errno.ECONNRESET, "connection from " + peerAddress() + " broke: "
                        + e.getMessage(), e));
            } catch (RuntimeException e) {
                closeQuietly(socket);
                halfUp(qp);
                throw failed(e);
            }
        }

        @Override
        public void reject(byte[] privateData) {
            byte[] pd = privateData == null ? new byte[0] : privateData;
            if (pd.length > ConnParam.MAX_PRIVATE_DATA) {
                throw new RdmaException(Errno.EINVAL, "private data is limited to 256 bytes, not " + pd.length);
            }
            once(); // after the checks: a refused call leaves the request to be answered
            LOG.log(System.Logger.Level.DEBUG, () -> "connection request from " + peerAddress() + " rejected ("
                    + pd.length + " bytes of private data)");
            try {
                writeReject(new DataOutputStream(socket.getOutputStream()), pd);
            } catch (IOException ignored) {
                // the client is gone anyway
            } finally {
                closeQuietly(socket);
            }
        }

        private void once() {
            if (answered) {
                throw new RdmaException(Errno.EINVAL, "this connection request was already accepted or rejected");
            }
            answered = true;
        }
    }

    /**
     * An established connection. Closing sends DREQ and moves the local QP to ERROR, as
     * {@code rdma_disconnect} does; the peer's QP is left to its application, and its next
     * requests fail with RETRY_EXC_ERR since nothing answers them any more. Once {@link #close}
     * returned, nothing of the connection touches its QP again.
     */
    private final class TcpConnection implements Connection {
        private final QueuePair qp;
        /** non-blocking from here on: only RTU and DREQ come, and events are looked for without blocking */
        private final SocketChannel ch;
        private final Hello peer;
        /** a message header being read (RTU and DREQ have no body) */
        private final ByteBuffer header = ByteBuffer.allocate(7);
        /** set first thing by {@link #close}: a reader that takes {@link #reading} after it leaves at once */
        private volatile boolean closed;
        /** {@link #close} did its work (guarded by {@link #reading}) */
        private boolean released;
        private final ConnEvents events = new ConnEvents();
        /** its two ends, for the log (read while the socket is open) */
        private final String name;

        /** nanoTime by which the client's RTU must arrive (accepted connections) */
        private final long rtuDeadline;
        private final Duration rtuTimeout;
        /** true once the client's RTU arrived, or from the start on the client's side */
        private volatile boolean confirmed;
        /**
         * one reader of the side channel at a time ({@link #pollEvent} and the listener's sweep), and
         * {@link #close} waits for the one reading
         */
        private final ReentrantLock reading = new ReentrantLock();

        /** The client's side: established once it sent its RTU. */
        TcpConnection(QueuePair qp, SocketChannel ch, Hello peer) throws IOException {
            this(qp, ch, peer, 0, null);
            confirmed = true;
        }

        /** The server's side, accepted: its client's RTU is due by {@code rtuDeadline} (nanoTime). */
        TcpConnection(QueuePair qp, SocketChannel ch, Hello peer, long rtuDeadline, Duration rtuTimeout)
                throws IOException {
            this.qp = qp;
            this.ch = ch;
            this.peer = peer;
            this.rtuDeadline = rtuDeadline;
            this.rtuTimeout = rtuTimeout;
            this.name = "QP 0x" + Integer.toHexString(qp.qpn()) + " " + ch.socket().getLocalSocketAddress()
                    + " <-> QP 0x" + Integer.toHexString(peer.qpn()) + " " + ch.socket().getRemoteSocketAddress();
            ch.configureBlocking(false);
        }

        private void disconnectQp() {
            try {
                if (qp.state() != QpState.RESET && qp.state() != QpState.ERROR) {
                    qp.modify(new QpAttr().state(QpState.ERROR));
                }
            } catch (RdmaException e) {
                // the QP was destroyed meanwhile
            }
        }

        @Override
        public QueuePair qp() {
            return qp;
        }

        @Override
        public ConnParam peerParam() {
            return peer.param();
        }

        @Override
        public int peerQpn() {
            return peer.qpn();
        }

        /**
         * DISCONNECTED when the peer's DREQ arrives or its end of the side channel closes (the local QP then
         * moves to ERROR), or after this side's {@link #close}; TIMEWAIT_EXIT right after (the side channel
         * holds no identifiers that need a time-wait).
         */
        @Override
        public ConnectionManager.Event pollEvent(Duration timeout) {
            return events.poll(timeout, wait -> {
                if (closed) {
                    return true;
                }
                reading.lock();
                try {
                    return look(wait);
                } finally {
                    reading.unlock();
                }
            });
        }

        /**
         * Reads what the peer sent without blocking, then (once) parks up to {@code waitNanos} and reads again:
         * its RTU, its DREQ, or the end of the stream; ends the connection when the peer left or its RTU is
         * overdue. Holds {@link #reading}.
         *
         * @return true when the connection is down (DISCONNECTED and TIMEWAIT_EXIT are queued)
         */
        private boolean look(long waitNanos) {
            if (closed || events.isDown()) {
                return true; // closed: the QP may be the application's again
            }
            long wait = waitNanos;
            Runnable seam = beforeRead;
            if (seam != null) {
                seam.run();
            }
            try {
                while (true) {
                    int type = readHeader();
                    if (type == RTU && !confirmed) {
                        confirmed = true;
                        unconfirmed.remove(this);
                        LOG.log(System.Logger.Level.DEBUG, () -> "RTU received: " + this);
                        continue; // a DREQ may follow
                    }
                    if (type == DREQ) {
                        LOG.log(System.Logger.Level.DEBUG, () -> "peer disconnected: " + this);
                        break;
                    }
                    if (type >= 0) {
                        // after the one RTU only a DREQ comes: anything else (a second RTU, another type) is a peer
                        // that does not speak this protocol, and ends the connection (ignored, a stream of them kept
                        // this loop, and the listener thread that ran it, reading for ever; found in review)
                        LOG.log(System.Logger.Level.DEBUG, () -> "message type " + type + " after the RTU, connection"
                                + " ended: " + this);
                        break;
                    }
                    long now = System.nanoTime();
                    if (!confirmed && now - rtuDeadline >= 0) {
                        rtuTimedOut.incrementAndGet();
                        LOG.log(System.Logger.Level.DEBUG, () -> "no RTU within " + rtuTimeout + ", connection ended: "
                                + this);
                        break;
                    }
                    if (wait <= 0) {
                        return false;
                    }
                    LockSupport.parkNanos(confirmed ? wait : Math.min(wait, rtuDeadline - now));
                    wait = 0;
                }
            } catch (IOException | RdmaException e) {
                // EOF, a reset or a message that is not ours: the peer is gone
                LOG.log(System.Logger.Level.DEBUG, () -> "peer disconnected (" + e.getMessage() + "): " + this);
            }
            unconfirmed.remove(this);
            disconnectQp(); // first: whoever sees the side channel close finds the QP in ERROR
            events.timewaitExit();
            closeQuietly(ch);
            return true;
        }

        /**
         * @return the type of the next message once its whole header has arrived, or -1 for not yet
         * @throws EOFException at the end of the stream
         */
        private int readHeader() throws IOException {
            if (ch.read(header) < 0) {
                throw new EOFException("the peer closed the side channel");
            }
            if (header.hasRemaining()) {
                return -1;
            }
            header.flip();
            int magic = header.getInt();
            int type = header.get() & 0xFF;
            int length = header.getShort() & 0xFFFF;
            header.clear();
            if (magic != MAGIC || length != 0) {
                throw new RdmaException(Errno.EPROTO, "not an RTU or DREQ (magic 0x" + Integer.toHexString(magic)
                        + ", type " + type + ", length " + length + ")");
            }
            return type;
        }

        /** The listener's turn (see {@link #sweepUnconfirmed}): takes an RTU that is there, or ends an overdue connection. */
        void sweep(long now) {
            if (confirmed || closed || events.isDown()) {
                unconfirmed.remove(this);
                return;
            }
            if (!reading.tryLock()) {
                return; // pollEvent is reading it
            }
            try {
                look(0);
            } finally {
                reading.unlock();
            }
        }

        /**
         * Sends DREQ, closes the side channel and moves the QP to ERROR. Waits for a thread that is reading the side
         * channel ({@link #pollEvent}, the listener's sweep: at most the 1 ms a read parks), so that once this
         * returns nothing of the connection touches the QP, which the application may then reset and reuse (before,
         * a reader whose read failed on the channel this closed moved the QP to ERROR whenever it came to it, after
         * the application's reset too; found in review).
         */
        @Override
        public void close() {
            closed = true; // first: a reader that gets the lock from here on leaves without reading or touching the QP
            reading.lock();
            try {
                if (released) {
                    return;
                }
                released = true;
                events.timewaitExit();
                open.remove(this);
                unconfirmed.remove(this);
                try {
                    if (ch.isOpen()) {
                        // 7 bytes into an empty send buffer (nothing else is sent after RTU): written at once
                        ByteBuffer dreq = ByteBuffer.allocate(7).putInt(MAGIC).put((byte) DREQ).putShort((short) 0).flip();
                        for (int i = 0; i < 100 && dreq.hasRemaining(); i++) {
                            if (ch.write(dreq) == 0) {
                                Thread.onSpinWait();
                            }
                        }
                    }
                } catch (IOException ignored) {
                    // the peer may be gone already
                } finally {
                    closeQuietly(ch);
                }
                disconnectQp();
            } finally {
                reading.unlock();
            }
            LOG.log(System.Logger.Level.DEBUG, () -> "connection closed: " + this);
        }

        @Override
        public String toString() {
            return name;
        }
    }
}

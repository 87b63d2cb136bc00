package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Handshakes;
import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Engine;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.IwarpProtocolException;
import io.jrdma.wire.iwarp.Mpa;
import io.jrdma.wire.iwarp.MpaEnhanced;
import io.jrdma.wire.iwarp.MpaRequestReply;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The connection manager of a soft-iWARP context: MPA connection setup (RFC 5044 §7.1 with the
 * RFC 6581 enhancements, as Linux siw_cm.c speaks it) on the TCP connection that then carries the
 * QP's FPDUs. The client connects, sends an MPA Request (revision 2, flags H and, by default, C;
 * the private data starts with the RFC 6581 IRD/ORD block) and reads the Reply; the server reads
 * the Request and answers with a Reply, or a Reply with the R bit (a rejection). MPA has no
 * ready-to-use message: the TCP stream goes to the engine right after the Reply, both sides.
 *
 * <p>Between jrdma peers a 16-byte trailer ends the private data (flags, QPN, MTU, then
 * {@code "JRD1"}): it carries what the verbs API reports (the peer's QPN, the path MTU) and the
 * agreement to use immediate data and atomics (RFC 7306 opcodes). The client always appends it; a
 * jrdma server strips it and answers with its own, and only then are the extensions on. A peer
 * that is not jrdma (Linux siw, hardware) sends none, and its application sees the trailer after
 * the client's own private data, where rdma_cm applications, which parse their fixed layouts from
 * the start, ignore it. Application data longer than {@value #MAX_DATA_WITH_TRAILER} bytes leaves the
 * trailer out (siw accepts at most 256 bytes of private data, IRD/ORD included), and so does
 * {@code -Djrdma.iwarp.extensions=false}.
 *
 * <p>MPA CRC: the client asks for it (C = 1 in the Request, so a Linux siw server uses it, as
 * before) and, in its trailer, says it can go without ({@link #EXT_FLAG_CRC_OPTIONAL}); a jrdma
 * server that does not require CRC answers such a Request with C = 0, and the C bit of the Reply
 * decides for both (RFC 5044 §7.1). So two jrdma peers run without CRC, as two siw peers do by
 * default (TCP's checksum still covers every segment), and a peer that is not jrdma sees the same
 * C bits as before. {@code -Djrdma.iwarp.crc=true} requires CRC (the client leaves the flag out, the
 * server keeps the C bit the Request asked for); {@code -Djrdma.iwarp.crc=false} makes the client ask
 * for no CRC at all. A server always uses CRC when a Request without the flag asked for it.
 */
final class IwarpConnectionManager implements ConnectionManager {
    /** Control-path events (connections made, refused, failed, closed) at DEBUG; nothing on the data path. */
    private static final System.Logger LOG = System.getLogger(IwarpConnectionManager.class.getName());

    static final String CRC_PROPERTY = "jrdma.iwarp.crc";
    static final String EXTENSIONS_PROPERTY = "jrdma.iwarp.extensions";
    /** Overrides the FPDU size (the MSS of the path), e.g. 1448 to send what siw sends on Ethernet. */
    static final String FPDU_PROPERTY = "jrdma.iwarp.fpdu";
    /**
     * How long a client waits, after the MPA Reply of a peer that is not jrdma, before the QP may
     * send: Linux siw (6.1) writes its Reply before it hooks the socket to the QP, and an FPDU that
     * lands in between is never read (the connection hangs; perftest -R's "hang 1 in 4").
     */
    static final String PLAIN_PEER_DELAY_PROPERTY = "jrdma.iwarp.plainPeerDelayMs";
    static final int EXT_MAGIC = 0x4A52_4431; // "JRD1"
    static final int EXT_LENGTH = 16;
    static final int EXT_FLAG_RFC7306 = 1;
    /**
     * Trailer flag: the sender does not need MPA CRC on this connection. A client sets it unless
     * {@code -Djrdma.iwarp.crc=true}; a server then answers C = 0 unless it requires CRC itself.
     */
    static final int EXT_FLAG_CRC_OPTIONAL = 2;
    /** Linux siw refuses more than 256 bytes of MPA private data; IRD/ORD and the trailer take 20. */
    static final int MAX_DATA_WITH_TRAILER = 256 - MpaEnhanced.LENGTH - EXT_LENGTH;
    private static final int ALL_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC;

    private final Context context;
    private final Set<AutoCloseable> open = ConcurrentHashMap.newKeySet();
    private final Handshakes.Stats handshakeStats = new Handshakes.Stats();

    IwarpConnectionManager(Context context) {
        this.context = context;
    }

    void close() {
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway
            }
        }
    }

    private IwarpQp qpOf(QueuePair qp) {
        if (!(qp instanceof IwarpQp q) || q.context != context) {
            throw new RdmaException(Errno.EINVAL, "the QP does not belong to this device context");
        }
        QpState s = q.state();
        if (s != QpState.RESET && s != QpState.INIT) {
            throw new RdmaException(Errno.EINVAL, "a QP connects from RESET or INIT, not " + s);
        }
        return q;
    }

    // ------------------------------------------------------------------ private data

    /** What one side's MPA frame says, decoded. */
    record Peer(int revision, boolean crc, boolean markers, boolean reject, int ird, int ord, boolean jrdma,
                int flags, int qpn, Mtu mtu, byte[] appData) {
    }

    static Peer parse(MpaRequestReply f) {
        byte[] pd = f.privateData();
        int at = 0;
        int ird = -1;
        int ord = -1;
        if (f.revision() == Mpa.REVISION_2 && pd.length >= MpaEnhanced.LENGTH) {
            MemorySegment s = MemorySegment.ofArray(pd);
            ird = MpaEnhanced.ird(s, 0);
            ord = MpaEnhanced.ord(s, 0);
            at = MpaEnhanced.LENGTH;
        }
        int end = pd.length;
        boolean jrdma = end - at >= EXT_LENGTH && ByteBuffer.wrap(pd, end - 4, 4).getInt() == EXT_MAGIC;
        int flags = 0;
        int qpn = 0;
        Mtu mtu = null;
        if (jrdma) {
            end -= EXT_LENGTH;
            ByteBuffer b = ByteBuffer.wrap(pd, end, EXT_LENGTH - 4);
            flags = b.getInt();
            qpn = b.getInt();
            int code = b.get();
            for (Mtu m : Mtu.values()) {
                if (m.ordinal() + 1 == code) {
                    mtu = m;
                }
            }
        }
        return new Peer(f.revision(), f.crc(), f.markers(), (f.flags() & Mpa.FLAG_REJECT) != 0, ird, ord, jrdma, flags,
                qpn, mtu, Arrays.copyOfRange(pd, at, end));
    }

    /** Our private data: the application's, then the jrdma trailer with RFC 7306 on (when enabled and when it fits). */
    static byte[] appData(boolean withExtension, int qpn, Mtu mtu, byte[] app) {
        return appData(withExtension, EXT_FLAG_RFC7306, qpn, mtu, app);
    }

    /** As {@link #appData(boolean, int, Mtu, byte[])} with the trailer's {@code flags} ({@code EXT_FLAG_*}). */
    static byte[] appData(boolean withExtension, int flags, int qpn, Mtu mtu, byte[] app) {
        if (!withExtension || app.length > MAX_DATA_WITH_TRAILER) {
            return app;
        }
        ByteBuffer b = ByteBuffer.allocate(app.length + EXT_LENGTH);
        b.put(app);
        b.putInt(flags).putInt(qpn).put((byte) (mtu.ordinal() + 1)).put(new byte[3]).putInt(EXT_MAGIC);
        return b.array();
    }

    /** {@code -Djrdma.iwarp.crc=true}: this side requires MPA CRC (never offers or accepts to go without). */
    static boolean crcRequired() {
        return "true".equals(System.getProperty(CRC_PROPERTY));
    }

    /** Our trailer's flags: RFC 7306, and CRC optional unless we require it. */
    static int extFlags() {
        return EXT_FLAG_RFC7306 | (crcRequired() ? 0 : EXT_FLAG_CRC_OPTIONAL);
    }

    /**
     * The C bit of our Reply to {@code p}: as the Request asked (RFC 5044 §7.1), except that a jrdma
     * client that can go without CRC gets none when we do not require it either.
     */
    static boolean replyCrc(Peer p, boolean ext) {
        return p.crc() && !(ext && (p.flags() & EXT_FLAG_CRC_OPTIONAL) != 0 && !crcRequired());
    }

    private static MpaRequestReply frame(boolean reply, int revision, boolean crc, boolean reject, int ird, int ord,
                                         byte[] data) {
        int flags = (crc ? Mpa.FLAG_CRC : 0) | (reject ? Mpa.FLAG_REJECT : 0);
        if (revision == Mpa.REVISION_2) {
            // as MpaRequestReply.enhanced, but with up to 256 bytes of application data and the jrdma
            // trailer after it (MPA allows 512 bytes of private data in all)
            byte[] pd = new byte[MpaEnhanced.LENGTH + data.length];
            MpaEnhanced.write(MemorySegment.ofArray(pd), 0, Math.min(ird, MpaEnhanced.IRD_ORD_MASK),
                    Math.min(ord, MpaEnhanced.IRD_ORD_MASK), false, false, false, false);
            System.arraycopy(data, 0, pd, MpaEnhanced.LENGTH, data.length);
            return new MpaRequestReply(reply, flags | Mpa.FLAG_ENHANCED, Mpa.REVISION_2, pd);
        }
        return new MpaRequestReply(reply, flags, Mpa.REVISION_1, data);
    }

    private static void write(SocketChannel ch, MpaRequestReply f) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(f.length());
        f.encode(MemorySegment.ofBuffer(b), 0);
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** Reads exactly one MPA frame (never a byte more: FPDUs may follow it at once). */
    private static MpaRequestReply read(SocketChannel ch, boolean reply, long deadline)
            throws IOException, IwarpProtocolException {
        Socket s = ch.socket();
        InputStream in = s.getInputStream();
        byte[] head = readFully(s, in, Mpa.HEADER_LENGTH, deadline);
        MemorySegment h = MemorySegment.ofArray(head);
        int pdLength = Mpa.privateDataLength(h, 0);
        int r = Mpa.check(h, 0, Mpa.HEADER_LENGTH, reply);
        if (r < 0 || pdLength > Mpa.MAX_PRIVATE_DATA) {
            return MpaRequestReply.decode(h, 0, Mpa.HEADER_LENGTH, reply); // throws with the reason
        }
        byte[] all = Arrays.copyOf(head, Mpa.HEADER_LENGTH + pdLength);
        byte[] pd = readFully(s, in, pdLength, deadline);
        System.arraycopy(pd, 0, all, Mpa.HEADER_LENGTH, pdLength);
        return MpaRequestReply.decode(MemorySegment.ofArray(all), 0, all.length, reply);
    }

    private static byte[] readFully(Socket s, InputStream in, int n, long deadline) throws IOException {
        byte[] b = new byte[n];
        int got = 0;
        while (got < n) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new SocketTimeoutException("no MPA frame in time");
            }
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
            int r = in.read(b, got, n - got);
            if (r < 0) {
                throw new EOFException("the peer closed the connection during MPA setup");
            }
            got += r;
        }
        return b;
    }

    /** The ULPDU size we send: the FPDU fills one TCP segment of the interface's MSS (IP 20 or 40, TCP 20 + 12). */
    private int txMulpdu(SocketChannel ch) {
        int fpdu = Integer.getInteger(FPDU_PROPERTY, 0);
        if (fpdu <= 0) {
            int mtu = context.device instanceof SoftIwarpDevice d ? d.interfaceMtu() : 1500;
            boolean v6 = ch.socket().getLocalAddress() instanceof java.net.Inet6Address;
            fpdu = mtu - (v6 ? 40 : 20) - 32;
        }
        return Fpdu.maxUlpduLength(Math.max(128, Math.min(fpdu, Fpdu.length(Fpdu.MAX_ULPDU_LENGTH))));
    }

    /** Engine thread (control): the QP takes the stream and is in RTS. */
    private void establish(IwarpQp q, SocketChannel ch, boolean crc, boolean ext, int ird, int ord, int peerQpn, Mtu mtu,
                           ConnParam param) throws IOException {
        ch.configureBlocking(false);
        ch.socket().setTcpNoDelay(true);
        int mulpdu = txMulpdu(ch);
        context.control(() -> {
            if (q.destroyed || (q.state != QpState.RESET && q.state != QpState.INIT)) {
                throw new RdmaException(Errno.EINVAL, "the QP left RESET/INIT while connecting (" + q.state + ")");
            }
            if (q.state == QpState.RESET) {
                q.accessFlags = ALL_ACCESS;
            }
            q.destQpn = peerQpn;
            q.mtu = mtu;
            q.mtuBytes = mtu.bytes();
            q.maxRdAtomic = ord;
            q.maxDestRdAtomic = ird;
            q.retryCnt = param.retryCount();
            q.rnrRetry = param.rnrRetryCount();
            IwarpEngine iwarp = IwarpEngine.of(context); // this manager serves iWARP contexts only
            q.refusedOps = ext ? 0 : IwarpEngine.EXTENSION_OPS;
            iwarp.attach(q, new IwarpStream(ch, crc, mulpdu, ext, ird, iwarp.vectored));
            q.state = QpState.RTS; // volatile: publishes refusedOps to posters
            context.engine.schedule(q);
        });
    }

    private Mtu pathMtu(Mtu mine, Mtu peer) {
        Mtu m = mine.bytes() <= context.activeMtu().bytes() ? mine : context.activeMtu();
        return peer != null && peer.bytes() < m.bytes() ? peer : m;
    }

    /** Waits out a peer's accept race (see {@link #PLAIN_PEER_DELAY_PROPERTY}); the QP is not yet in RTS. */
    private static void settle(int millis) {
        if (millis > 0) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RdmaException(Errno.EINTR, "interrupted while connecting");
            }
        }
    }

    private static void closeQuietly(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    // ------------------------------------------------------------------ client

    @Override
    public Connection connect(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout) {
        try {
            return connect0(qp, server, param, timeout);
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    /** Logs a failed connect or accept (DEBUG: the caller gets the exception) and returns it. */
    private static RuntimeException failed(RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, () -> (e instanceof ConnectionRejectedException ? "connection rejected: "
                : "connection failed: ") + e.getMessage());
        return e;
    }

    private Connection connect0(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout) {
        IwarpQp q = qpOf(qp);
        long deadline = System.nanoTime() + timeout.toNanos();
        boolean ext = !"false".equals(System.getProperty(EXTENSIONS_PROPERTY));
        boolean wantCrc = !"false".equals(System.getProperty(CRC_PROPERTY));
        SocketChannel ch = null;
        try {
            ch = SocketChannel.open();
            ch.socket().connect(server, (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis())));
            write(ch, frame(false, Mpa.REVISION_2, wantCrc, false, param.responderResources(), param.initiatorDepth(),
                    appData(ext, extFlags(), q.qpn, param.mtu(), param.privateData())));
            MpaRequestReply reply = read(ch, true, deadline);
            Peer p = parse(reply);
            if (p.reject()) {
                closeQuietly(ch);
                throw new ConnectionRejectedException("the server at " + server + " rejected the connection (MPA Reply "
                        + "with the R bit)", p.appData());
            }
            if (p.markers()) {
                closeQuietly(ch);
                throw new RdmaException(Errno.EPROTO, "the server at " + server + " wants MPA markers, which jrdma does "
                        + "not support");
            }
            boolean jrdma = ext && p.jrdma();
            if (!p.jrdma()) {
                settle(Integer.getInteger(PLAIN_PEER_DELAY_PROPERTY, 50));
            }
            int peerIrd = p.ird() < 0 ? param.initiatorDepth() : p.ird();
            int peerOrd = p.ord() < 0 ? param.responderResources() : p.ord();
            Mtu mtu = pathMtu(param.mtu(), p.mtu());
            int ird = Math.min(param.responderResources(), peerOrd);
            int ord = Math.min(param.initiatorDepth(), peerIrd);
            establish(q, ch, p.crc(), jrdma && (p.flags() & EXT_FLAG_RFC7306) != 0, ird, ord, p.qpn(), mtu, param);
            return new Conn(q, ch, new ConnParam(p.appData(), peerIrd, peerOrd, param.retryCount(),
                    param.rnrRetryCount(), mtu), p.qpn());
        } catch (ConnectException e) {
            closeQuietly(ch);
            throw new RdmaException(Errno.ECONNREFUSED, "nobody listens at " + server + ": " + e.getMessage(), e);
        } catch (SocketTimeoutException e) {
            closeQuietly(ch);
            throw new RdmaException(Errno.ETIMEDOUT, "no MPA Reply from " + server + " within " + timeout, e);
        } catch (IwarpProtocolException e) {
            closeQuietly(ch);
            throw new RdmaException(Errno.EPROTO, "the peer at " + server + " is not an MPA (iWARP) endpoint: "
                    + e.getMessage(), e);
        } catch (IOException e) {
            closeQuietly(ch);
            throw new RdmaException(Errno.ECONNRESET, "connecting to " + server + " failed: " + e, e);
        } catch (RuntimeException e) {
            if (ch != null) {
                closeQuietly(ch);
            }
            throw e;
        }
    }

    // ------------------------------------------------------------------ server

    @Override
    public Listener listen(InetSocketAddress address) {
        return listen(address, Handshakes.Limits.fromProperties());
    }

    /**
     * Listens with explicit bounds on its handshakes (see {@link Handshakes}): each client's MPA Request
     * must arrive within {@code limits.timeout()} of its TCP connection (RFC 5044 §7.1.1 leaves the time to
     * the implementation), and at most {@code limits.maxHalfOpen()} connections may be waiting for theirs.
     */
    Listener listen(InetSocketAddress address, Handshakes.Limits limits) {
        try {
            Handshakes.Listening<Request> l = new Handshakes.Listening<>(
                    new Handshakes<>(address, new RequestProtocol(), limits, handshakeStats), open);
            open.add(l);
            return l;
        } catch (IOException e) {
            throw new RdmaException(Errno.EADDRINUSE, "cannot listen on " + address + ": " + e.getMessage(), e);
        }
    }

    /** What this manager's listeners accepted and dropped. */
    Handshakes.Stats handshakeStats() {
        return handshakeStats;
    }

    /** A client's first message: an MPA Request (header, then its private data). */
    private final class RequestProtocol implements Handshakes.Protocol<Request> {
        @Override
        public int headerLength() {
            return Mpa.HEADER_LENGTH;
        }

        @Override
        public int messageLength(byte[] header) throws IOException, IwarpProtocolException {
            // a Request asking for markers is read whole all the same, to be answered with a Reject (request)
            MemorySegment h = MemorySegment.ofArray(withoutMarkers(header));
            int pdLength = Mpa.privateDataLength(h, 0);
            int r = Mpa.check(h, 0, Mpa.HEADER_LENGTH, false);
            if (r < 0 || pdLength > Mpa.MAX_PRIVATE_DATA) {
                MpaRequestReply.decode(h, 0, Mpa.HEADER_LENGTH, false); // throws with the reason
                throw new IOException("not an MPA Request (PD_Length " + pdLength + ")");
            }
            return Mpa.HEADER_LENGTH + pdLength;
        }

        @Override
        public Request request(SocketChannel ch, byte[] message) throws IOException, IwarpProtocolException {
            byte[] unmarked = withoutMarkers(message);
            Peer p = parse(MpaRequestReply.decode(MemorySegment.ofArray(unmarked), 0, unmarked.length, false));
            if (unmarked != message) { // RFC 5044 §7.1: we cannot use markers; refuse with the R bit
                write(ch, frame(true, p.revision(), p.crc(), true, 0, 0, new byte[0]));
                return null;
            }
            return new Request(ch, p);
        }

        /** @return {@code m} if its M (markers) flag is clear, else a copy with it cleared (the rest is checked as usual) */
        private static byte[] withoutMarkers(byte[] m) {
            if ((m[Mpa.FLAGS_OFFSET] & Mpa.FLAG_MARKERS) == 0) {
                return m;
            }
            byte[] c = m.clone();
            c[Mpa.FLAGS_OFFSET] &= (byte) ~Mpa.FLAG_MARKERS;
            return c;
        }

        @Override
        public void discard(Request r) {
            closeQuietly(r.ch);
        }
    }

    private final class Request implements ConnectRequest {
        private final SocketChannel ch;
        private final Peer p;
        private boolean answered;

        Request(SocketChannel ch, Peer p) {
            this.ch = ch;
            this.p = p;
        }

        @Override
        public ConnParam peerParam() {
            return new ConnParam(p.appData(), Math.max(0, Math.min(255, p.ird())), Math.max(0, Math.min(255, p.ord())),
                    7, 7, p.mtu() == null ? Mtu.MTU_4096 : p.mtu());
        }

        @Override
        public InetSocketAddress peerAddress() {
            try {
                return (InetSocketAddress) ch.getRemoteAddress();
            } catch (IOException e) {
                return null;
            }
        }

        @Override
        public Connection accept(QueuePair qp, ConnParam param, Duration timeout) {
            try {
                return accept0(qp, param);
            } catch (RuntimeException e) {
                throw failed(e);
            }
        }

        private Connection accept0(QueuePair qp, ConnParam param) {
            IwarpQp q = qpOf(qp);
            if (answered) {
                throw new RdmaException(Errno.EINVAL, "this connection request was already answered");
            }
            answered = true;
            boolean ext = p.jrdma() && !"false".equals(System.getProperty(EXTENSIONS_PROPERTY));
            int peerIrd = p.ird() < 0 ? param.initiatorDepth() : p.ird();
            int peerOrd = p.ord() < 0 ? param.responderResources() : p.ord();
            int ird = Math.min(param.responderResources(), peerOrd);
            int ord = Math.min(param.initiatorDepth(), peerIrd);
            Mtu mtu = pathMtu(param.mtu(), p.mtu());
            try {
                // C in the Reply decides (RFC 5044 §7.1): CRC when the initiator asked for it, unless both
                // sides are jrdma and neither requires it (replyCrc)
                boolean crc = replyCrc(p, ext);
                write(ch, frame(true, p.revision(), crc, false, ird, ord,
                        appData(ext, extFlags(), q.qpn, mtu, param.privateData())));
                establish(q, ch, crc, ext && (p.flags() & EXT_FLAG_RFC7306) != 0, ird, ord, p.qpn(), mtu, param);
            } catch (IOException e) {
                closeQuietly(ch);
                throw new RdmaException(Errno.ECONNRESET, "the client went away while accepting: " + e, e);
            } catch (RuntimeException e) {
                closeQuietly(ch);
                throw e;
            }
            return new Conn(q, ch, new ConnParam(p.appData(), peerIrd, peerOrd, param.retryCount(),
                    param.rnrRetryCount(), mtu), p.qpn());
        }

        @Override
        public void reject(byte[] privateData) {
            if (answered) {
                throw new RdmaException(Errno.EINVAL, "this connection request was already answered");
            }
            answered = true;
            LOG.log(System.Logger.Level.DEBUG, () -> "connection request from " + peerAddress() + " rejected");
            try {
                write(ch, frame(true, p.revision(), p.crc(), true, 0, 0,
                        privateData == null ? new byte[0] : privateData.clone()));
            } catch (IOException ignored) {
                // the client is gone: nothing to tell it
            } finally {
                closeQuietly(ch);
            }
        }
    }

    /** An established connection: closing it moves the QP to ERROR, which closes the TCP stream (rdma_disconnect). */
    private final class Conn implements Connection {
        private final IwarpQp q;
        private final SocketChannel ch;
        private final ConnParam peer;
        private final int peerQpn;
        private volatile boolean closed;
        private final io.jrdma.engine.core.ConnEvents events = new io.jrdma.engine.core.ConnEvents();

        Conn(IwarpQp q, SocketChannel ch, ConnParam peer, int peerQpn) {
            this.q = q;
            this.ch = ch;
            this.peer = peer;
            this.peerQpn = peerQpn;
            open.add(this);
            LOG.log(System.Logger.Level.DEBUG, () -> "connection established: " + this);
        }

        @Override
        public String toString() {
            String ends;
            try {
                ends = ch.getLocalAddress() + " <-> QP 0x" + Integer.toHexString(peerQpn) + " " + ch.getRemoteAddress();
            } catch (IOException e) {
                ends = "(stream closed)";
            }
            return "QP 0x" + Integer.toHexString(q.qpn) + " " + ends;
        }

        @Override
        public QueuePair qp() {
            return q;
        }

        @Override
        public ConnParam peerParam() {
            return peer;
        }

        @Override
        public int peerQpn() {
            return peerQpn;
        }

        /**
         * DISCONNECTED when the stream is gone (the peer closed or reset it: the QP is in ERROR, as siw's) or after
         * this side's {@link #close}; TIMEWAIT_EXIT right after (TCP keeps its own time-wait).
         */
        @Override
        public ConnectionManager.Event pollEvent(java.time.Duration timeout) {
            return events.poll(timeout, wait -> {
                if (closed || q.destroyed || q.state == QpState.ERROR) {
                    return true;
                }
                if (context.invoker) {
                    context.progress(); // the engine reads the stream only when the application drives it
                }
                java.util.concurrent.locks.LockSupport.parkNanos(wait);
                return q.destroyed || q.state == QpState.ERROR;
            });
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            events.timewaitExit();
            open.remove(this);
            try {
                context.control(() -> {
                    IwarpStream s = q.iw;
                    if (s != null && s.channel == ch && !q.destroyed) {
                        if (q.state != QpState.ERROR) {
                            context.engine.enterError(q);
                        }
                        context.engine.transport.serviceError(q);
                    }
                });
            } catch (RdmaException e) {
                closeQuietly(ch);
            }
            LOG.log(System.Logger.Level.DEBUG, () -> "connection closed: QP 0x" + Integer.toHexString(q.qpn));
        }
    }
}

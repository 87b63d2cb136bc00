package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Counters;
import io.jrdma.engine.core.Cq;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Fallbacks;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.Pd;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.RecvWqe;
import io.jrdma.engine.core.RegionViews;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.core.Transport;
import io.jrdma.engine.core.Wqe;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.iwarp.AtomicRequest;
import io.jrdma.wire.iwarp.AtomicResponse;
import io.jrdma.wire.iwarp.Crc32c;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.ImmediateData;
import io.jrdma.wire.iwarp.IwarpError;
import io.jrdma.wire.iwarp.Rdmap;
import io.jrdma.wire.iwarp.ReadRequest;
import io.jrdma.wire.iwarp.Terminate;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The iWARP transport of a soft-iWARP context, shaped like Linux siw: the transmitter
 * ({@code siw_qp_tx.c}: send-queue WQEs and READ/atomic responses → DDP segments → FPDUs sized to
 * the MSS) and the receiver ({@code siw_qp_rx.c}: FPDU reassembly from the TCP byte stream, CRC,
 * DDP/RDMAP checks, tagged and untagged placement, TERMINATE). It runs inside the context's
 * {@link Engine} duty cycle and reuses its queues, key table, CQs and flush logic; only the wire
 * differs. TCP gives reliability and ordering: no PSNs, ACKs, retransmission or RNR.
 *
 * <p>Completion semantics (RFC 5040 §5 and siw): a SEND or WRITE completes once its last FPDU has
 * been handed to TCP; a READ or atomic when its response has arrived. Completions are retired in
 * posting order. A remote error arrives as a TERMINATE: the oldest request not yet completed gets
 * the matching error status, the QP enters ERROR and everything behind it is flushed.
 *
 * <p>Every memory access is checked with {@link Mr#permits} before any byte is copied. Nothing
 * on the data path allocates: the buffers are per stream and made when the stream is attached.
 */
public final class IwarpEngine implements Transport {
    private static final ValueLayout.OfLong NATIVE_LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final VarHandle ATOMIC_LONG = ValueLayout.JAVA_LONG.varHandle();
    /** FPDUs processed per stream per duty cycle at most (fairness between QPs). */
    static final int RX_FPDU_BUDGET = 256;
    /** The largest ULPDU we accept (MULPDU): anything the 16-bit length can say. */
    static final int RX_MAX_ULPDU = Fpdu.MAX_ULPDU_LENGTH;
    /**
     * {@code -Djrdma.iwarp.zeroCopy=true|false}, read when a context opens: zero copy both ways (true) or
     * neither (false). Unset: zero-copy transmit exactly when the streams have writev ({@link #vectored}),
     * copying receive (docs/iwarp-design.md, "Measurements").
     */
    static final String ZERO_COPY_PROPERTY = "jrdma.iwarp.zeroCopy";
    /** {@code -Djrdma.iwarp.zeroCopyRx=true|false}: direct placement on receive, whatever {@value #ZERO_COPY_PROPERTY} says. */
    static final String ZERO_COPY_RX_PROPERTY = "jrdma.iwarp.zeroCopyRx";
    /** An FPDU payload at least this long is sent from its region (a gather entry); shorter ones are copied. */
    static final int ZC_TX_MIN = Integer.getInteger("jrdma.iwarp.zeroCopyMin", 2048);
    /** An FPDU whose payload still has at least this many bytes to come is read straight into its target. */
    static final int ZC_RX_MIN = Integer.getInteger("jrdma.iwarp.zeroCopyMin", 2048);
    /**
     * While the stream carries large FPDUs, a read into the stream's buffer takes at most this many bytes:
     * enough for the next FPDU's header, so that its payload can be read straight into its target.
     */
    static final int RX_PEEK = 1024;
    private static final byte[] ZEROS = new byte[4];

    private final Engine engine;
    private final Counters counters;
    /**
     * Streams write with one {@code writev} per flush and read payloads with {@code readv} on the
     * socket's descriptor ({@link NativeTcp}); read when the context opens. Without it (no
     * {@code --add-opens java.base/sun.nio.ch}, not Linux, {@code -Djrdma.iwarp.writev=false}) they use
     * the single-buffer SocketChannel calls.
     */
    final boolean vectored = NativeTcp.enabled();
    /**
     * Zero-copy transmit (docs/iwarp-design.md, "Zero copy"): large payloads go from their regions into
     * the socket without passing through the stream's buffer ({@link RegionViews}). On by default when
     * {@link #vectored}: with one writev per flush it measured faster than copying on loopback; through
     * SocketChannel (one write per gather entry) slower, so off without writev.
     */
    final boolean zeroCopy;
    /**
     * Direct placement on receive: large payloads are read from the socket straight into their targets.
     * Off by default: it measured no faster than the copying receive (one read per FPDU instead of one
     * per buffer-full; see the doc); {@value #ZERO_COPY_PROPERTY} or {@value #ZERO_COPY_RX_PROPERTY} turn it on.
     */
    final boolean zeroCopyRx;
    private final Crc32c crc32c = new Crc32c();
    private final CRC32C txCrc = new CRC32C();
    private final MemorySegment scratch = Arena.ofAuto().allocate(8, 8);
    /** FPDUs sent with their payload straight from the region, and received straight into it (tests look) */
    long zeroCopySent;
    long zeroCopyPlaced;
    /** writev and readv calls made on streams' descriptors (tests look) */
    long vectorWrites;
    long vectorReads;
    private IwarpQp[] streams = new IwarpQp[16];
    private int streamCount;

    private final IwarpConnectionManager cm;
    private final java.util.List<String> limitations;
    /** atomics and immediate data (WrOpcode ordinals): refused unless the peer speaks jrdma's extensions */
    static final int EXTENSION_OPS = opsMask(WrOpcode.ATOMIC_CMP_AND_SWP, WrOpcode.ATOMIC_FETCH_AND_ADD,
            WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.SEND_WITH_IMM);

    IwarpEngine(Engine engine) {
        this.engine = engine;
        this.counters = engine.counters;
        String zc = System.getProperty(ZERO_COPY_PROPERTY);
        String rx = System.getProperty(ZERO_COPY_RX_PROPERTY);
        this.zeroCopy = zc != null ? Boolean.parseBoolean(zc) : vectored;
        this.zeroCopyRx = rx != null ? Boolean.parseBoolean(rx) : Boolean.parseBoolean(zc);
        this.cm = new IwarpConnectionManager(engine.context);
        this.limitations = vectored ? java.util.List.of() : java.util.List.of(writevLimitation(writevReason()));
        Fallbacks.sayOnce("soft-iWARP", limitations);
    }

    /**
     * The soft-iWARP limitation for streams without writev/readv.
     *
     * @param reason why writev/readv are not available (as {@code NativeTcp} says it), or null when they
     *               are and {@code -Djrdma.iwarp.writev=false} turned them off
     */
    public static String writevLimitation(String reason) {
        return "TCP through SocketChannel instead of writev/readv: payloads are copied into the stream's"
                + " transmit buffer instead of leaving from their regions, one system call per buffer; "
                + (reason == null ? "turned off by -D" + NativeTcp.PROPERTY + "=false" : reason);
    }

    /** @return the limitations of the soft-iWARP devices in this process (empty: none) */
    public static java.util.List<String> limitationsNow() {
        return NativeTcp.enabled() ? java.util.List.of() : java.util.List.of(writevLimitation(writevReason()));
    }

    /**
     * Why streams go without writev/readv: {@code NativeTcp}'s reason, with the add-opens flag added when
     * that is missing too (its reason names only the first flag it misses), or null for the property.
     */
    public static String writevReason() {
        String why = NativeTcp.unavailableReason();
        Module me = IwarpEngine.class.getModule();
        if (why != null && !why.contains("--add-opens") && !Object.class.getModule().isExported("sun.nio.ch", me)) {
            why += ", and the socket's descriptor is not reachable (java --add-opens java.base/sun.nio.ch="
                    + (me.isNamed() ? me.getName() : "ALL-UNNAMED") + ")";
        }
        return why;
    }

    /** @return the iWARP transport of a soft-iWARP context (its connection manager and tests reach it so) */
    static IwarpEngine of(Context c) {
        return (IwarpEngine) c.engine.transport;
    }

    private static int opsMask(WrOpcode... ops) {
        int m = 0;
        for (WrOpcode o : ops) {
            m |= 1 << o.ordinal();
        }
        return m;
    }

    // ------------------------------------------------------------------ Transport: QP life and device facts

    @Override
    public Qp newQp(Pd pd, int qpn, io.jrdma.verbs.QpInitAttr init, Cq sendCq, Cq recvCq) {
        return new IwarpQp(engine.context, pd, qpn, init, sendCq, recvCq);
    }

    @Override
    public void checkModify(Qp qp, QpState from, QpState to) {
        if (to == QpState.RTS && from == QpState.RTR && ((IwarpQp) qp).iw == null) {
            throw new io.jrdma.verbs.RdmaException(io.jrdma.verbs.RdmaException.Errno.EINVAL, "an iWARP QP reaches "
                    + "RTS through the connection manager, which gives it its TCP stream (as siw: modify to RTS "
                    + "without a connection is refused)");
        }
    }

    @Override
    public void flushed(Qp q) {
        IwarpQp qp = (IwarpQp) q;
        qp.reqIndex = qp.sqConsumer;
        qp.reqOffset = 0;
        qp.rdAtomicInFlight = 0;
    }

    @Override
    public void reset(Qp q) {
        IwarpQp qp = (IwarpQp) q;
        release(qp);
        flushed(qp);
    }

    @Override
    public int service(Qp qp, int budget) {
        return transmit(qp, budget);
    }

    @Override
    public io.jrdma.verbs.ConnectionManager connectionManager() {
        return cm;
    }

    @Override
    public java.util.List<String> limitations() {
        return limitations;
    }

    @Override
    public String describe() {
        return "tcp";
    }

    // ------------------------------------------------------------------ attach / release (control path)

    /** Engine thread: gives a QP its connected stream; the QP is then in RTS. */
    void attach(IwarpQp qp, IwarpStream s) {
        s.sqTxEnd = new long[qp.sq.length];
        qp.iw = s;
        if (streamCount == streams.length) {
            streams = java.util.Arrays.copyOf(streams, streamCount * 2);
        }
        streams[streamCount++] = qp;
        engine.schedule(qp);
    }

    /** Engine thread: the QP is destroyed or reset: its stream is closed (siw: the connection goes with it). */
    void release(IwarpQp qp) {
        IwarpStream s = qp.iw;
        if (s == null) {
            return;
        }
        closeStream(s);
        qp.iw = null;
        for (int i = 0; i < streamCount; i++) {
            if (streams[i] == qp) {
                streams[i] = streams[--streamCount];
                streams[streamCount] = null;
                break;
            }
        }
    }

    @Override
    public void close() {
        cm.close();
        for (int i = 0; i < streamCount; i++) {
            if (streams[i].iw != null) {
                closeStream(streams[i].iw);
            }
        }
    }

    private void closeStream(IwarpStream s) {
        if (s.closed) {
            return;
        }
        s.closed = true;
        s.rxStopped = true;
        try {
            s.channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    // ------------------------------------------------------------------ duty cycle hooks

    /** @return true while the QP has something to do: unsent or unretired WQEs, responses, bytes to write */
    @Override
    public boolean hasWork(Qp q) {
        IwarpQp qp = (IwarpQp) q;
        IwarpStream s = qp.iw;
        if (qp.state == QpState.ERROR) {
            return Engine.flushPending(qp) || (s != null && !s.closed);
        }
        if (s == null || s.closed || (qp.state != QpState.RTS && qp.state != QpState.SQD)) {
            return false;
        }
        return s.txPending() || s.irqCount > 0 || qp.sqConsumer != qp.sqProducerAcquire();
    }

    /**
     * A QP in ERROR: writes out what is queued (a TERMINATE last) and then closes the stream, as siw
     * closes the connection of a QP that leaves RTS with an error.
     */
    @Override
    public int serviceError(Qp q) {
        IwarpQp qp = (IwarpQp) q;
        IwarpStream s = qp.iw;
        if (s == null || s.closed) {
            return 0;
        }
        s.rxStopped = true;
        flushTx(qp, s);
        if (!s.txPending() || !s.channel.isOpen()) {
            closeStream(s);
            return 1;
        }
        return 0;
    }

    /** Reads every stream once and processes the FPDUs that are complete. */
    @Override
    public int receive() {
        int work = 0;
        for (int i = 0; i < streamCount; i++) {
            IwarpQp qp = streams[i];
            IwarpStream s = qp.iw;
            if (s != null && !s.rxStopped) {
                try {
                    work += read(qp, s);
                } catch (RuntimeException e) {
                    // e.g. a region whose memory was freed under it: the stream is terminated, the engine goes on
                    counters.increment(Counter.ENGINE_ERRORS);
                    terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_LOCAL_CATASTROPHIC,
                            Terminate.RDMAP_UNSPECIFIED, -1, false);
                }
            }
        }
        return work;
    }

    // ------------------------------------------------------------------ receiver (siw_qp_rx.c)

    private int read(IwarpQp qp, IwarpStream s) {
        if (s.dp) {
            return readDirect(qp, s);
        }
        int n;
        try {
            // large FPDUs and direct placement: read little beyond the next header, so that its payload can go
            // straight to its target. A copying receive always reads as much as the buffer takes (a 1 KiB read
            // after every buffer that ended on an FPDU boundary was one system call more each time)
            int limit = zeroCopyRx && s.rxLarge && s.rxStart == s.rxEnd
                    ? Math.min(s.rxEnd + RX_PEEK, s.rx.capacity()) : s.rx.capacity();
            s.rx.limit(limit).position(s.rxEnd);
            n = s.channel.read(s.rx);
        } catch (IOException e) {
            n = -1;
        }
        if (n < 0) {
            streamEnded(qp, s);
            return 1;
        }
        if (n == 0 && s.rxStart == s.rxEnd) {
            return 0;
        }
        s.rxEnd += n;
        return n + process(qp, s);
    }

    /** Processes the complete FPDUs in the stream's buffer; starts direct placement of a large partial one. */
    private int process(IwarpQp qp, IwarpStream s) {
        int fpdus = 0;
        while (!s.rxStopped && fpdus < RX_FPDU_BUDGET) {
            int avail = s.rxEnd - s.rxStart;
            int total = Fpdu.scan(s.rxSeg, s.rxStart, avail, RX_MAX_ULPDU);
            if (total < 0) {
                IwarpError e = IwarpError.fromResult(total);
                counters.increment(Counter.RCVD_MALFORMED);
                terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
                break;
            }
            if (total == 0) {
                if (zeroCopyRx && startDirect(qp, s)) {
                    fpdus++;
                }
                break;
            }
            counters.increment(Counter.RCVD_PKTS);
            s.rxLarge = total > ZC_RX_MIN;
            onFpdu(qp, s, s.rxStart, total);
            s.rxStart += total;
            fpdus++;
        }
        if (s.rxStart == s.rxEnd) {
            s.rxStart = 0;
            s.rxEnd = 0;
        } else if (s.rx.capacity() - s.rxEnd < Fpdu.length(RX_MAX_ULPDU)) {
            int keep = s.rxEnd - s.rxStart;
            MemorySegment.copy(s.rxSeg, s.rxStart, s.rxSeg, 0, keep);
            s.rxStart = 0;
            s.rxEnd = keep;
        }
        return fpdus;
    }

    // ------------------------------------------------------------------ direct placement (zero copy, siw_rx_data)

    /**
     * The FPDU at the head of the stream's buffer is incomplete and large: if it is a WRITE, a READ
     * Response or a plain SEND that passes every check the buffered path would make, its payload
     * bytes already here are placed, the CRC is started over length field, header and those bytes,
     * and the rest of the payload will be read straight into the target ({@link #readDirect}).
     * Anything else (a failing check included) waits in the buffer, as before, to be handled whole.
     *
     * @return true if direct placement started (the buffer is then empty)
     */
    private boolean startDirect(IwarpQp qp, IwarpStream s) {
        MemorySegment seg = s.rxSeg;
        int off = s.rxStart;
        int avail = s.rxEnd - off;
        int ddp = off + Fpdu.ULPDU_OFFSET;
        if (s.rxStopped || avail < Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH) {
            return false;
        }
        int ulen = Fpdu.ulpduLength(seg, off);
        int hdr = Ddp.tagged(seg, ddp) ? Ddp.TAGGED_HEADER_LENGTH : Ddp.UNTAGGED_HEADER_LENGTH;
        int len = ulen - hdr;
        int here = avail - Fpdu.ULPDU_OFFSET - hdr;
        if (len - here < ZC_RX_MIN || Rdmap.check(seg, ddp, ulen) != hdr) {
            return false;
        }
        QpState st = qp.state;
        if (st != QpState.RTS && st != QpState.SQD) {
            return false;
        }
        int opcode = Rdmap.opcode(seg, ddp);
        int payload = ddp + hdr;
        switch (opcode) {
            case Rdmap.WRITE -> {
                long to = Ddp.taggedOffset(seg, ddp);
                Mr mr = engine.context.keys.lookup(Ddp.stag(seg, ddp));
                if (taggedError(mr, qp, Access.REMOTE_WRITE, to, len) >= 0 || RegionViews.of(mr) == null) {
                    return false;
                }
                MemorySegment.copy(seg, payload, mr.segment, to - mr.address, here);
                s.dpMr = mr;
                s.dpVa = to;
            }
            case Rdmap.READ_RESPONSE -> {
                Wqe w = orqHead(qp, s);
                long o = s.readRespOffset;
                boolean last = Ddp.last(seg, ddp);
                if (w == null || w.opcode != WrOpcode.RDMA_READ || Ddp.stag(seg, ddp) != sinkStag(w)
                        || Ddp.taggedOffset(seg, ddp) != sinkTo(w) + o || o + len > w.length
                        || (last && o + len != w.length) || !viewable(w.sgeMr, w.numSge)) {
                    return false;
                }
                Sgl.scatter(w, o, seg, payload, here);
                s.dpWqe = w;
            }
            case Rdmap.SEND, Rdmap.SEND_SE -> {
                if (Ddp.msn(seg, ddp) != s.rxMsnSend
                        || Ddp.messageOffset(seg, ddp) != (s.recv == null ? 0 : s.recvPlaced)) {
                    return false;
                }
                RecvWqe r = s.recv;
                if (r == null) {
                    if (qp.rqConsumer == qp.rqProducerAcquire()) { // release partner: Qp.postRecv
                        return false;
                    }
                    r = qp.rq[(int) (qp.rqConsumer & qp.rqMask)];
                }
                long placed = s.recv == null ? 0 : s.recvPlaced;
                if (placed + len > r.capacity || !recvWritable(qp, r, placed, len)) {
                    return false;
                }
                if (s.recv == null) {
                    s.recv = r;
                    s.recvPlaced = 0;
                }
                Sgl.scatter(engine.context.keys, qp, r, placed, seg, payload, here);
            }
            default -> {
                return false;
            }
        }
        if (s.crc) {
            s.dpCrc.reset();
            s.rx.limit(payload + here).position(off);
            s.dpCrc.update(s.rx);
        }
        s.dp = true;
        s.rxLarge = true;
        s.dpOpcode = opcode;
        s.dpLast = Ddp.last(seg, ddp);
        s.dpLength = len;
        s.dpPlaced = here;
        s.dpTrailer = Fpdu.padLength(ulen) + Fpdu.CRC_LENGTH;
        s.rxStart = 0;
        s.rxEnd = 0;
        return true;
    }

    /** @return true if every region of the list can have views (zero copy needs them) */
    private static boolean viewable(Mr[] mrs, int n) {
        for (int i = 0; i < n; i++) {
            if (mrs[i] != null && RegionViews.of(mrs[i]) == null) {
                return false;
            }
        }
        return true;
    }

    /** The checks {@link Sgl#scatter} makes, without copying: bytes {@code [off, off + len)} of the receive's list may be written. */
    private boolean recvWritable(IwarpQp qp, RecvWqe r, long off, long len) {
        long skip = off;
        long left = len;
        for (int i = 0; i < r.numSge && left > 0; i++) {
            int sl = r.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            long n = Math.min(sl - skip, left);
            Mr mr = engine.context.keys.lookup(r.sgeLkey[i]);
            if (mr == null || !mr.permits(qp.pd, Access.LOCAL_WRITE, r.sgeAddr[i] + skip, n)
                    || RegionViews.of(mr) == null) {
                return false;
            }
            left -= n;
            skip = 0;
        }
        return left == 0;
    }

    /**
     * Reads the payload of the FPDU being placed directly: the next piece of its target (one SGE's
     * worth at most) straight from the socket, with the bytes after the payload (the FPDU's pad and
     * CRC, the next FPDU's header) into the stream's buffer in the same system call when the piece is
     * the last and the stream has a descriptor ({@code readv}; else the next {@code read} brings them);
     * then the CRC and the completion, as {@link #onFpdu} would have done.
     */
    private int readDirect(IwarpQp qp, IwarpStream s) {
        int left = s.dpLength - s.dpPlaced;
        int n;
        int got = 0;
        if (left == 0) { // the payload is in: its trailer, and a peek at the next FPDU, go to the buffer
            try {
                s.rx.limit(Math.min(s.rxEnd + RX_PEEK, s.rx.capacity())).position(s.rxEnd);
                n = s.channel.read(s.rx);
            } catch (IOException e) {
                n = -1;
            }
        } else {
            long at = s.dpPlaced;
            Mr mr;
            long va;
            long piece;
            switch (s.dpOpcode) {
                case Rdmap.WRITE -> {
                    mr = s.dpMr;
                    va = s.dpVa + at;
                    piece = left;
                }
                case Rdmap.READ_RESPONSE -> {
                    Wqe w = s.dpWqe;
                    int i = sgeAt(w.sgeLength, w.numSge, s.readRespOffset + at);
                    mr = w.sgeMr[i];
                    va = w.sgeAddr[i] + sgeSkip;
                    piece = Math.min(left, w.sgeLength[i] - sgeSkip);
                }
                default -> {
                    RecvWqe r = s.recv;
                    int i = sgeAt(r.sgeLength, r.numSge, s.recvPlaced + at);
                    mr = engine.context.keys.lookup(r.sgeLkey[i]);
                    va = r.sgeAddr[i] + sgeSkip;
                    piece = Math.min(left, r.sgeLength[i] - sgeSkip);
                }
            }
            ByteBuffer view = RegionViews.of(mr).acquireForRead(va, (int) piece);
            int start = view.position();
            if (s.fd >= 0) {
                // one readv: the rest of the piece into the region and, when it ends the payload, the trailer,
                // the next FPDU's header and a little more into the buffer (RX_PEEK: its payload goes direct too)
                NativeTcp.Vec v = s.rxVec;
                v.clear();
                v.add(mr.address + start, piece, mr.segment); // kept alive during the call
                if (piece == left) {
                    v.add(s.rxSeg.address() + s.rxEnd, Math.min(s.rx.capacity() - s.rxEnd, RX_PEEK), null);
                }
                long r = v.readv(s.fd);
                vectorReads++;
                n = r > 0 ? (int) r : r == 0 ? -1 : 0; // 0: the peer closed; -errno: EAGAIN/EINTR, or a reset
                if (r < 0 && r != -NativeTcp.EAGAIN && r != -NativeTcp.EINTR) {
                    n = -1;
                }
                if (n > 0) {
                    view.position(start + (int) Math.min(n, piece));
                }
            } else {
                try {
                    // the payload only: a scattering read (view + buffer) would allocate, as NIO's gathering
                    // write; the trailer and the next header come with the next read into the buffer
                    n = s.channel.read(view);
                } catch (IOException e) {
                    n = -1;
                }
            }
            if (n > 0) {
                got = view.position() - start;
                if (s.crc && got > 0) {
                    view.limit(start + got).position(start);
                    s.dpCrc.update(view);
                }
                s.dpPlaced += got;
            }
        }
        if (n < 0) {
            streamEnded(qp, s);
            return 1;
        }
        if (n == 0) {
            return 0;
        }
        s.rxEnd += n - got;
        if (s.dpPlaced < s.dpLength || s.rxEnd - s.rxStart < s.dpTrailer) {
            return n;
        }
        finishDirect(qp, s);
        return n + 1 + process(qp, s);
    }

    /** {@link #sgeAt}'s second result: the offset inside the SGE found (engine thread only). */
    private long sgeSkip;

    /** @return the SGE holding byte {@code off} of a list (and its offset there in {@link #sgeSkip}) */
    private int sgeAt(int[] lengths, int n, long off) {
        long skip = off;
        for (int i = 0; i < n; i++) {
            if (skip < lengths[i]) {
                sgeSkip = skip;
                return i;
            }
            skip -= lengths[i];
        }
        throw new IllegalStateException("offset " + off + " beyond the scatter list"); // checked before placement
    }

    /** The payload of a directly placed FPDU is in and its trailer at the head of the buffer: CRC, then completion. */
    private void finishDirect(IwarpQp qp, IwarpStream s) {
        s.dp = false;
        int pad = s.dpTrailer - Fpdu.CRC_LENGTH;
        if (s.crc) {
            if (pad > 0) { // the pad bytes as received (siw may send stale ones; the CRC covers what was sent)
                s.rx.limit(s.rxStart + pad).position(s.rxStart);
                s.dpCrc.update(s.rx);
            }
            if (Crc32c.read(s.rxSeg, s.rxStart + pad) != (int) s.dpCrc.getValue()) {
                counters.increment(Counter.RCVD_MPA_CRC_ERR);
                IwarpError e = IwarpError.CRC_MISMATCH;
                terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
                return;
            }
        }
        s.rxStart += s.dpTrailer;
        counters.increment(Counter.RCVD_PKTS);
        zeroCopyPlaced++;
        int len = s.dpLength;
        switch (s.dpOpcode) {
            case Rdmap.WRITE -> {
                s.dpMr = null;
                writePlaced(s, len, s.dpLast);
            }
            case Rdmap.READ_RESPONSE -> {
                Wqe w = s.dpWqe;
                s.dpWqe = null;
                readResponsePlaced(qp, s, w, len, s.dpLast);
            }
            default -> sendPlaced(qp, s, -1, -1, s.dpOpcode, 0, false, len, s.dpLast); // a plain SEND
        }
    }

    /** The peer closed or reset the connection: a partial FPDU left behind is a truncated one. */
    private void streamEnded(IwarpQp qp, IwarpStream s) {
        if ((s.rxEnd != s.rxStart || s.dp) && !s.rxStopped) {
            IwarpError e = IwarpError.FPDU_TRUNCATED;
            counters.increment(Counter.RCVD_MALFORMED);
            terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
            return;
        }
        s.rxStopped = true;
        if (qp.state != QpState.ERROR && qp.state != QpState.RESET) {
            engine.enterError(qp); // siw: the LLP went away, the QP goes to ERROR and flushes
        }
    }

    private void onFpdu(IwarpQp qp, IwarpStream s, int off, int total) {
        MemorySegment seg = s.rxSeg;
        int ulen = Fpdu.ulpduLength(seg, off);
        if (s.crc) {
            int at = Fpdu.crcOffset(ulen);
            if (Crc32c.read(seg, off + at) != crc32c.compute(s.rx, off, at)) {
                counters.increment(Counter.RCVD_MPA_CRC_ERR);
                IwarpError e = IwarpError.CRC_MISMATCH;
                terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
                return;
            }
        }
        int ddp = off + Fpdu.ULPDU_OFFSET;
        int hdr = Rdmap.check(seg, ddp, ulen);
        if (hdr < 0) {
            IwarpError e = IwarpError.fromResult(hdr);
            counters.increment(Counter.RCVD_MALFORMED);
            terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(),
                    ulen >= Ddp.UNTAGGED_HEADER_LENGTH || (ulen >= Ddp.TAGGED_HEADER_LENGTH && Ddp.tagged(seg, ddp))
                            ? off : -1, false);
            return;
        }
        QpState st = qp.state;
        if (st != QpState.RTS && st != QpState.SQD) {
            counters.increment(Counter.RCVD_BAD_STATE);
            return;
        }
        int opcode = Rdmap.opcode(seg, ddp);
        int payload = off + Fpdu.ULPDU_OFFSET + hdr;
        int len = ulen - hdr;
        boolean last = Ddp.last(seg, ddp);
        if (opcode >= Rdmap.IMMEDIATE_DATA && !s.extensions) {
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false); // RFC 7306 was not negotiated
            return;
        }
        switch (opcode) {
            case Rdmap.WRITE -> onWrite(qp, s, off, ddp, payload, len, last);
            case Rdmap.READ_REQUEST -> onReadRequest(qp, s, off, ddp, last, len);
            case Rdmap.READ_RESPONSE -> onReadResponse(qp, s, off, ddp, payload, len, last);
            case Rdmap.SEND, Rdmap.SEND_SE, Rdmap.SEND_INVALIDATE, Rdmap.SEND_SE_INVALIDATE,
                 Rdmap.IMMEDIATE_DATA, Rdmap.IMMEDIATE_DATA_SE -> onSend(qp, s, off, ddp, opcode, payload, len, last);
            case Rdmap.TERMINATE -> onTerminate(qp, s, ddp);
            case Rdmap.ATOMIC_REQUEST -> onAtomicRequest(qp, s, off, ddp, len);
            case Rdmap.ATOMIC_RESPONSE -> onAtomicResponse(qp, s, off, ddp);
            default -> terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
        }
    }

    /** RFC 5041 §7: a tagged buffer check failed; the code for it (siw's siw_tagged_error), or -1 if it passed. */
    private static int taggedError(Mr mr, IwarpQp qp, int needed, long va, long len) {
        if (mr == null) {
            return Terminate.DDP_TAGGED_INVALID_STAG;
        }
        if (mr.pd != qp.pd) {
            return Terminate.DDP_TAGGED_STAG_NOT_ASSOCIATED;
        }
        if ((mr.access & needed) != needed || (qp.accessFlags & needed) != needed) {
            return Terminate.DDP_TAGGED_INVALID_STAG; // RFC 5041 has no access-rights code; siw reports an invalid STag
        }
        if (!mr.permits(qp.pd, needed, va, len)) {
            return Terminate.DDP_TAGGED_BASE_BOUNDS;
        }
        return -1;
    }

    private void onWrite(IwarpQp qp, IwarpStream s, int off, int ddp, int payload, int len, boolean last) {
        if (len > 0) {
            int stag = Ddp.stag(s.rxSeg, ddp);
            long to = Ddp.taggedOffset(s.rxSeg, ddp);
            Mr mr = engine.context.keys.lookup(stag);
            int code = taggedError(mr, qp, Access.REMOTE_WRITE, to, len);
            if (code >= 0) {
                terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, code, off, false);
                return;
            }
            MemorySegment.copy(s.rxSeg, payload, mr.segment, to - mr.address, len);
        }
        writePlaced(s, len, last);
    }

    private static void writePlaced(IwarpStream s, int len, boolean last) {
        s.writeBytes += len;
        if (last) {
            s.lastWriteLength = s.writeBytes;
            s.writeBytes = 0;
        }
    }

    private void onReadRequest(IwarpQp qp, IwarpStream s, int off, int ddp, boolean last, int len) {
        MemorySegment seg = s.rxSeg;
        if (Ddp.msn(seg, ddp) != s.rxMsnRead) {
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, off, false);
            return;
        }
        if (Ddp.messageOffset(seg, ddp) != 0 || !last || len != 0) {
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MO, off, false);
            return;
        }
        int rr = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        long size = Integer.toUnsignedLong(ReadRequest.messageSize(seg, rr));
        long srcTo = ReadRequest.sourceTaggedOffset(seg, rr);
        Mr mr = null;
        if (size > 0) {
            mr = engine.context.keys.lookup(ReadRequest.sourceStag(seg, rr));
            int code = mr == null ? Terminate.RDMAP_INVALID_STAG
                    : mr.pd != qp.pd ? Terminate.RDMAP_STAG_NOT_ASSOCIATED
                    : (mr.access & Access.REMOTE_READ) == 0 || (qp.accessFlags & Access.REMOTE_READ) == 0
                            ? Terminate.RDMAP_ACCESS_RIGHTS
                    : !mr.permits(qp.pd, Access.REMOTE_READ, srcTo, size) ? Terminate.RDMAP_BASE_BOUNDS : -1;
            if (code >= 0) { // RFC 5040 §7.1: a READ's source is checked by RDMAP, reported with the request
                terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, code, off, true);
                return;
            }
        }
        if (s.irqCount == s.irqCapacity) { // more READs than our IRD: siw terminates the stream
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_CATASTROPHIC_STREAM, off, true);
            return;
        }
        s.rxMsnRead++;
        int i = (s.irqHead + s.irqCount) % s.irqCapacity;
        s.irqAtomic[i] = false;
        s.irqMr[i] = mr;
        s.irqVa[i] = srcTo;
        s.irqLength[i] = size;
        s.irqSent[i] = 0;
        s.irqSinkStag[i] = ReadRequest.sinkStag(seg, rr);
        s.irqSinkTo[i] = ReadRequest.sinkTaggedOffset(seg, rr);
        s.irqCount++;
        engine.schedule(qp);
    }

    private void onAtomicRequest(IwarpQp qp, IwarpStream s, int off, int ddp, int len) {
        MemorySegment seg = s.rxSeg;
        if (Ddp.msn(seg, ddp) != s.rxMsnRead || len != 0) {
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, off, false);
            return;
        }
        int a = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        long va = AtomicRequest.remoteTaggedOffset(seg, a);
        Mr mr = engine.context.keys.lookup(AtomicRequest.remoteStag(seg, a));
        int code = mr == null ? Terminate.RDMAP_INVALID_STAG
                : mr.pd != qp.pd ? Terminate.RDMAP_STAG_NOT_ASSOCIATED
                : (mr.access & Access.REMOTE_ATOMIC) == 0 || (qp.accessFlags & Access.REMOTE_ATOMIC) == 0
                        ? Terminate.RDMAP_ACCESS_RIGHTS
                : (va & 7) != 0 || !mr.permits(qp.pd, Access.REMOTE_ATOMIC, va, 8) ? Terminate.RDMAP_BASE_BOUNDS : -1;
        int op = AtomicRequest.atomicOpcode(seg, a);
        if (code < 0 && op != AtomicRequest.FETCH_ADD && op != AtomicRequest.COMPARE_SWAP) {
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
            return;
        }
        if (code >= 0) {
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, code, off, false);
            return;
        }
        if (s.irqCount == s.irqCapacity) {
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_CATASTROPHIC_STREAM, off, false);
            return;
        }
        long at = va - mr.address;
        long original = op == AtomicRequest.COMPARE_SWAP
                ? (long) ATOMIC_LONG.compareAndExchange(mr.segment, at, AtomicRequest.compareData(seg, a),
                        AtomicRequest.addOrSwapData(seg, a))
                : (long) ATOMIC_LONG.getAndAdd(mr.segment, at, AtomicRequest.addOrSwapData(seg, a));
        s.rxMsnRead++;
        int i = (s.irqHead + s.irqCount) % s.irqCapacity;
        s.irqAtomic[i] = true;
        s.irqMr[i] = null;
        s.irqOrig[i] = original;
        s.irqRequestId[i] = AtomicRequest.requestId(seg, a);
        s.irqCount++;
        engine.schedule(qp);
    }

    /** @return the requester's oldest READ/atomic WQE waiting for its response, or null (the ORQ head) */
    private static Wqe orqHead(IwarpQp qp, IwarpStream s) {
        long i = Math.max(s.orqIndex, qp.sqConsumer);
        for (; i < qp.reqIndex; i++) {
            Wqe w = qp.sq[(int) (i & qp.sqMask)];
            if (w.isReadOrAtomic() && w.started && !w.responded && w.localError < 0) {
                if (s.orqIndex != i) {
                    s.orqIndex = i;
                    s.readRespOffset = 0;
                }
                return w;
            }
        }
        return null;
    }

    private void onReadResponse(IwarpQp qp, IwarpStream s, int off, int ddp, int payload, int len, boolean last) {
        Wqe w = orqHead(qp, s);
        if (w == null || w.opcode != WrOpcode.RDMA_READ) {
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
            return;
        }
        int stag = Ddp.stag(s.rxSeg, ddp);
        long to = Ddp.taggedOffset(s.rxSeg, ddp);
        long o = s.readRespOffset;
        // as siw: the response must match the request exactly (sink STag, next offset, length)
        int code = stag != sinkStag(w) ? Terminate.DDP_TAGGED_INVALID_STAG
                : to != sinkTo(w) + o || o + len > w.length || (last && o + len != w.length)
                        ? Terminate.DDP_TAGGED_BASE_BOUNDS : -1;
        if (code >= 0) {
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, code, off, false);
            return;
        }
        if (len > 0) {
            Sgl.scatter(w, o, s.rxSeg, payload, len);
        }
        readResponsePlaced(qp, s, w, len, last);
    }

    private void readResponsePlaced(IwarpQp qp, IwarpStream s, Wqe w, int len, boolean last) {
        s.readRespOffset += len;
        if (last) {
            respond(qp, s, w);
        }
    }

    private void onAtomicResponse(IwarpQp qp, IwarpStream s, int off, int ddp) {
        Wqe w = orqHead(qp, s);
        int a = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        if (w == null || !w.opcode.isAtomic() || Ddp.msn(s.rxSeg, ddp) != s.rxMsnAtomicResp
                || AtomicResponse.originalRequestId(s.rxSeg, a) != w.npkts) {
            terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
            return;
        }
        s.rxMsnAtomicResp++;
        scratch.set(NATIVE_LONG, 0, AtomicResponse.originalValue(s.rxSeg, a)); // host order, as the responder's memory
        Sgl.scatter(w, 0, scratch, 0, 8);
        respond(qp, s, w);
    }

    private void respond(IwarpQp qp, IwarpStream s, Wqe w) {
        w.responded = true;
        qp.rdAtomicInFlight--;
        s.orqIndex = -1;
        s.readRespOffset = 0;
        retire(qp, s);
        engine.schedule(qp); // ORD room: the requester may go on
    }

    private static int sinkStag(Wqe w) {
        return w.numSge > 0 ? w.sgeLkey[0] : 0;
    }

    private static long sinkTo(Wqe w) {
        return w.numSge > 0 ? w.sgeAddr[0] : 0;
    }

    private void onSend(IwarpQp qp, IwarpStream s, int off, int ddp, int opcode, int payload, int len, boolean last) {
        MemorySegment seg = s.rxSeg;
        if (Ddp.msn(seg, ddp) != s.rxMsnSend) {
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, off, false);
            return;
        }
        boolean imm = opcode == Rdmap.IMMEDIATE_DATA || opcode == Rdmap.IMMEDIATE_DATA_SE;
        long immValue = imm ? ImmediateData.value(seg, ddp + Ddp.UNTAGGED_HEADER_LENGTH) : 0;
        boolean afterWrite = imm && (immValue >>> 32) == IMM_AFTER_WRITE;
        if (Ddp.messageOffset(seg, ddp) != (s.recv == null ? 0 : s.recvPlaced) || (afterWrite && (len != 0 || !last))) {
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED, Terminate.DDP_UNTAGGED_INVALID_MO,
                    off, false);
            return;
        }
        if (s.recv == null) {
            if (qp.rqConsumer == qp.rqProducerAcquire()) { // release partner: Qp.postRecv
                // iWARP has no RNR: a SEND without a posted receive ends the stream (siw: DDP, no buffer)
                terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                        Terminate.DDP_UNTAGGED_INVALID_MSN_NO_BUFFER, off, false);
                return;
            }
            s.recv = qp.rq[(int) (qp.rqConsumer & qp.rqMask)];
            s.recvPlaced = 0;
        }
        RecvWqe r = s.recv;
        if (s.recvPlaced + len > r.capacity) {
            completeRecv(qp, s, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_MESSAGE_TOO_LONG, off, false);
            return;
        }
        if (len > 0 && !Sgl.scatter(engine.context.keys, qp, r, s.recvPlaced, seg, payload, len)) {
            completeRecv(qp, s, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
            terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_CATASTROPHIC, 0, off, false);
            return;
        }
        sendPlaced(qp, s, off, ddp, opcode, immValue, afterWrite, len, last);
    }

    /** A SEND segment is placed: counts it and, when it was the last, completes the receive. */
    private void sendPlaced(IwarpQp qp, IwarpStream s, int off, int ddp, int opcode, long immValue, boolean afterWrite,
            int len, boolean last) {
        s.recvPlaced += len;
        if (!last) {
            return;
        }
        int flags = Rdmap.solicitedEvent(opcode) ? WorkCompletion.SOLICITED : 0;
        if (opcode == Rdmap.SEND_INVALIDATE || opcode == Rdmap.SEND_SE_INVALIDATE) {
            // RFC 5040 §6.10: invalidate the STag at the data sink once the message is placed. It must be
            // a region of this QP's PD registered with REMOTE_INVALIDATE (Mr.invalidateFor).
            int stag = Rdmap.invalidateStag(s.rxSeg, ddp);
            Mr target = engine.context.keys.lookup(stag);
            if (target == null || !target.invalidateFor(qp.pd)) {
                completeRecv(qp, s, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                terminate(qp, s, Terminate.LAYER_RDMAP, target == null
                                ? Terminate.RDMAP_ETYPE_REMOTE_PROTECTION : Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                        target == null ? Terminate.RDMAP_INVALID_STAG : Terminate.RDMAP_STAG_CANNOT_INVALIDATE, off,
                        false);
                return;
            }
            immValue = Integer.toUnsignedLong(stag); // ibv_wc.invalidated_rkey shares the immediate's place
            flags |= WorkCompletion.WITH_INV;
        }
        s.rxMsnSend++;
        if (afterWrite) {
            completeRecv(qp, s, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) s.lastWriteLength, (int) immValue,
                    flags | WorkCompletion.WITH_IMM);
        } else {
            completeRecv(qp, s, WcStatus.SUCCESS, WcOpcode.RECV, (int) s.recvPlaced, (int) immValue,
                    flags | (opcode == Rdmap.IMMEDIATE_DATA || opcode == Rdmap.IMMEDIATE_DATA_SE
                            ? WorkCompletion.WITH_IMM : 0));
        }
    }

    private void completeRecv(IwarpQp qp, IwarpStream s, WcStatus st, WcOpcode op, int len, int imm, int flags) {
        long wrId = s.recv.wrId;
        s.recv = null;
        s.recvPlaced = 0;
        // the slot is free before the completion is visible: a poster that reposts on seeing it finds room
        qp.rqConsumerRelease(qp.rqConsumer + 1); // acquire partner: Qp.postRecv's full check
        qp.recvCq.push(wrId, st, op, len, imm, flags, qp.qpn, qp.destQpn);
        counters.increment(Counter.RDMA_RECVS);
    }

    /** A TERMINATE from the peer: the oldest request still open fails with the matching status, the QP enters ERROR. */
    private void onTerminate(IwarpQp qp, IwarpStream s, int ddp) {
        counters.increment(Counter.RCVD_TERMINATES);
        int t = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        int layer = Terminate.layer(s.rxSeg, t);
        int etype = Terminate.errorType(s.rxSeg, t);
        WcStatus st = layer == Terminate.LAYER_RDMAP && etype == Terminate.RDMAP_ETYPE_REMOTE_PROTECTION
                || layer == Terminate.LAYER_DDP && etype == Terminate.DDP_ETYPE_TAGGED ? WcStatus.REM_ACCESS_ERR
                : layer == Terminate.LAYER_DDP && etype == Terminate.DDP_ETYPE_UNTAGGED ? WcStatus.REM_INV_REQ_ERR
                : WcStatus.REM_OP_ERR;
        s.rxStopped = true;
        s.rxMsnTerm++;
        if (qp.sqConsumer != qp.reqIndex) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            if (w.localError < 0 && (w.isReadOrAtomic() ? !w.responded : !sent(qp, s, qp.sqConsumer))) {
                w.localError = st.ordinal(); // completed in order by retire, then the QP enters ERROR
            }
        }
        retire(qp, s);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        }
    }

    /**
     * Queues a TERMINATE (RFC 5040 §4.8) reporting the FPDU at {@code failedFpdu} (its DDP header, and
     * the READ Request header when {@code withRdmapHeader}; -1 = none) and moves the QP to ERROR: the
     * receiver stops, the TERMINATE is written, then the stream is closed.
     */
    void terminate(IwarpQp qp, IwarpStream s, int layer, int etype, int code, int failedFpdu, boolean withRdmapHeader) {
        s.rxStopped = true;
        if (s.terminateQueued || s.closed) {
            return;
        }
        s.terminateQueued = true;
        counters.increment(Counter.SENT_TERMINATES);
        MemorySegment tx = s.txSeg;
        int f = s.txEnd; // TX_RESERVE bytes are always free here
        int ddp = f + Fpdu.ULPDU_OFFSET;
        Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.TERMINATE), 0, Rdmap.QN_TERMINATE, s.txMsnTerm++, 0);
        int t = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        int ulen = Ddp.UNTAGGED_HEADER_LENGTH + Terminate.CONTROL_LENGTH;
        int hdrCtl = 0;
        if (failedFpdu >= 0) {
            MemorySegment rx = s.rxSeg;
            int fddp = failedFpdu + Fpdu.ULPDU_OFFSET;
            int ddpLen = Ddp.tagged(rx, fddp) ? Ddp.TAGGED_HEADER_LENGTH : Ddp.UNTAGGED_HEADER_LENGTH;
            boolean r = withRdmapHeader && !Ddp.tagged(rx, fddp);
            hdrCtl = Terminate.FLAG_M | Terminate.FLAG_D | (r ? Terminate.FLAG_R : 0);
            Terminate.segmentLength(tx, t, Fpdu.ulpduLength(rx, failedFpdu)); // RFC 5040: the DDP segment's length
            int copy = ddpLen + (r ? Terminate.RDMAP_HEADER_LENGTH : 0);
            MemorySegment.copy(rx, fddp, tx, t + Terminate.DDP_HEADER_OFFSET, copy);
            ulen += Terminate.DDP_HEADER_OFFSET - Terminate.CONTROL_LENGTH + copy;
        }
        Terminate.write(tx, t, layer, etype, code, hdrCtl);
        Fpdu.writeHeader(tx, f, ulen);
        queue(s, f, ulen); // a gather entry is always free for it (transmit leaves one)
        counters.increment(Counter.SENT_PKTS);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        } else {
            engine.schedule(qp);
        }
    }

    // ------------------------------------------------------------------ transmitter (siw_qp_tx.c)

    /** High 32 bits of the immediate data of the message that carries a WRITE_WITH_IMM's immediate value. */
    static final long IMM_AFTER_WRITE = 1;

    /** Sends READ/atomic responses, then send-queue WQEs, as FPDUs; completes what TCP has taken. */
    @Override
    public int transmit(Qp q, int budget) {
        IwarpQp qp = (IwarpQp) q;
        IwarpStream s = qp.iw;
        QpState st = qp.state;
        if (s == null || s.closed || (st != QpState.RTS && st != QpState.SQD)) {
            return 0;
        }
        try {
            return transmit(qp, s, st, budget);
        } catch (IllegalStateException e) {
            // a region's memory was freed while a WQE or READ Response was being sent from it
            regionGone(qp, s, null);
            return 1;
        }
    }

    private int transmit(IwarpQp qp, IwarpStream s, QpState st, int budget) {
        int n = 0;
        boolean writable = flushTx(qp, s);
        while (writable && n < budget) {
            // room for one more FPDU (copied: its length; zero-copy: three gather entries), a TERMINATE's kept apart
            if (IwarpStream.TX_BUFFER - IwarpStream.TX_RESERVE - s.txEnd < Fpdu.length(s.txMulpdu) + 64
                    || s.iovTail > IwarpStream.IOV - 4) {
                writable = flushTx(qp, s); // all of it gone: the buffer and the gather list start over
                if (!writable) {
                    break;
                }
            }
            if (s.irqCount > 0) {
                response(s);
            } else if (!request(qp, s, st == QpState.SQD)) {
                break;
            }
            n++;
        }
        if (writable) {
            flushTx(qp, s);
        }
        retire(qp, s);
        return n;
    }

    /** Writes queued FPDUs to the socket. @return true when all of them went (the socket takes more) */
    private boolean flushTx(IwarpQp qp, IwarpStream s) {
        if (!s.txPending()) {
            return true;
        }
        Mr gone = goneRegion(s);
        if (gone != null) {
            regionGone(qp, s, gone);
            return false;
        }
        try {
            if (s.fd >= 0 && s.iovTail - s.iovHead > 1) {
                return writev(qp, s);
            }
            // one entry (the copying path's FPDUs are one staged slice): SocketChannel's write, which
            // measured faster than writev for it. Without a descriptor, one write per entry: NIO's gathering
            // write allocates for every buffer that carries a memory session, which region views always do
            // (docs/iwarp-design.md, "Zero copy")
            ByteBuffer b;
            do {
                b = s.iov[s.iovHead];
                s.txTaken += s.channel.write(b);
            } while (!b.hasRemaining() && !s.taken());
        } catch (IOException e) {
            return writeFailed(qp, s);
        } catch (IllegalStateException e) { // a region's memory was freed after the check above
            regionGone(qp, s, goneRegion(s));
            return false;
        }
        if (s.taken()) {
            return true;
        }
        counters.increment(Counter.SEND_ERR); // the socket is full: the rest waits for the next cycle
        return false;
    }

    /**
     * The pending gather list in {@code writev} calls (as many entries as the iovec holds and
     * {@link NativeTcp#KEEP} regions), until all is written or the socket is full. A short count
     * leaves the entries' positions exactly where the socket stopped.
     */
    private boolean writev(IwarpQp qp, IwarpStream s) throws IOException {
        NativeTcp.Vec v = s.txVec;
        long txBase = s.txSeg.address();
        while (true) {
            v.clear();
            long want = 0;
            for (int i = s.iovHead; i < s.iovTail; i++) {
                ByteBuffer b = s.iov[i];
                RegionViews rv = s.iovViews[i];
                long at = rv == null ? txBase : rv.mr().address;
                if (!v.add(at + b.position(), b.remaining(), rv == null ? null : rv.mr().segment)) {
                    break;
                }
                want += b.remaining();
            }
            long n = v.writev(s.fd); // keeps the regions alive during the call (NativeTcp)
            vectorWrites++;
            if (n < 0) {
                if (n == -NativeTcp.EINTR) {
                    continue;
                }
                if (n == -NativeTcp.EAGAIN) {
                    counters.increment(Counter.SEND_ERR); // the socket is full: the rest waits for the next cycle
                    return false;
                }
                return writeFailed(qp, s);
            }
            boolean all = n == want; // else a short count: the socket is full
            s.txTaken += n;
            for (int i = s.iovHead; n > 0; i++) {
                ByteBuffer b = s.iov[i];
                int k = (int) Math.min(n, b.remaining());
                b.position(b.position() + k);
                n -= k;
            }
            if (s.taken()) {
                return true;
            }
            if (!all) {
                counters.increment(Counter.SEND_ERR); // the rest waits for the next cycle
                return false;
            }
            // the vector was full (entries or regions to keep): the next call takes the rest
        }
    }

    /** The peer is gone (a write failed): nothing more will leave. */
    private boolean writeFailed(IwarpQp qp, IwarpStream s) {
        s.dropTx();
        s.rxStopped = true;
        closeStream(s);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        }
        return false;
    }

    /** @return a region a pending payload lies in that was deregistered or whose memory was freed, or null */
    private static Mr goneRegion(IwarpStream s) {
        for (int i = s.iovHead; i < s.iovTail; i++) {
            RegionViews rv = s.iovViews[i];
            if (rv != null) {
                Mr mr = rv.mr();
                if (mr.isClosed() || !mr.segment.scope().isAlive()) {
                    return mr;
                }
            }
        }
        return null;
    }

    /**
     * A payload still to be written lies in a region that was deregistered or freed since its FPDU
     * was queued: its bytes are not read. The FPDU's header may be on the wire already, so the
     * stream cannot go on: what is pending is dropped and the connection closed; the WQE that named
     * the region completes with LOC_PROT_ERR, those before it (their last bytes may be among the
     * dropped ones) with WR_FLUSH_ERR, and the QP enters ERROR, which flushes the rest. A READ
     * Response from such a region (the peer's READ) just ends the stream.
     */
    private void regionGone(IwarpQp qp, IwarpStream s, Mr mr) {
        counters.increment(Counter.ENGINE_ERRORS);
        s.dropTx();
        s.rxStopped = true;
        closeStream(s);
        long owner = -1;
        long end = Math.min(qp.reqIndex + 1, qp.sqProducerAcquire()); // the WQE being sent counts
        for (long i = qp.sqConsumer; i < end && owner < 0; i++) {
            Wqe w = qp.sq[(int) (i & qp.sqMask)];
            for (int k = 0; k < w.numSge && !w.inline && w.started; k++) {
                Mr m = w.sgeMr[k];
                if (m != null && (m == mr || mr == null && (m.isClosed() || !m.segment.scope().isAlive()))
                        && !w.isReadOrAtomic()) {
                    owner = i;
                    break;
                }
            }
        }
        while (owner >= 0 && qp.sqConsumer <= owner) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            WcStatus st = qp.sqConsumer == owner ? WcStatus.LOC_PROT_ERR : WcStatus.WR_FLUSH_ERR;
            if (w.isReadOrAtomic() && w.started && !w.responded) {
                qp.rdAtomicInFlight--;
            }
            w.started = false;
            qp.sqConsumerRelease(qp.sqConsumer + 1); // acquire partner: Qp.postSend's full check
            qp.sendCq.push(w.wrId, st, WcOpcode.of(w.opcode), 0, 0, 0, qp.qpn, 0);
        }
        qp.reqIndex = Math.max(qp.reqIndex, qp.sqConsumer);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        }
    }

    /** Seals the FPDU built whole at {@code f} (pad, CRC or zeros) and queues it for the socket. */
    private void queue(IwarpStream s, int f, int ulen) {
        int at = Fpdu.crcOffset(ulen);
        Fpdu.writeTrailer(s.txSeg, f, ulen, Fpdu.CRC_OFF);
        if (s.crc) {
            Crc32c.write(s.txSeg, f + at, crc32c.compute(s.tx, f, at));
        }
        int end = f + at + Fpdu.CRC_LENGTH;
        s.stage(f, end);
        s.txEnd = end;
    }

    /**
     * Zero copy: queues the FPDU whose header ({@code hdr} bytes of DDP/RDMAP header after the length
     * field) is built at {@code f} with its {@code len}-byte payload taken from region {@code mr} at
     * {@code va}: three gather entries, the staged length field and header, a view of the region, the
     * staged pad and CRC (computed here over the header and the region's bytes). The payload's bytes
     * leave the region only into the socket.
     *
     * @return false if the region has no view to spare (the caller copies the payload instead)
     */
    private boolean queueFromRegion(IwarpStream s, int f, int hdr, Mr mr, long va, int len) {
        RegionViews views = RegionViews.of(mr);
        ByteBuffer view = views == null ? null : views.acquire(va, len);
        if (view == null) {
            return false;
        }
        int ulen = hdr + len;
        Fpdu.writeHeader(s.txSeg, f, ulen);
        int t = f + Fpdu.ULPDU_OFFSET + hdr; // the trailer is staged right after the header
        int pad = Fpdu.padLength(ulen);
        for (int i = 0; i < pad; i++) {
            s.txSeg.set(ValueLayout.JAVA_BYTE, t + i, (byte) 0);
        }
        int crc = Fpdu.CRC_OFF;
        if (s.crc) {
            txCrc.reset();
            s.tx.limit(t).position(f);
            txCrc.update(s.tx);
            int p = view.position();
            txCrc.update(view);
            view.position(p);
            txCrc.update(ZEROS, 0, pad);
            crc = (int) txCrc.getValue();
        }
        Crc32c.write(s.txSeg, t + pad, crc);
        s.stage(f, t);
        s.stageView(view, views);
        int end = t + pad + Fpdu.CRC_LENGTH;
        s.stage(t, end);
        s.txEnd = end;
        zeroCopySent++;
        return true;
    }

    /**
     * Queues an FPDU of a send WQE whose header is built at {@code f}: its payload (bytes {@code off..off+len}
     * of the message) from the region when it is large and lies in one SGE, else copied behind the header.
     */
    private void queueWqe(IwarpStream s, Wqe w, int f, int hdr, long off, int len) {
        if (zeroCopy && len >= ZC_TX_MIN && !w.inline) {
            long skip = off;
            for (int i = 0; i < w.numSge; i++) {
                int sl = w.sgeLength[i];
                if (skip < sl) {
                    if (skip + len <= sl && queueFromRegion(s, f, hdr, w.sgeMr[i], w.sgeAddr[i] + skip, len)) {
                        return;
                    }
                    break;
                }
                skip -= sl;
            }
        }
        Sgl.gather(w, off, len, s.txSeg, f + Fpdu.ULPDU_OFFSET + hdr);
        Fpdu.writeHeader(s.txSeg, f, hdr + len);
        queue(s, f, hdr + len);
    }

    /** One FPDU of the IRQ head: a READ Response segment (tagged, to the sink STag/TO) or an Atomic Response. */
    private void response(IwarpStream s) {
        int i = s.irqHead;
        MemorySegment tx = s.txSeg;
        int f = s.txEnd;
        int ddp = f + Fpdu.ULPDU_OFFSET;
        int ulen;
        boolean done;
        boolean zc = false;
        if (s.irqAtomic[i]) {
            Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.ATOMIC_RESPONSE), 0, Rdmap.QN_ATOMIC_RESPONSE,
                    s.txMsnAtomicResp++, 0);
            AtomicResponse.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH, s.irqRequestId[i], s.irqOrig[i]);
            ulen = Ddp.UNTAGGED_HEADER_LENGTH + AtomicResponse.LENGTH;
            done = true;
        } else {
            long sent = s.irqSent[i];
            int max = s.txMulpdu - Ddp.TAGGED_HEADER_LENGTH;
            int len = (int) Math.min(max, s.irqLength[i] - sent);
            done = sent + len == s.irqLength[i];
            Ddp.writeTagged(tx, ddp, done, Rdmap.controlByte(Rdmap.READ_RESPONSE), s.irqSinkStag[i],
                    s.irqSinkTo[i] + sent);
            Mr mr = s.irqMr[i];
            zc = zeroCopy && len >= ZC_TX_MIN
                    && queueFromRegion(s, f, Ddp.TAGGED_HEADER_LENGTH, mr, s.irqVa[i] + sent, len);
            if (len > 0 && !zc) {
                MemorySegment.copy(mr.segment, s.irqVa[i] - mr.address + sent, tx, ddp + Ddp.TAGGED_HEADER_LENGTH, len);
            }
            s.irqSent[i] = sent + len;
            ulen = Ddp.TAGGED_HEADER_LENGTH + len;
        }
        if (!zc) {
            Fpdu.writeHeader(tx, f, ulen);
            queue(s, f, ulen);
        }
        counters.increment(Counter.SENT_PKTS);
        if (done) {
            s.irqMr[i] = null;
            s.irqHead = (i + 1) % s.irqCapacity;
            s.irqCount--;
        }
    }

    /** One FPDU of the send queue's current WQE. @return false when there is nothing (more) to send now */
    private boolean request(IwarpQp qp, IwarpStream s, boolean draining) {
        if (s.sqHalted) {
            return false;
        }
        long producer = qp.sqProducerAcquire(); // release partner: Qp.postSend
        if (qp.reqIndex == producer) {
            return false;
        }
        Wqe w = qp.sq[(int) (qp.reqIndex & qp.sqMask)];
        if (!w.started) {
            if (draining) {
                return false;
            }
            if (!w.validated) {
                Sgl.validate(engine.context.keys, qp, w);
            }
            if (w.localError >= 0) { // completed in order by retire, which then moves the QP to ERROR
                w.started = true;
                s.sqHalted = true;
                qp.reqIndex++;
                return false;
            }
            if ((w.flags & SendFlags.FENCE) != 0 && qp.rdAtomicInFlight > 0) {
                return false;
            }
            if (w.isReadOrAtomic() && qp.rdAtomicInFlight >= Math.max(1, qp.maxRdAtomic)) {
                return false; // ORD: as many READ/atomics outstanding as the peer's IRD allows
            }
            w.started = true;
            w.responded = false;
            qp.reqOffset = 0;
            if (w.isReadOrAtomic()) {
                qp.rdAtomicInFlight++;
            }
        }
        MemorySegment tx = s.txSeg;
        int f = s.txEnd;
        int ddp = f + Fpdu.ULPDU_OFFSET;
        int ulen;
        boolean last;
        boolean queued = false;
        long off = qp.reqOffset;
        switch (w.opcode) {
            case RDMA_READ -> {
                Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.READ_REQUEST), 0, Rdmap.QN_READ_REQUEST,
                        s.txMsnRead++, 0);
                ReadRequest.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH, sinkStag(w), sinkTo(w), (int) w.length,
                        w.rkey, w.remoteAddr);
                ulen = Ddp.UNTAGGED_HEADER_LENGTH + ReadRequest.LENGTH;
                last = true;
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                boolean cas = w.opcode == WrOpcode.ATOMIC_CMP_AND_SWP;
                Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST), 0, Rdmap.QN_READ_REQUEST,
                        s.txMsnRead++, 0);
                w.npkts = ++s.atomicRequestId; // matched against the response's Original Request Identifier
                AtomicRequest.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH,
                        cas ? AtomicRequest.COMPARE_SWAP : AtomicRequest.FETCH_ADD, w.npkts, w.rkey, w.remoteAddr,
                        cas ? w.swap : w.compareAdd, cas ? -1L : 0, cas ? w.compareAdd : 0, cas ? -1L : 0);
                ulen = Ddp.UNTAGGED_HEADER_LENGTH + AtomicRequest.LENGTH;
                last = true;
            }
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> {
                int len = (int) Math.min(s.txMulpdu - Ddp.TAGGED_HEADER_LENGTH, w.length - off);
                last = off + len == w.length;
                Ddp.writeTagged(tx, ddp, last, Rdmap.controlByte(Rdmap.WRITE), w.rkey, w.remoteAddr + off);
                queueWqe(s, w, f, Ddp.TAGGED_HEADER_LENGTH, off, len);
                queued = true;
                ulen = Ddp.TAGGED_HEADER_LENGTH + len;
                qp.reqOffset = off + len;
                if (last && w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM) {
                    // the immediate value follows as a message of its own (docs/iwarp-design.md)
                    counters.increment(Counter.SENT_PKTS);
                    f = s.txEnd;
                    queued = false;
                    ddp = f + Fpdu.ULPDU_OFFSET;
                    boolean se = (w.flags & SendFlags.SOLICITED) != 0;
                    Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(se ? Rdmap.IMMEDIATE_DATA_SE
                            : Rdmap.IMMEDIATE_DATA), 0, Rdmap.QN_SEND, s.txMsnSend++, 0);
                    ImmediateData.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH,
                            (IMM_AFTER_WRITE << 32) | Integer.toUnsignedLong(w.imm));
                    ulen = Ddp.UNTAGGED_HEADER_LENGTH + ImmediateData.LENGTH;
                }
            }
            default -> { // SEND, SEND_WITH_IMM, SEND_WITH_INV: untagged, QN 0, one MSN per message, MO = byte offset
                boolean imm = w.opcode == WrOpcode.SEND_WITH_IMM;
                boolean inv = w.opcode == WrOpcode.SEND_WITH_INV;
                int hdr = Ddp.UNTAGGED_HEADER_LENGTH + (imm ? ImmediateData.LENGTH : 0);
                int len = (int) Math.min(s.txMulpdu - hdr, w.length - off);
                last = off + len == w.length;
                boolean se = last && (w.flags & SendFlags.SOLICITED) != 0;
                int op = imm ? (se ? Rdmap.IMMEDIATE_DATA_SE : Rdmap.IMMEDIATE_DATA)
                        : inv ? (se ? Rdmap.SEND_SE_INVALIDATE : Rdmap.SEND_INVALIDATE)
                        : (se ? Rdmap.SEND_SE : Rdmap.SEND);
                // the Invalidate STag rides in every segment's RsvdULP word (RFC 5040 §4.4)
                Ddp.writeUntagged(tx, ddp, last, Rdmap.controlByte(op), inv ? w.imm : 0, Rdmap.QN_SEND, s.txMsnSend,
                        (int) off);
                if (imm) {
                    ImmediateData.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH, Integer.toUnsignedLong(w.imm));
                }
                queueWqe(s, w, f, hdr, off, len);
                queued = true;
                ulen = hdr + len;
                qp.reqOffset = off + len;
                if (last) {
                    s.txMsnSend++;
                }
            }
        }
        if (!queued) {
            Fpdu.writeHeader(tx, f, ulen);
            queue(s, f, ulen);
        }
        counters.increment(Counter.SENT_PKTS);
        if (last) {
            s.sqTxEnd[(int) (qp.reqIndex & qp.sqMask)] = s.txQueued; // it completes once TCP took this far
            qp.reqIndex++;
            qp.reqOffset = 0;
        }
        return true;
    }

    /** @return true once the socket has taken every FPDU of the queued WQE at send-queue index {@code i} */
    private static boolean sent(IwarpQp qp, IwarpStream s, long i) {
        return s.txTaken - s.sqTxEnd[(int) (i & qp.sqMask)] >= 0;
    }

    /**
     * Retires send-queue WQEs in posting order: a SEND/WRITE once all its FPDUs have left for TCP,
     * a READ/atomic once its response is in, a failed one with its error (the QP then enters ERROR).
     */
    private void retire(IwarpQp qp, IwarpStream s) {
        if (s.closed) {
            return; // queued bytes were dropped (the peer or a region is gone): the flush completes what is left
        }
        while (qp.sqConsumer != qp.reqIndex) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            WcStatus st = WcStatus.SUCCESS;
            if (w.localError >= 0) {
                st = WcStatus.of(w.localError);
            } else if (w.isReadOrAtomic() ? !w.responded : !sent(qp, s, qp.sqConsumer)) {
                return; // no response yet, or its last FPDU is still in our buffer rather than TCP's
            }
            if (w.isReadOrAtomic() && w.started && !w.responded) {
                qp.rdAtomicInFlight--;
            }
            boolean complete = w.signaled || st != WcStatus.SUCCESS;
            long wrId = w.wrId;
            WrOpcode op = w.opcode;
            int len = op.isAtomic() ? 8 : (int) w.length;
            if (st == WcStatus.SUCCESS && (op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM
                    || op == WrOpcode.SEND_WITH_INV)) {
                counters.increment(Counter.RDMA_SENDS);
            }
            w.started = false;
            qp.sqConsumerRelease(qp.sqConsumer + 1); // acquire partner: Qp.postSend's full check
            if (complete) {
                qp.sendCq.push(wrId, st, WcOpcode.of(op), len, 0, 0, qp.qpn, 0);
            }
            if (st != WcStatus.SUCCESS) {
                qp.reqIndex = Math.max(qp.reqIndex, qp.sqConsumer);
                if (qp.state != QpState.ERROR) {
                    engine.enterError(qp);
                }
                return;
            }
        }
    }
}

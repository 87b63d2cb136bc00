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
import io.jrdma.engine.core.RegionViews;
import io.jrdma.engine.core.Transport;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.Terminate;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The iWARP transport of a soft-iWARP context, shaped like Linux siw: the {@link IwarpTransmitter}
 * ({@code siw_qp_tx.c}: send-queue WQEs and READ/atomic responses → DDP segments → FPDUs sized to
 * the MSS) and the {@link IwarpReceiver} ({@code siw_qp_rx.c}: FPDU reassembly from the TCP byte
 * stream, CRC, DDP/RDMAP checks, tagged and untagged placement, TERMINATE); the connection setup
 * (MPA, {@code siw_cm.c}) is the {@link IwarpConnectionManager}'s. This class is what the core's
 * {@link Engine} sees ({@link Transport}): the streams of its QPs, their attach and release, and the
 * duty-cycle hooks. The core's queues, key table, CQs and flush logic are reused; only the wire
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
    static final ValueLayout.OfLong NATIVE_LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    static final VarHandle ATOMIC_LONG = ValueLayout.JAVA_LONG.varHandle();
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
    /** High 32 bits of the immediate data of the message that carries a WRITE_WITH_IMM's immediate value. */
    static final long IMM_AFTER_WRITE = 1;

    static final byte[] ZEROS = new byte[4];
    /**
     * {@code -Djrdma.iwarp.errorLingerMs=N}, read when a context opens (default 2000): how long a QP in ERROR keeps
     * its stream open to write what is still queued (a TERMINATE last) to a peer that does not read it, before the
     * stream is closed with it unsent.
     */
    static final String ERROR_LINGER_PROPERTY = "jrdma.iwarp.errorLingerMs";

    final Engine engine;
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
    /** the two halves of the transport, siw's rx and tx */
    final IwarpReceiver rx;
    final IwarpTransmitter tx;
    /** FPDUs sent with their payload straight from the region, and received straight into it (tests look) */
    long zeroCopySent;
    long zeroCopyPlaced;
    /** {@value #ERROR_LINGER_PROPERTY} in nanoseconds (tests may shorten it) */
    long errorLingerNanos = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(Long.getLong(ERROR_LINGER_PROPERTY, 2000));
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
        this.rx = new IwarpReceiver(this);
        this.tx = new IwarpTransmitter(this);
        this.rx.tx = this.tx;
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

    /** The MPA listeners' counters: handshakes accepted, timed out, dropped. */
    @Override
    public void addCounters(java.util.Map<String, Long> m) {
        cm.handshakeStats().addTo(m);
    }

    /** rdma_cm over iWARP is MPA: the same manager. */
    @Override
    public io.jrdma.verbs.ConnectionManager rdmaCm() {
        return cm;
    }

    @Override
    public io.jrdma.verbs.DeviceAttr deviceAttr(io.jrdma.verbs.DeviceAttr base) {
        // as siw: fast registration, LOCAL_INV and SEND_WITH_INV; no memory windows (siw has none: maxMw 0)
        base = io.jrdma.engine.core.LocalOps.withMemoryManagement(io.jrdma.engine.core.Srq.declare(base),
                io.jrdma.verbs.DeviceCap.MEM_MGT_EXTENSIONS, 0); // and SRQs, taken through Qp.takeRecv
        return base;
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

    /** Closes the stream; what it still had to write is dropped and its region views go back to their pools. */
    void closeStream(IwarpStream s) {
        if (s.closed) {
            return;
        }
        s.closed = true;
        s.rxStopped = true;
        s.dropTx();
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
     * closes the connection of a QP that leaves RTS with an error; a peer that does not take it within
     * {@link #errorLingerNanos} has the stream closed with it unsent.
     */
    @Override
    public int serviceError(Qp q) {
        IwarpQp qp = (IwarpQp) q;
        IwarpStream s = qp.iw;
        if (s == null || s.closed) {
            return 0;
        }
        s.rxStopped = true;
        tx.flushTx(qp, s);
        if (!s.txPending() || !s.channel.isOpen()) {
            closeStream(s);
            return 1;
        }
        long now = System.nanoTime();
        if (!s.lingering) {
            s.lingering = true;
            s.closeBy = now + errorLingerNanos;
        } else if (now - s.closeBy >= 0) {
            closeStream(s); // what is still queued is dropped
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
                    work += rx.read(qp, s);
                } catch (RuntimeException e) {
                    // e.g. a region whose memory was freed under it: the stream is terminated, the engine goes on
                    counters.increment(Counter.ENGINE_ERRORS);
                    tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_LOCAL_CATASTROPHIC,
                            Terminate.RDMAP_UNSPECIFIED, -1, false);
                }
            }
        }
        return work;
    }

    // ------------------------------------------------------------------ transmitter (siw_qp_tx.c)

    /** Sends READ/atomic responses, then send-queue WQEs, as FPDUs; completes what TCP has taken. */
    @Override
    public int transmit(Qp q, int budget) {
        return tx.transmit(q, budget);
    }
}

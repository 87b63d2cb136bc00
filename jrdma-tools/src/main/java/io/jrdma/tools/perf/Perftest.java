package io.jrdma.tools.perf;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.pingpong.HostPage;
import io.jrdma.tools.oob.CFormat;
import io.jrdma.tools.oob.Roce;
import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Grh;
import io.jrdma.verbs.IdleStrategy;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * One side of a perftest 4.5 benchmark, the peer being perftest's {@code ib_<test>} or another
 * jrdma: the same TCP exchange, in the same order, as perftest's {@code src/<test>.c} main
 * (without rdma_cm), the same buffers, addresses and QP attributes as {@code perftest_resources.c}
 * ({@code ctx_init}, {@code ctx_connect}, {@code ctx_set_send_reg_wqes}, {@code ctx_set_recv_wqes}),
 * the same loops ({@code run_iter_bw}, {@code run_iter_bw_server}, {@code run_iter_lat},
 * {@code run_iter_lat_write}, {@code run_iter_lat_send}) and the same output.
 *
 * <p>The exchanges per test (one QP per handshake unless "each"; C = client, S = server):
 * <pre>
 * all:        version, page size, cache line, MTU
 * write/read/atomic_bw: keys each, [RTR/RTS], keys each (printed), keys;
 *             C runs every size, then keys, its report (5 values), keys, "done";
 *             S: keys, the client's report, keys, "done"
 * send_bw:    keys each, [RTR/RTS], keys, keys each (printed); per size: [S posts receives]
 *             keys, run, (-a: keys); then keys, "done"
 * write_lat:  keys, keys each, [RTR/RTS], keys each (printed), keys; every size is run; no close
 * read/atomic_lat: as write_lat, then S: keys, "done" at once; C: runs, then keys, "done"
 * send_lat:   keys each, [RTR/RTS], keys, keys each (printed); per size: receives, keys, run;
 *             then keys, "done"
 * </pre>
 *
 * <p>With {@code -R} ({@code work_rdma_cm}, over iWARP) the same exchanges run as SENDs on an
 * rdma_cm comm QP ({@link RdmaCmExchange}) with binary keys; after the MTU come a sync of zeroed
 * keys, the test's QPs connected through the connection manager on the same port (no RTR/RTS by
 * hand, no GID check), and another sync; there is no "done"; the data connections close before
 * the comm connection. ib_send_bw adds its iWARP credits: the receiver writes its receive count
 * into the sender's credit word every rx_depth/3 receives, the sender keeps below rx_depth SENDs
 * beyond it ({@code ctx_alloc_credit}, {@code run_iter_bw}, {@code run_iter_bw_server}).
 */
final class Perftest {
    /**
     * The page size this side sends in the exchange and aligns its buffer to at least: perftest's {@code cycle_buffer},
     * {@code sysconf(_SC_PAGESIZE)}, the host's ({@link HostPage}; 4096 where it cannot be told, off Linux). Tests
     * may set another before a run.
     */
    static volatile int page = hostPage();
    static final int CACHE_LINE = 64;
    private static final int POLL_BATCH = 16;

    private final PerftestOptions o;
    /** {@code --pause}, a latency test: a PAUSE per turn of the busy waits */
    private final boolean pause;
    /** turns of a wait that paused (tests read it) */
    long pausedTurns;
    private final PerfTest test;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean server;
    private final Watchdog dog;
    private final IntConsumer listening;
    private final long timeoutNanos;
    private final boolean noPeak;
    private final boolean warnPort;

    // negotiated with the peer
    private int cycleBuffer = page;
    private int cacheLine = CACHE_LINE;
    private Mtu mtu;
    private int gidIndex;

    // resources
    private DeviceContext ctx;
    private Arena arena;
    private ProtectionDomain pd;
    private CompletionQueue sendCq;
    private CompletionQueue recvCq;
    /** {@code -e}: the completion channel of both CQs, which a wait sleeps on; null when polling */
    private io.jrdma.verbs.CompletionChannel events;
    private QueuePair[] qps;
    /** {@code --use-srq}: the one SRQ every QP takes its receives from, else null */
    private io.jrdma.verbs.SharedReceiveQueue srq;
    private MemoryRegion mr;
    private MemorySegment buf;
    private long base;
    private long buffUnit;
    private long sendQpBuffSize;
    private PerftestWire.Dest[] my;
    private PerftestWire.Dest[] rem;
    private PerftestExchange ex;
    private SideChannel.Pump pump;
    // -R
    private final boolean rdmaCm;
    /** The InfiniBand CM's REJ reason when nobody listens on the service ID (rdma_cm's status 8). */
    private static final int REJ_INVALID_SERVICE_ID = 8;
    private ConnectionManager.Listener cmListener;
    private InetSocketAddress serverAddress;
    private ConnectionManager.Connection[] dataConns;
    /** send_bw over iWARP: {@code ctx_alloc_credit}'s ctrl_buf (n counts to write, then the n credit words). */
    private boolean credits;
    private MemorySegment ctrlBuf;
    private MemoryRegion creditMr;
    private int creditCnt;
    private final SendWorkRequest creditWr = new SendWorkRequest(1);
    /** Credit WRITEs posted (a test's way to see that the receiver gave credits). */
    long creditWrites;
    /** Requests of {@code --perform_warm_up} posted and completed (a test's way to see the warm-up). */
    long warmUpRequests;
    /** {@code -e}: the CQ events a wait woke to, and the sleeps on the channel (both for tests) */
    long cqEvents;
    long eventWaits;

    private final WorkCompletion[] wcs = new WorkCompletion[POLL_BATCH];
    private final WorkCompletion[] creditWcs = new WorkCompletion[POLL_BATCH];
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final RecvWorkRequest rwr = new RecvWorkRequest(1);
    private PerftestReport.Bw lastBw;
    /** {@code -D}: the run's clock (START, SAMPLE, STOP_SAMPLE, END), else null */
    private final PerftestDuration clock;
    /** Turns between two reads of {@link #clock} while polls find completions (an idle poll reads it at once). */
    private static final int CLOCK_TURNS = 16;
    /** the peer's PSNs carry jrdma's tag: both ends are jrdma */
    private boolean jrdmaPeer;

    /** @param warnPort warn on stderr when UDP 4791 was taken (not in --loopback, where both ends are jrdma) */
    Perftest(PerftestOptions o, PrintStream out, PrintStream err, Watchdog dog, IntConsumer listening,
             boolean warnPort) {
        this.warnPort = warnPort;
        this.o = o;
        this.pause = o.pause() && !o.bw();
        this.test = o.test();
        this.out = out;
        this.err = err;
        this.server = o.server();
        this.dog = dog;
        this.listening = listening;
        this.timeoutNanos = o.timeoutSec() * 1_000_000_000L;
        this.noPeak = o.noPeakFor(server);
        this.rdmaCm = o.rdmaCm();
        this.clock = o.duration() ? new PerftestDuration(o.durationSec(), o.marginSec()) : null;
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
            creditWcs[i] = new WorkCompletion();
        }
    }

    /**
     * @return the threading mode of this side: only the sides with nothing to do but serve RDMA run DEDICATED, and
     *         every side with {@code -e}, whose thread sleeps while the engine's runs the transport
     */
    static ThreadingMode mode(PerfTest t, boolean server, boolean events) {
        boolean passive = server && t != PerfTest.SEND_BW && t != PerfTest.SEND_LAT && t != PerfTest.WRITE_LAT;
        return passive || events ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER;
    }

    /** @return the host's page size for {@link #page}, or 4096 where it cannot be told */
    private static int hostPage() {
        try {
            return HostPage.size();
        } catch (RuntimeException e) {
            return 4096; // not Linux: the exchange's value is the larger of the two ends', as perftest's
        }
    }

    void run() {
        if (o.duration() && o.bw() && !o.noPeak()) {
            out.println(PerftestOptions.NO_PEAK_WARNING); // perftest's parser prints it, before anything else
        }
        if ((!rdmaCm || (o.device() != null && !PerfCommand.isIwarp(o.device())))
                && io.jrdma.tools.oob.EngineWarmup.warms(o.device())) {
            // jrdma's RoCE engine: the first packets of the peer must meet compiled code (EngineWarmup)
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        InetAddress peer = null;
        if (!server) {
            try {
                peer = InetAddress.getByName(o.host());
            } catch (UnknownHostException e) {
                throw new SideChannelException("cannot resolve host '" + o.host() + "'");
            }
        }
        Device dev;
        SideChannel early = null;
        if (server && given != null) {
            // jrdma perf --server: the connection was accepted (and its version read) by its gate
            early = given;
            dev = o.device() == null ? deviceReached(early.localAddress()) : device(o, null);
        } else if (server && !rdmaCm && o.device() == null) {
            // as rdma_cm: a server without -d answers on the device the client reached, so it takes
            // the client's connection first, then opens the device that owns the address it came to
            SideChannel.Listener l = openListener();
            try {
                out.println(PerftestReport.BANNER); // after listening: a taken port fails at once
                out.flush();
                listening.accept(l.port());
                early = l.accept(o.waitClient() ? timeoutNanos : 0, timeoutNanos, SideChannel.IDLE);
            } finally {
                closeListener(l);
            }
            dev = deviceReached(early.localAddress());
        } else {
            dev = device(o, peer);
        }
        try {
            run(dev, early, peer);
        } finally {
            if (early != null && ex == null) {
                early.close();
            }
        }
    }

    /** A long-running server's client, accepted by {@link PerftestGate} ({@code --server}); null otherwise. */
    private SideChannel given;
    /** How long {@link #given}'s exchange (parameters and QP keys) may take, from its first byte answered. */
    private long exchangeNanos;
    /** key messages received so far (the exchange's deadline ends with the first one of each QP) */
    private int keysIn;

    /**
     * Serves the client of {@code sc} (accepted by a long-running server's gate, its version already read ahead):
     * its exchange, up to the QPs' keys and their move to RTS, must be over within {@code exchangeNanos}.
     */
    Perftest servingOn(SideChannel sc, long exchangeNanos) {
        this.given = sc;
        this.exchangeNanos = exchangeNanos;
        return this;
    }

    private SideChannel.Listener openListener() {
        return SideChannel.listen(new InetSocketAddress(o.port()));
    }

    private void closeListener(SideChannel.Listener l) {
        l.close();
    }

    /** The RoCE device owning {@code local} (the address a client reached), else the server's default one. */
    static Device deviceReached(InetAddress local) {
        try {
            return Rdma.resolve(local, Transport.ROCE_V2).device();
        } catch (RdmaException e) {
            return DeviceChoice.forServer(Transport.ROCE_V2);
        }
    }

    /** @param peer the client's server address, resolved once by {@link #run()}; null on a server */
    private void run(Device dev, SideChannel early, InetAddress peer) {
        ctx = dev.open(DeviceOptions.defaults().withThreadingMode(mode(test, server, o.events()))
                .withIdleStrategy(IdleStrategy.BACKOFF).with(SoftRoceOptions.defaults().withAnyIpv4Id(true)));
        try {
            String warning = warnPort && !rdmaCm ? Roce.portWarning(ctx) : null;
            if (warning != null) {
                err.println("jrdma perf: " + warning);
            }
            pump = Roce.pump(ctx);
            // -i: the port whose GID table -x indexes, whose active MTU the exchange starts from, the QPs' and AHs'
            PortAttr port = DeviceChoice.port(ctx, o.ibPort(), PerfCommand.BadValue::new);
            if (!"Ethernet".equals(port.linkLayer())) {
                throw new PerfFailure("Link layer on port " + o.ibPort() + " is " + port.linkLayer() + ", not Ethernet");
            }
            List<Gid> table = port.gids();
            if (o.gidIndex() >= 0 && (o.gidIndex() >= table.size() || Roce.isZero(table.get(o.gidIndex()).raw()))) {
                throw new PerfCommand.BadValue("option -x/--gid-index: GID index " + o.gidIndex()
                        + " does not exist on " + (o.ibPort() != 1 ? "port " + o.ibPort() + " of " : "") + dev.name()
                        + " (its GID table has " + table.size() + " entries: see 'jrdma devices')");
            }
            if (o.outReads() > PerftestOptions.DEVICE_MAX_READS) {
                out.println(PerftestReport.RESULT_LINE);
                err.println(" Number of outstanding reads is above max = " + PerftestOptions.DEVICE_MAX_READS);
                err.println(" Changing to that max value");
            }
            if (server && early != null) {
                ex = new PerftestExchange.Tcp(early, pump);
            } else if (server) {
                // listen before the banner: a taken port fails at once, not after "Waiting for client"
                if (rdmaCm) {
                    // rdma_server_connect on 0.0.0.0 (AF_INET); the listener stays until the data QPs are accepted,
                    // so that it listens before this side's sync (a client connects its QPs right after it)
                    try {
                        cmListener = ctx.rdmaCm().listen(new InetSocketAddress("0.0.0.0", o.port()));
                    } catch (RdmaException e) {
                        throw new PerfFailure("couldn't listen to port " + o.port() + " (" + e.getMessage() + ")"
                                + (e.errno() == RdmaException.Errno.EADDRINUSE ? ": " + SideChannel.PORT_BUSY : ""));
                    }
                    io.jrdma.tools.Progress.step("waiting for a client on TCP port " + cmListener.address().getPort()
                            + " (rdma_cm)");
                    out.println(PerftestReport.BANNER);
                    out.flush();
                    listening.accept(cmListener.address().getPort());
                    ex = RdmaCmExchange.accept(ctx, cmListener, o.waitClient() ? timeoutNanos : 0, pump, timeoutNanos);
                } else {
                    SideChannel.Listener l = openListener();
                    try {
                        out.println(PerftestReport.BANNER);
                        out.flush();
                        listening.accept(l.port());
                        ex = new PerftestExchange.Tcp(l.accept(o.waitClient() ? timeoutNanos : 0, timeoutNanos, pump),
                                pump);
                    } finally {
                        closeListener(l);
                    }
                }
            } else if (rdmaCm) {
                serverAddress = new InetSocketAddress(peer, o.port());
                ex = RdmaCmExchange.connect(ctx, serverAddress, pump, timeoutNanos);
            } else {
                ex = new PerftestExchange.Tcp(SideChannel.connect(new InetSocketAddress(peer, o.port()), timeoutNanos),
                        pump);
            }
            if (ex instanceof PerftestExchange.Tcp t) {
                dog.watchPeer(t::peerClosed); // a peer that stops or dies is noticed at once, not after --timeout
            }
            try {
                if (given != null) {
                    given.deadline(exchangeNanos);
                }
                exchangeParameters(port);
                runSizes = sizes();
                createResources();
                if (rdmaCm) {
                    connectThroughRdmaCm();
                }
                setUpConnection(table);
                out.println(PerftestReport.header(new PerftestReport.Info(test, o.cmpSwap(), dev.name(), o.numQps(),
                        o.disablePcir(), !server, o.txDepth(), o.rxDepth(), o.cqMod(), mtu.bytes(), gidIndex,
                        o.inlineSize(), o.outstandingReads(), rdmaCm, srq != null, o.events()))
                        .replace(" Connection type : RC\t", " Connection type : " + o.connection() + "\t"));
                out.flush();
                switch (test) {
                    case WRITE_BW, READ_BW, ATOMIC_BW -> rdmaBw();
                    case SEND_BW -> sendBw();
                    case WRITE_LAT -> writeLat();
                    case READ_LAT, ATOMIC_LAT -> readLat();
                    case SEND_LAT -> sendLat();
                }
                out.flush();
            } finally {
                disconnectData();
                ex.close();
            }
        } finally {
            if (cmListener != null) {
                cmListener.close();
            }
            tearDown();
        }
    }

    /**
     * @return the device of {@code -d}, else the client's route's or the server's first non-lo one
     *         (of the iWARP devices with {@code -R}); {@code -R} needs an iWARP device, and an iWARP
     *         device needs {@code -R} (or {@code --jrdma-cm}, which does not come here)
     */
    static Device device(PerftestOptions o, InetAddress peer) {
        Device dev;
        if (o.device() != null) {
            dev = DeviceChoice.named(o.device());
        } else if (o.rdmaCm()) {
            try {
                dev = o.server() ? DeviceChoice.forServer(Transport.IWARP) : Rdma.resolve(peer, Transport.IWARP).device();
            } catch (RdmaException e) {
                throw new PerfCommand.BadValue(PerftestOptions.RDMA_CM_NEEDS_IWARP + " (no iWARP device"
                        + (o.server() ? "" : " routes to " + peer.getHostAddress()) + ": " + e.getMessage() + ")");
            }
        } else {
            dev = o.server() ? DeviceChoice.forServer(Transport.ROCE_V2) : DeviceChoice.toward(peer);
        }
        if (o.rdmaCm() && dev.transport() != Transport.IWARP && dev.transport() != Transport.ROCE_V2) {
            throw new PerfCommand.BadValue(PerftestOptions.RDMA_CM_NEEDS_IWARP + " (" + dev.name() + " is neither)");
        }
        if (!o.rdmaCm() && dev.transport() == Transport.IWARP) {
            throw new PerfCommand.BadValue(dev.name() + " is an iWARP device: perftest's TCP exchange cannot connect"
                    + " iWARP QPs; use -R (its exchange over rdma_cm, as perftest on siw) or --jrdma-cm");
        }
        return dev;
    }

    // ------------------------------------------------------------------ the exchange

    /** {@code ctx_xchg_data}: the client writes, then reads the server's message; the server reads, then writes. */
    private byte[] xchg(byte[] mine, String what) {
        if (server) {
            byte[] theirs = ex.read(mine.length, what);
            ex.write(mine, what);
            return theirs;
        }
        ex.write(mine, what);
        return ex.read(mine.length, what);
    }

    /** {@code exchange_versions}, {@code check_version_compatibility}, {@code check_sys_data}, {@code check_mtu}. */
    private void exchangeParameters(PortAttr port) {
        dog.reset("exchanging parameters with the peer");
        PerftestWire.checkVersion(xchg(PerftestWire.version(PerftestWire.VERSION), "the perftest version"));
        cycleBuffer = Math.max(cycleBuffer, PerftestWire.int32(xchg(PerftestWire.int32(cycleBuffer), "the page size")));
        cacheLine = Math.max(cacheLine, PerftestWire.int32(xchg(PerftestWire.int32(CACHE_LINE), "the cache line size")));
        if (cycleBuffer <= 0 || cycleBuffer > (1 << 30) || Integer.bitCount(cycleBuffer) != 1 || cacheLine <= 0
                || cacheLine > cycleBuffer || Integer.bitCount(cacheLine) != 1) {
            throw new SideChannelException("the peer sent a page size of " + cycleBuffer + " and a cache line of "
                    + cacheLine + " bytes: not perftest's system data");
        }
        Mtu active = port.activeMtu();
        Mtu cur = active;
        if (o.mtu() > 0) {
            cur = Mtu.ofBytes(o.mtu());
            if (cur.code() > active.code()) {
                out.println("Requested mtu is higher than active mtu ");
                out.println("Changing to active mtu - " + active.code());
                cur = active;
            }
        }
        int remote = PerftestWire.mtuCode(xchg(PerftestWire.mtu(cur.code()), "the MTU"));
        mtu = remote != 0 && cur.code() > remote ? Mtu.ofCode(remote) : cur;
    }

    /** One {@code ctx_hand_shake} of QP {@code i}'s keys. */
    private void handshake(int i) {
        rem[i] = ex.decodeKeys(xchg(ex.encodeKeys(my[i]), "QP " + i + "'s keys"));
        if (given != null && ++keysIn == o.numQps()) {
            given.deadline(0); // every QP's keys came: a real client, the test's own waits (--timeout) from here on
        }
    }

    private void handshakeEach() {
        for (int i = 0; i < o.numQps(); i++) {
            handshake(i);
        }
    }

    /** {@code ctx_close_connection}: a last handshake, then (TCP) both write "done" and close. */
    private void closeConnection() {
        dog.reset("closing the connection");
        handshake(0);
        ex.finish();
    }

    /** {@code ctx_check_gid_compatibility}. */
    private void checkGids() {
        if (Roce.isIpv4Mapped(my[0].gid()) != Roce.isIpv4Mapped(rem[0].gid())) {
            throw new PerfFailure("Found Incompatibility issue with GID types: this side's GID is "
                    + (Roce.isIpv4Mapped(my[0].gid()) ? "IPv4" : "IPv6") + ", the peer's is not. Please Try to use a"
                    + " different IP version (-x, --ipv6).");
        }
    }

    /** {@code xchg_bw_reports}: five exchanges of 8 bytes. */
    private PerftestReport.Bw xchgBwReports(PerftestReport.Bw mine) {
        dog.reset("exchanging the bandwidth report");
        long size = PerftestWire.int64(xchg(PerftestWire.int64(mine.size()), "the report's size"));
        long iters = PerftestWire.int64(xchg(PerftestWire.int64(mine.iters()), "the report's iterations"));
        double peak = PerftestWire.float64(xchg(PerftestWire.float64(mine.peak()), "the report's peak"));
        double avg = PerftestWire.float64(xchg(PerftestWire.float64(mine.avg()), "the report's average"));
        double rate = PerftestWire.float64(xchg(PerftestWire.float64(mine.msgRate()), "the report's message rate"));
        return new PerftestReport.Bw(size, iters, peak, avg, rate);
    }

    // ------------------------------------------------------------------ resources

    private static long inc(long size, long line) {
        return size > line ? (size % line == 0 ? size : line * (size / line + 1)) : line;
    }

    /** {@code alloc_ctx} and {@code ctx_init}: one buffer, send halves then receive halves, one MR, the QPs in INIT. */
    private void createResources() {
        int n = o.numQps();
        // UD: each receive takes the 40-byte GRH in front of the message (perftest's UD_ADDITION)
        buffUnit = Math.max(o.bufferSize(), cycleBuffer) + (ud() ? Grh.LENGTH : 0);
        sendQpBuffSize = inc(buffUnit, cacheLine);
        long buffSize = sendQpBuffSize * 2 * n;
        arena = Arena.ofShared();
        buf = ctx.allocateBuffer(buffSize, cycleBuffer, arena); // reachable by peers (shared memory on shm0)
        if (test != PerfTest.WRITE_LAT) {
            Pattern.fill(buf, new SecureRandom().nextLong()); // perftest: rand() bytes; write_lat: zeros
        }
        base = buf.address();
        pd = ctx.allocPd();
        int access = Access.LOCAL_WRITE | switch (test.opcode) {
            case RDMA_WRITE -> Access.REMOTE_WRITE;
            // on iWARP a READ's sink must be remotely writable: perftest adds REMOTE_WRITE there
            case RDMA_READ -> Access.REMOTE_READ | (rdmaCm ? Access.REMOTE_WRITE : 0);
            case ATOMIC_FETCH_AND_ADD, ATOMIC_CMP_AND_SWP -> Access.REMOTE_ATOMIC;
            default -> 0;
        };
        mr = pd.register(buf, access);
        if (o.events()) {
            // ctx_init's use_event: the CQs on a completion channel, each armed once before its first poll; a wait then
            // re-arms the CQ whose event it took before it polls again (emptyPoll)
            events = ctx.createCompletionChannel();
        }
        sendCq = ctx.createCq(o.txDepth() * n + 16, events);
        recvCq = test.isSend() ? ctx.createCq(o.rxDepth() * n + 16, events) : sendCq;
        if (events != null) {
            sendCq.requestNotify(false);
            if (recvCq != sendCq) {
                recvCq.requestNotify(false);
            }
        }
        int qpAccess = switch (test.opcode) {
            case RDMA_WRITE -> Access.REMOTE_WRITE;
            case RDMA_READ -> Access.REMOTE_READ;
            case SEND -> Access.REMOTE_WRITE | Access.LOCAL_WRITE;
            default -> Access.REMOTE_ATOMIC;
        };
        if (rdmaCm) {
            // what rdma_create_qp gives an iWARP QP (iw_cm: remote READ and WRITE), with atomics where the test needs them
            qpAccess |= Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
        }
        qps = new QueuePair[n];
        // -i's port; with -R the port of the comm connection's address, as rdma_create_qp puts a QP on its
        // rdma_cm_id's port (rdma_cm on RoCE moves it there in any case, INIT to INIT, as librdmacm)
        int qpPort = !rdmaCm ? o.ibPort() : DeviceChoice.portFor(ctx, ((RdmaCmExchange) ex).peerAddress);
        if (o.useSrq() && test.isSend()) {
            // perftest --use-srq: one SRQ holding every QP's rx-depth receives
            srq = pd.createSrq(io.jrdma.verbs.SrqInitAttr.of(o.rxDepth() * n, 1));
        }
        for (int i = 0; i < n; i++) {
            qps[i] = pd.createQp(new QpInitAttr(o.connection(), sendCq, recvCq, o.txDepth(),
                    test.isSend() ? o.rxDepth() : 1, 1, 1, o.inlineSize(), false, srq));
            if (ud()) {
                qps[i].modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(qpPort).qkey(UD_QKEY));
            } else {
                qps[i].modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(qpPort).accessFlags(qpAccess));
            }
        }
    }

    /** perftest's DEF_QKEY: the Q_Key of its UD QPs and sends. */
    static final int UD_QKEY = 0x1111_1111;

    private boolean ud() {
        return o.connection() == QpType.UD;
    }

    /** The message sizes this run measures ({@link #sizes}), once the MTU is agreed. */
    private List<Long> runSizes;

    /**
     * The message sizes to run: perftest's, but for UD at most the MTU (perftest's check_mtu, right after
     * the MTU exchange: a larger size becomes the MTU, with its two lines on stderr; {@code -a} stops there).
     */
    private List<Long> sizes() {
        if (!ud()) {
            return o.sizes();
        }
        long max = mtu.bytes();
        if (!o.all()) {
            if (o.sizes().getFirst() > max) {
                err.println(" Max msg size in UD is MTU " + max);
                err.println(" Changing to this MTU");
                err.flush();
                return List.of(max);
            }
            return o.sizes();
        }
        return o.sizes().stream().filter(s -> s <= max).toList();
    }

    /** @return the bytes a receive takes for a message of {@code size}: UD adds the GRH */
    private int recvLength(long size) {
        return (int) size + (ud() ? Grh.LENGTH : 0);
    }

    /** {@code set_up_connection}: GID index, then LID, QPN, a random PSN, rkey and buffer address per QP. */
    private void setUpConnection(List<Gid> table) {
        gidIndex = o.gidIndex() >= 0 ? o.gidIndex() : Roce.bestGidIndex(table, o.ipv6());
        byte[] gid = table.get(gidIndex).raw();
        SecureRandom rnd = new SecureRandom();
        int n = o.numQps();
        my = new PerftestWire.Dest[n];
        rem = new PerftestWire.Dest[n];
        int lid = rdmaCm ? 0 : Roce.lid(ctx);
        for (int i = 0; i < n; i++) {
            long vaddr = base + (n + i) * buffUnit;
            int psn = rdmaCm ? rnd.nextInt(1 << 24) : jrdmaPsn(qps[i].qpn(), mr.rkey(), vaddr);
            my[i] = new PerftestWire.Dest(lid, o.outstandingReads(), qps[i].qpn(), psn, mr.rkey(), vaddr, gid, 0);
        }
        if (rdmaCm && ctx.device().transport() == Transport.IWARP && test == PerfTest.SEND_BW) {
            allocCredit();
        }
    }

    /** "jrdma" and the version of the sides' joint behaviour: 2 since send_bw warms up too. */
    static final long JRDMA_TAG = 0x6A72646D61L ^ 2L << 40;

    /**
     * The PSN a jrdma side advertises in perftest's exchange: not an independent random number but a
     * 24-bit keyed hash of the QPN, rkey and buffer address it sends with it (all three random),
     * so the PSN still looks random to a perftest peer while a jrdma peer, recomputing it from the
     * same fields, knows it talks to jrdma (a perftest peer matches by chance once in 2^24). Both
     * ends being jrdma then use what jrdma's connection manager negotiates: ACKs only where
     * something waits for one, and a warm-up before the measured bandwidth iterations. The key names
     * the version of what two jrdma sides do together ({@link #JRDMA_TAG}): sides of two versions
     * take each other for perftest and do none of it, rather than disagree on it (a send_bw side
     * that warms up against one that does not would wait for it).
     */
    static int jrdmaPsn(int qpn, int rkey, long vaddr) {
        long h = (qpn & 0xFFFFFFL) * 0x9E3779B97F4A7C15L ^ (rkey & 0xFFFFFFFFL) * 0xC2B2AE3D27D4EB4FL ^ vaddr
                ^ JRDMA_TAG;
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        h *= 0xC4CEB9FE1A85EC53L;
        h ^= h >>> 33;
        return (int) (h & 0xFFFFFF);
    }

    /** @return true when every remote QP's PSN is the jrdma tag of its fields (see {@link #jrdmaPsn}) */
    private boolean peerIsJrdma() {
        if (rdmaCm || rem == null) {
            return false;
        }
        for (PerftestWire.Dest r : rem) {
            if (r == null || r.psn() != jrdmaPsn(r.qpn(), r.rkey(), r.vaddr())) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code ctx_alloc_credit} (send_bw over iWARP, where a SEND that finds no receive is fatal):
     * {@code uint32 ctrl_buf[2 n]}, the second half the credit words the peer writes, remotely
     * writable; every key message advertises QP i's credit word instead of the data buffer.
     * perftest decides this from its own device (iWARP), so a perftest peer on siw always does it.
     */
    private void allocCredit() {
        int n = o.numQps();
        credits = true;
        creditCnt = Math.max(1, o.rxDepth() / 3); // perftest divides by rx_depth/3: 0 (rx_depth 2) would crash it
        ctrlBuf = arena.allocate(8L * n, 64);
        creditMr = pd.register(ctrlBuf, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        for (int i = 0; i < n; i++) {
            my[i] = new PerftestWire.Dest(my[i].lid(), my[i].outReads(), my[i].qpn(), my[i].psn(), creditMr.rkey(),
                    ctrlBuf.address() + 4L * (n + i), my[i].gid(), my[i].srqn());
        }
    }

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    /** @return the credit word of QP {@code q}: the peer's receive count, a little-endian u32 (perftest's host order) */
    private int credit(int q) {
        int v = (int) INT.getAcquire(ctrlBuf, 4L * (o.numQps() + q));
        return LITTLE ? v : Integer.reverseBytes(v);
    }

    private void resetCredits() {
        if (credits) {
            for (int q = 0; q < o.numQps(); q++) {
                INT.setRelease(ctrlBuf, 4L * (o.numQps() + q), 0);
            }
        }
    }

    /**
     * {@code create_rdma_cm_connection}: a sync of zeroed keys, the data QPs' connections on the same
     * port (IRD/ORD the outstanding reads for READ and atomics, else 0/0), another sync. The server
     * already listens (since the comm QP's connection); a client retries a refused connect, as a
     * perftest server only listens after its sync.
     */
    private void connectThroughRdmaCm() {
        byte[] zeros = new byte[PerftestWire.DEST_SIZE];
        dog.reset("synchronizing with the peer before connecting the QPs through rdma_cm");
        xchg(zeros, "the sync before the rdma_cm connection");
        int rd = test.opcode.isReadOrAtomic() ? o.outstandingReads() : 0;
        ConnParam param = new ConnParam(null, rd, rd, 7, 7, mtu);
        int n = o.numQps();
        dataConns = new ConnectionManager.Connection[n];
        for (int i = 0; i < n; i++) {
            dataConns[i] = server ? acceptQp(i, param) : connectQp(i, param);
        }
        if (server) {
            cmListener.close(); // rdma_cm_server_connection destroys its listener once all QPs are in
            cmListener = null;
        }
        dog.reset("synchronizing with the peer after connecting the QPs through rdma_cm");
        xchg(zeros, "the sync after the rdma_cm connection");
    }

    private ConnectionManager.Connection acceptQp(int i, ConnParam param) {
        dog.reset("waiting for the client to connect QP " + i + " through rdma_cm on port "
                + cmListener.address().getPort());
        ConnectionManager.ConnectRequest req;
        while ((req = RdmaCmExchange.nextRequest(cmListener)) == null) {
            dog.check();
        }
        try {
            return req.accept(qps[i], param, Duration.ofNanos(timeoutNanos));
        } catch (RdmaException e) {
            throw new PerfFailure("Failed to accept RDMA CM connection of QP " + i + " from " + req.peerAddress() + ": "
                    + e.getMessage());
        }
    }

    private ConnectionManager.Connection connectQp(int i, ConnParam param) {
        ConnectionManager cm = ctx.rdmaCm();
        long start = System.nanoTime();
        int refused = 0;
        while (true) {
            try {
                return cm.connect(qps[i], serverAddress, param, Duration.ofNanos(timeoutNanos));
            } catch (ConnectionRejectedException e) {
                // over the InfiniBand CM "nobody listens there (yet)" is a REJ with reason 8: refused, as TCP's RST
                if (e.reason() != REJ_INVALID_SERVICE_ID) {
                    throw new PerfFailure("Failed to connect QP " + i + " through RDMA CM: the server at "
                            + serverAddress + " rejected it (" + e.getMessage() + ")");
                }
                refused++;
                if (System.nanoTime() - start > timeoutNanos) {
                    throw new PerfFailure("Failed to connect QP " + i + " through RDMA CM to " + serverAddress
                            + ": refused " + refused + " times in " + timeoutNanos / 1_000_000_000L + " s (the server"
                            + " listens for its QPs after the sync; is it still running?)");
                }
                LockSupport.parkNanos(20_000_000L);
            } catch (RdmaException e) {
                if (e.errno() != RdmaException.Errno.ECONNREFUSED) {
                    throw new PerfFailure("Failed to connect QP " + i + " through RDMA CM to " + serverAddress + ": "
                            + e.getMessage());
                }
                refused++;
                if (System.nanoTime() - start > timeoutNanos) {
                    throw new PerfFailure("Failed to connect QP " + i + " through RDMA CM to " + serverAddress
                            + ": refused " + refused + " times in " + timeoutNanos / 1_000_000_000L + " s (the server"
                            + " listens for its QPs after the sync; is it still running?)");
                }
                LockSupport.parkNanos(20_000_000L);
            }
        }
    }

    /** {@code rdma_cm_disconnect_nodes}: each data connection closes (a FIN), before the comm connection does. */
    private void disconnectData() {
        if (dataConns != null) {
            for (ConnectionManager.Connection c : dataConns) {
                close(c);
            }
        }
    }

    /** {@code ctx_connect}: RTR and RTS (perftest leaves a bandwidth server in RTR; RTS does no harm). */
    private void connect() {
        jrdmaPeer = peerIsJrdma();
        if (o.connection() != QpType.RC) {
            connectUnreliable();
            return;
        }
        for (int i = 0; i < o.numQps(); i++) {
            PerftestWire.Dest r = rem[i];
            if (jrdmaPeer && ctx instanceof io.jrdma.engine.core.Context c) {
                c.peerAcksUnrequested(qps[i], true); // as jrdma's connection manager negotiates it
            }
            try {
                qps[i].modify(new QpAttr().state(QpState.RTR)
                        .av(new AddressVector(Gid.of(r.gid()), gidIndex, 0xFF, 0, Roce.udpPort(r.lid())))
                        .pathMtu(mtu).destQpn(r.qpn()).rqPsn(r.psn()).maxDestRdAtomic(my[i].outReads())
                        .minRnrTimer(12));
            } catch (RdmaException e) {
                throw new PerfFailure("Failed to modify QP " + CFormat.hashHex(qps[i].qpn() & 0xffffffffL, 6) + " to RTR: " + e.getMessage());
            }
            try {
                qps[i].modify(new QpAttr().state(QpState.RTS).sqPsn(my[i].psn()).timeout(o.qpTimeout()).retryCnt(7)
                        .rnrRetry(7).maxRdAtomic(Math.clamp(r.outReads(), 1, 255)));
            } catch (RdmaException e) {
                throw new PerfFailure("Failed to modify QP to RTS: " + e.getMessage());
            }
        }
    }

    /**
     * {@code ctx_connect} for UC (RTR with the path, MTU and PSNs; RTS with the send PSN) and UD (RTR and RTS
     * with the send PSN only, then an address handle per remote QP from its GID, hop limit 0xFF as perftest).
     */
    private void connectUnreliable() {
        ahs = ud() ? new AddressHandle[o.numQps()] : null;
        for (int i = 0; i < o.numQps(); i++) {
            PerftestWire.Dest r = rem[i];
            AddressVector av = new AddressVector(Gid.of(r.gid()), gidIndex, 0xFF, 0, Roce.udpPort(r.lid()));
            try {
                qps[i].modify(ud() ? new QpAttr().state(QpState.RTR) : new QpAttr().state(QpState.RTR).av(av)
                        .pathMtu(mtu).destQpn(r.qpn()).rqPsn(r.psn()));
            } catch (RdmaException e) {
                throw new PerfFailure("Failed to modify QP " + CFormat.hashHex(qps[i].qpn() & 0xffffffffL, 6)
                        + " to RTR: " + e.getMessage());
            }
            try {
                qps[i].modify(new QpAttr().state(QpState.RTS).sqPsn(my[i].psn()));
            } catch (RdmaException e) {
                throw new PerfFailure("Failed to modify QP to RTS: " + e.getMessage());
            }
            if (ud()) {
                try {
                    AhAttr a = AhAttr.of(av); // from the QPs' port, as perftest's ah_attr.port_num = ib_port
                    ahs[i] = pd.createAh(new AhAttr(a.dgid(), a.sgidIndex(), a.hopLimit(), a.trafficClass(),
                            a.flowLabel(), a.sl(), o.ibPort(), a.udpPort()));
                } catch (RdmaException e) {
                    throw new PerfFailure("Failed to create AH for UD: " + e.getMessage());
                }
            }
        }
    }

    /** UD: the address handle of each remote QP, else null */
    private AddressHandle[] ahs;

    /** UD: addresses a SEND being built in {@link #wr} to remote QP {@code q}. */
    private void address(int q) {
        if (ahs != null) {
            wr.ud(ahs[q], rem[q].qpn(), UD_QKEY);
        }
    }

    private void printLocal() {
        for (int i = 0; i < o.numQps(); i++) {
            out.println(PerftestReport.address("local", my[i], test, rdmaCm));
        }
    }

    private void handshakeEachPrinted() {
        for (int i = 0; i < o.numQps(); i++) {
            handshake(i);
            out.println(PerftestReport.address("remote", rem[i], test, rdmaCm));
        }
        out.flush();
    }

    /** The exchanges up to the data phase, per test (see the class comment). */
    private void connectPhase() {
        dog.reset("exchanging QP keys with the peer");
        boolean lat = !test.isBw();
        boolean send = test.isSend();
        if (lat && !send) {
            handshake(0);
        }
        handshakeEach();
        if (!rdmaCm) { // with rdma_cm the QPs are connected already, and GIDs are not compared
            checkGids();
            connect();
        }
        if (send) {
            handshake(0);
        }
        printLocal();
        handshakeEachPrinted();
        if (!send) {
            handshake(0); // "an additional handshake is required after moving qp to RTR"
        }
    }

    private void columnsBw() {
        out.println(PerftestReport.RESULT_LINE);
        out.println(PerftestReport.bwColumns(o.gbits()));
        out.flush();
    }

    private void columnsLat() {
        out.println(PerftestReport.RESULT_LINE);
        out.println(clock != null ? PerftestReport.RESULT_FMT_LAT_DUR : PerftestReport.RESULT_FMT_LAT);
        out.flush();
    }

    // ------------------------------------------------------------------ the flows

    /** write_bw, read_bw, atomic_bw. */
    private void rdmaBw() {
        connectPhase();
        columnsBw();
        if (server) {
            WindowCpu w = WindowCpu.start(); // the passive server while the client runs (its warm-up too)
            handshake(0);
            if (w != null) {
                w.print("server", err);
            }
            PerftestReport.Bw r = xchgBwReports(new PerftestReport.Bw(0, 0, 0, 0, 0));
            out.println(r.row(o.gbits()));
            closeConnection();
            out.println(PerftestReport.RESULT_LINE);
            return;
        }
        for (long size : runSizes) {
            io.jrdma.tools.Progress.step("measuring " + test.cliName() + " at " + size + " B");
            if (jrdmaPeer && !o.all() && clock == null) { // -D: its first margin is the warm-up
                // between jrdma peers only (a perftest server would not mind, but its wire stays as it was):
                // warm-up runs, not measured, so the JIT has compiled the loop before the measured one: runs of
                // about 64 MiB for at least WARMUP_NANOS (C2 compiles the post and poll path only after some
                // thousands of calls and some time on a busy host; 1,000 x 64 KiB alone was ~2 ms on shm0), and then
                // until the JIT's compiler threads are quiet, at most WARMUP_MAX_NANOS in all: a compiler thread
                // still at work during the measured run took the other core of a 2-core host and 10-15% of the
                // bandwidth with it (docs/shm-performance.md, "Bandwidth against the copy")
                long chunk = Math.min(o.iters(), warmupIterations(size));
                long start = System.nanoTime();
                JitQuiet jit = new JitQuiet(start);
                long now;
                long runs = 0;
                do {
                    runIterBw(size, chunk);
                    runs++;
                    now = System.nanoTime();
                } while (jit.warming(now));
                // then whole runs of the measured length, while they last at most FULL_WARMUP_MAX_NANOS: the measured
                // run's own loop can still be compiled anew (an OSR compilation at another loop of runIterBw, ~80 ms
                // of C2 in a 0.8 s run at 1 MiB) unless a run as long as it came first; one more when the JIT ran in it
                double nanosPerIter = (double) (now - start) / (runs * chunk);
                if (o.iters() > chunk && o.iters() * nanosPerIter <= FULL_WARMUP_MAX_NANOS) {
                    for (int i = 0; i < 2; i++) {
                        long c0 = JitQuiet.compilerNanos();
                        long t0 = System.nanoTime();
                        runIterBw(size, o.iters());
                        long t1 = System.nanoTime();
                        long c1 = JitQuiet.compilerNanos();
                        if (c0 < 0 || c1 < 0 || c1 - c0 < (t1 - t0) / 50) { // under 2% of a core
                            break;
                        }
                    }
                }
                warmupNanos = System.nanoTime() - start;
            }
            if (o.warmUp()) {
                performWarmUp(size);
            }
            WindowCpu w = WindowCpu.start();
            runIterBw(size, o.iters());
            if (w != null) {
                w.print("client warmup_ms=" + warmupNanos / 1_000_000, err);
            }
            linger(); // the peer's last message gets its ACK before the first, slow, print of a cold JVM
            out.println(lastBw.row(o.gbits()));
            out.flush();
        }
        out.println(PerftestReport.RESULT_LINE);
        out.flush();
        linger();
        dog.reset("sending the report to the server");
        handshake(0);
        xchgBwReports(lastBw);
        closeConnection();
    }

    private void sendBw() {
        connectPhase();
        columnsBw();
        for (long size : runSizes) {
            io.jrdma.tools.Progress.step("measuring " + test.cliName() + " at " + size + " B");
            // the latency tests' condition (jrdma peers, no -D, no -a), on RC: over UC and UD a message that finds no
            // receive is dropped, and a server counting a warm-up run's messages would wait for it
            boolean warm = warmsUpLat() && o.connection() == QpType.RC;
            if (warm) {
                warmUpSendBw(size);
            }
            // with -a each size counts iWARP's credits from 0 again (there is no warm-up where there are credits: they
            // are -R's, and a jrdma peer is not recognised over rdma_cm)
            sendBwRun(size, o.iters(), "before " + size + " B", o.all());
            out.println(lastBw.row(o.gbits()));
            out.flush();
            if (o.all()) {
                linger();
                dog.reset("synchronizing with the peer after " + size + " B");
                handshake(0);
            }
        }
        out.println(PerftestReport.RESULT_LINE);
        out.flush();
        linger();
        closeConnection();
    }

    /**
     * One send_bw run of {@code iters} messages per QP, as both sides run it: the server posts its receives, a
     * handshake, each side's loop, and the wait for the last message's answer.
     *
     * @param resetCredits iWARP's receive credits count from 0 again (each size of -a, each warm-up run)
     */
    private void sendBwRun(long size, long iters, String what, boolean resetCredits) {
        if (server) {
            postRecvs(size);
        }
        dog.reset("synchronizing with the peer " + what);
        handshake(0);
        if (resetCredits) {
            resetCredits();
        }
        if (server) {
            runIterBwServer(size, iters);
        } else {
            runIterBw(size, iters);
        }
        linger(); // the peer's last message gets its ACK before the first, slow, print of a cold JVM
    }

    /**
     * send_bw's warm-up between jrdma peers: runs of the test's own loop on both sides, not measured, of
     * {@link #warmupIterations} messages and never fewer than the receives posted ahead (a run consumes every one
     * it posts; the two sides take the larger of their two lengths, as their rx_depth may differ), for at least {@link #WARMUP_NANOS} and then while the JIT's compiler threads work, at most
     * {@link #WARMUP_MAX_NANOS}; the sides decide each run together, as the latency tests' rounds ({@link #warmUpLat}).
     * Without it perftest's default 1,000 messages ran in the interpreter and beside the compiler threads: 0.003-0.012 M
     * messages/s of 8 B on shm0, 5.6-5.8 M/s after it (docs/tools.md, "jrdma perf").
     */
    private void warmUpSendBw(long size) {
        // the sides agree on the length first: each side's rx_depth may differ (perftest does not ask them to match)
        long mine = Math.max(warmupIterations(size), o.rxDepth());
        dog.reset("agreeing on the warm-up's length with the peer");
        long chunk = Math.max(mine, PerftestWire.int64(xchg(PerftestWire.int64(mine), "the warm-up's length")));
        bwWarmUpRuns += warmUpRuns(true, () -> sendBwRun(size, chunk, "before a warm-up run at " + size + " B", false));
    }

    /** send_bw's warm-up runs done so far (a test's way to see them). */
    long bwWarmUpRuns;

    private void writeLat() {
        connectPhase();
        columnsLat();
        long[] tposted = latSamples();
        for (long size : runSizes) {
            io.jrdma.tools.Progress.step("measuring " + test.cliName() + " at " + size + " B");
            if (warmsUpLat()) {
                warmUpLat(true, n -> runIterLatWrite(size, tposted, n));
            }
            runIterLatWrite(size, tposted, o.iters());
            linger(); // the peer's last message gets its ACK before the first, slow, print of a cold JVM
            out.println(latRow(size, tposted, 2));
            out.flush();
        }
        out.println(PerftestReport.RESULT_LINE);
        out.flush();
        linger(); // ib_write_lat ends here without a last exchange: the peer's last write still needs its ACK
    }

    private void readLat() {
        connectPhase();
        if (server) {
            closeConnection();
            out.println(PerftestReport.RESULT_LINE);
            return;
        }
        columnsLat();
        long[] tposted = latSamples();
        for (long size : runSizes) {
            io.jrdma.tools.Progress.step("measuring " + test.cliName() + " at " + size + " B");
            if (warmsUpLat()) {
                warmUpLat(false, n -> runIterLat(size, tposted, n)); // the server is passive: the client alone
            }
            runIterLat(size, tposted, o.iters());
            linger(); // the peer's last message gets its ACK before the first, slow, print of a cold JVM
            out.println(latRow(size, tposted, 1));
            out.flush();
        }
        closeConnection();
        out.println(PerftestReport.RESULT_LINE);
    }

    private void sendLat() {
        connectPhase();
        columnsLat();
        long[] tposted = latSamples();
        for (long size : runSizes) {
            io.jrdma.tools.Progress.step("measuring " + test.cliName() + " at " + size + " B");
            if (warmsUpLat()) {
                warmUpLat(true, n -> sendLatRun(size, tposted, n, "a warm-up round at " + size + " B"));
            }
            sendLatRun(size, tposted, o.iters(), size + " B");
            linger(); // the peer's last message gets its ACK before the first, slow, print of a cold JVM
            out.println(latRow(size, tposted, 2));
            out.flush();
        }
        out.println(PerftestReport.RESULT_LINE);
        out.flush();
        linger();
        closeConnection();
    }

    /** send_lat's run of {@code iters}: its receives posted, a handshake with the peer ({@code what} for the watchdog), the loop. */
    private void sendLatRun(long size, long[] tposted, long iters, String what) {
        // no more receives than the run has messages (a warm-up round is shorter than a deep -r): a run leaves none
        // posted, and the next one's fit in the queue (with rx_depth each, a 4096-message round left the rest posted,
        // and the next round's posts failed with ENOMEM past a queue of rx_depth)
        int posted = clock != null ? o.rxDepth() : (int) Math.min(o.rxDepth(), iters);
        postRecvs(size, posted);
        dog.reset("synchronizing with the peer before " + what);
        handshake(0);
        runIterLatSend(size, tposted, iters, posted);
    }

    /** Iterations of one warm-up round of a latency test (a multiple of 256: see {@link #warmUpLat}). */
    static final int LAT_WARMUP_ROUND = 4096;
    /** Warm-up rounds done before the measured latency runs so far (a test's way to see them). */
    long latWarmUpRounds;

    /** @return the samples' array: one per measured iteration, and room for a warm-up round */
    private long[] latSamples() {
        return new long[clock != null ? 1 : (int) Math.max(o.iters(), warmsUpLat() ? LAT_WARMUP_ROUND : 0)];
    }

    /**
     * A latency test warms up between jrdma peers only (a perftest peer would not take part; its C needs none), and
     * not with -D (its first margin is the warm-up) or -a.
     */
    private boolean warmsUpLat() {
        return jrdmaPeer && clock == null && !o.all();
    }

    /**
     * Rounds of the test's own loop ({@link #LAT_WARMUP_ROUND} iterations each, not measured) before the measured
     * run, for at least {@link #WARMUP_NANOS} and then while the JIT's compiler threads work, at most
     * {@link #WARMUP_MAX_NANOS}: without them the first tens of thousands of round trips ran in the interpreter and
     * under a compiler thread, and a run of 400,000 8 B WRITEs on shm0 had its average and 99th percentile at 2-10x
     * its median (docs/tools.md, "jrdma perf"). When both sides run the loop (write_lat, send_lat) they decide each
     * round together: each says whether it wants another, over the side channel, and both go on while one does.
     * Each round numbers its messages from 1 as a run does, and ends on a multiple of 256, so the last byte a
     * write_lat round leaves in the peer's buffer is 0, which the next run's first wait (for 1) does not take.
     *
     * @param both the peer runs the loop too (else it is passive: the client decides alone)
     */
    private void warmUpLat(boolean both, java.util.function.LongConsumer round) {
        latWarmUpRounds += warmUpRuns(both, () -> round.accept(LAT_WARMUP_ROUND));
    }

    /**
     * Warm-up runs of {@code run}, not measured, while {@link JitQuiet#warming} says so; when {@code both} sides run
     * them, they decide each run together over the side channel (each says whether it wants another; both go on
     * while one does). Sets {@link #warmupNanos}. @return the runs done
     */
    private int warmUpRuns(boolean both, Runnable run) {
        long start = System.nanoTime();
        JitQuiet jit = new JitQuiet(start);
        int runs = 0;
        while (true) {
            run.run();
            runs++;
            boolean more = jit.warming(System.nanoTime());
            if (both) {
                dog.reset("deciding on another warm-up run with the peer");
                more |= PerftestWire.int64(xchg(PerftestWire.int64(more ? 1 : 0), "the warm-up's next run")) != 0;
            }
            if (!more) {
                break;
            }
        }
        warmupNanos = System.nanoTime() - start;
        return runs;
    }

    // ------------------------------------------------------------------ bandwidth loops

    /** The local send buffer of QP {@code q}. */
    private long sendBuf(int q) {
        return base + q * buffUnit;
    }

    /** {@code run_iter_bw} with {@code ctx_set_send_reg_wqes}'s requests, one post at a time. */
    /**
     * Iterations of one warm-up run before a measured bandwidth run between jrdma peers: about 64 MiB, 1,000 to
     * 20,000; such runs repeat for at least {@link #WARMUP_NANOS}.
     */
    static final long WARMUP_NANOS = 300_000_000L;
    /** The longest warm-up: after WARMUP_NANOS it goes on only while the JIT's compiler threads work ({@link JitQuiet}). */
    static final long WARMUP_MAX_NANOS = 2_000_000_000L;
    /** The longest measured run that is first run whole as a warm-up (once, or twice when the JIT ran in the first). */
    static final long FULL_WARMUP_MAX_NANOS = 2_000_000_000L;
    /** The last warm-up's length (-Djrdma.perf.cpu=true prints it). */
    private long warmupNanos;

    /**
     * After a counted run: waits for the signaled requests still outstanding (at most one per QP, its last), so that
     * the next run (the warm-up's many, then the measured one) starts with empty send queues and its counts are its
     * own; perftest stops at the counts, and a run after one left its last completion behind counted that one as its
     * own, until a QP's count said room where the queue had none and a loop that no longer polled spun.
     */
    private void drainSignaled(long[] sigPosted, long[] sigDone) {
        for (int q = 0; q < sigPosted.length; q++) {
            while (sigDone[q] < sigPosted[q]) {
                reapSend(wcs, sigDone, 1, false);
            }
        }
    }

    /**
     * One poll of the send CQ into {@code into}: each completion adds {@code delta} to its QP's entry (its wr_id) of
     * {@code perQp}; an empty poll is an idle turn of the wait. A completion with an error fails the run, named as a
     * credit WRITE's when {@code credit}.
     */
    private void reapSend(WorkCompletion[] into, long[] perQp, int delta, boolean credit) {
        int ne = sendCq.poll(into);
        if (ne == 0) {
            emptyPoll();
            return;
        }
        dog.progress();
        for (int i = 0; i < ne; i++) {
            WorkCompletion wc = into[i];
            if (wc.status() != WcStatus.SUCCESS) {
                throw new PerfFailure(credit ? "Poll send CQ error status=" + wc.status().ordinal() + " qp " + wc.wrId()
                        + " (a credit WRITE: " + failure(wc) + "); " + CREDIT_REFUSED_BY_PEER
                        : "Completion with error at client: " + failure(wc));
            }
            perQp[(int) wc.wrId()] += delta;
        }
    }

    static long warmupIterations(long size) {
        return Math.clamp((64L << 20) / Math.max(1, size), 1000, 20_000);
    }

    private void runIterBw(long size, long iters) {
        int n = o.numQps();
        boolean dur = clock != null;
        long tot = dur ? Long.MAX_VALUE : iters * n; // -D: no count ends the run, its clock does
        int cqMod = o.cqMod();
        long[] tposted = new long[noPeak ? 1 : (int) tot];
        long[] tcompleted = new long[noPeak ? 1 : (int) tot];
        long[] scnt = new long[n];
        long[] ccnt = new long[n];
        // the signaled requests posted and completed per QP: perftest's counts (ccnt += cq_mod per completion) run
        // ahead of the queue at a QP's last, short batch, so these, not they, say when the queue is empty again
        long[] sigPosted = new long[n];
        long[] sigDone = new long[n];
        long[] loc = new long[n];
        long[] remAddr = new long[n];
        boolean cycle = size <= cycleBuffer / 2;
        long step = inc(size, cacheLine);
        long slots = cycleBuffer / step;
        WrOpcode op = resetBwRequest();
        int inlineFlag = bwInlineFlag(op, size);
        for (int q = 0; q < n; q++) {
            loc[q] = sendBuf(q);
            remAddr[q] = rem[q].vaddr();
        }
        long totscnt = 0;
        long totccnt = 0;
        int lkey = mr.lkey();
        dog.reset("running " + test.cliName() + " with " + size + " B messages");
        if (noPeak && !dur) {
            tposted[0] = System.nanoTime();
        }
        int creditStalled = -1; // the QP the credits held back last, while they do
        long sampled = 0; // -D: completions (times cq_mod) seen while the clock samples
        int turns = 0;
        boolean idle = false;
        if (dur) {
            clock.start(System.nanoTime());
        }
        boolean full = false; // the last post found the send queue full: poll, whatever the counts say
        try {
            while (dur || totscnt < tot || totccnt < tot) {
                if (dur && (idle || ++turns % CLOCK_TURNS == 0) && clock.advance(System.nanoTime())
                        == PerftestDuration.END) {
                    break; // perftest leaves what is still outstanding at END as it is
                }
                idle = false;
                for (int q = 0; q < n; q++) {
                    while ((dur || scnt[q] < iters) && scnt[q] - ccnt[q] + 1 <= o.txDepth()) {
                        // iWARP send_bw: no more than rx_depth - 1 SENDs beyond the receives the peer reported
                        if (credits && Integer.compareUnsigned((int) (scnt[q] + 1) - credit(q), o.rxDepth()) >= 0) {
                            creditStalled = q;
                            break;
                        }
                        creditStalled = -1;
                        long k = scnt[q];
                        boolean signaled = cqMod == 1 || k % cqMod == cqMod - 1 || (!dur && k == iters - 1);
                        wr.wrId(q).flags((signaled ? SendFlags.SIGNALED : 0) | inlineFlag)
                                .sge(0, loc[q], (int) size, lkey);
                        address(q);
                        if (op != WrOpcode.SEND) {
                            wr.remote(remAddr[q], rem[q].rkey());
                        }
                        if (!noPeak) {
                            tposted[(int) totscnt] = System.nanoTime();
                        }
                        int rc = qps[q].postSend(wr);
                        if (rc != 0) {
                            if (rc == RdmaException.Errno.ENOMEM.value()) {
                                full = true;
                                break; // the queue drains as completions come
                            }
                            throw new PerfFailure("Couldn't post send: qp " + q + " scnt=" + k + " ("
                                    + RdmaException.Errno.of(rc) + ", QP state " + qps[q].state() + ")");
                        }
                        if (cycle) {
                            loc[q] += step;
                            if ((k + 1) % slots == 0) {
                                loc[q] = sendBuf(q);
                            }
                            remAddr[q] += step;
                            if ((k + 1) % slots == 0) {
                                remAddr[q] = rem[q].vaddr();
                            }
                        }
                        scnt[q]++;
                        totscnt++;
                        if (signaled) {
                            sigPosted[q]++;
                        }
                    }
                }
                if (full || (dur ? totccnt < totscnt : totccnt < tot)) {
                    full = false;
                    int ne = sendCq.poll(wcs);
                    if (ne == 0) {
                        emptyPoll();
                        idle = true;
                        continue;
                    }
                    dog.progress();
                    long now = System.nanoTime();
                    for (int i = 0; i < ne; i++) {
                        WorkCompletion wc = wcs[i];
                        if (wc.status() != WcStatus.SUCCESS) {
                            throw new PerfFailure("Completion with error at client: " + failure(wc) + " (scnt="
                                    + totscnt + ", ccnt=" + totccnt + ")");
                        }
                        ccnt[(int) wc.wrId()] += cqMod;
                        sigDone[(int) wc.wrId()]++;
                        totccnt += cqMod;
                        if (dur && clock.sampling()) {
                            sampled += cqMod;
                        }
                        if (!noPeak) {
                            tcompleted[(int) (totccnt > tot ? tot - 1 : totccnt - 1)] = now;
                        }
                    }
                }
            }
        } catch (PerfFailure e) {
            if (creditStalled >= 0) {
                // the wait that ran out was one for the receiver's credit word
                throw new PerfFailure(e.getMessage() + "; the receiver's credits held QP " + creditStalled + " back"
                        + " after " + scnt[creditStalled] + " SENDs (its credit word reads "
                        + Integer.toUnsignedString(credit(creditStalled)) + "): " + NO_CREDITS_FROM_PEER, e);
            }
            throw e;
        }
        if (!dur) {
            drainSignaled(sigPosted, sigDone);
        }
        if (dur) {
            // perftest's print_report_bw in duration mode: the sampled iterations over SAMPLE's span
            tposted[0] = clock.sampleStart();
            tcompleted[0] = clock.sampleEnd();
            lastBw = PerftestReport.bw(size, sampled, tposted, tcompleted, cqMod, true, o.gbits());
            return;
        }
        if (noPeak) {
            tcompleted[0] = System.nanoTime();
        }
        lastBw = PerftestReport.bw(size, tot, tposted, tcompleted, cqMod, noPeak, o.gbits());
    }

    /**
     * Why an iWARP send_bw sender waits for good: perftest decides on the credits from the device it opened itself
     * ({@code -d}), not from the one rdma_cm connects over, so an ib_send_bw -R without -d on a host whose first
     * device is not iWARP (rxe0 beside siw0) neither writes credits nor has a credit word to be written.
     */
    static final String NO_CREDITS_FROM_PEER = "over iWARP ib_send_bw's receiver writes its receive count into the"
            + " sender's credit word every rx_depth/3 receives, but a perftest that opened a non-iWARP device does not"
            + " (it takes the transport of -d's device, or of the first device without -d, even where rdma_cm then"
            + " connects over iWARP): give the perftest side -d with its iWARP device (e.g. -d siw0)";

    /** The same mismatch seen from a jrdma receiver: its credit WRITE went to a peer without a credit word. */
    static final String CREDIT_REFUSED_BY_PEER = "this side wrote its receive count (iWARP send_bw's credit) into"
            + " the memory the sender's keys named, and the QP failed after that: a perftest sender that opened a"
            + " non-iWARP device (the transport of -d's device, or of the first device without -d, even where rdma_cm"
            + " connects over iWARP) names its receive buffer there, without remote write access, and answers the"
            + " WRITE with a TERMINATE; give the perftest side -d with its iWARP device (e.g. -d siw0)";

    /**
     * {@return the opcode of a bw test's requests ({@code atomic_bw}: CAS with {@code -A CMP_AND_SWAP}, else
     * FETCH_ADD)}, with {@link #wr} reset to it (an atomic's operands set as perftest sets them)
     */
    private WrOpcode resetBwRequest() {
        WrOpcode op = test == PerfTest.ATOMIC_BW
                ? (o.cmpSwap() ? WrOpcode.ATOMIC_CMP_AND_SWP : WrOpcode.ATOMIC_FETCH_AND_ADD) : test.opcode;
        wr.reset().opcode(op);
        if (op.isAtomic()) {
            wr.atomic(o.cmpSwap() ? 0 : 1, 0);
        }
        return op;
    }

    /** {@return INLINE for a bw test's SEND or WRITE of at most the inline size, as perftest inlines them; else 0} */
    private int bwInlineFlag(WrOpcode op, long size) {
        return (op == WrOpcode.SEND || op == WrOpcode.RDMA_WRITE) && size <= o.inlineSize() ? SendFlags.INLINE : 0;
    }

    /**
     * perftest's {@code perform_warm_up} ({@code --perform_warm_up}, write, read and atomic bw clients): QP after QP,
     * tx_depth requests as the run's first one (the first local and remote addresses, every one signaled), then
     * their completions; nothing is measured and the server does not take part.
     */
    private void performWarmUp(long size) {
        dog.reset("warming up (--perform_warm_up) with " + size + " B");
        WrOpcode op = resetBwRequest();
        int inlineFlag = bwInlineFlag(op, size);
        for (int q = 0; q < o.numQps(); q++) {
            wr.wrId(q).flags(SendFlags.SIGNALED | inlineFlag).sge(0, sendBuf(q), (int) size, mr.lkey())
                    .remote(rem[q].vaddr(), rem[q].rkey());
            int left = 0;
            for (int i = 0; i < o.txDepth(); i++) {
                int rc = qps[q].postSend(wr);
                if (rc != 0) {
                    throw new PerfFailure("Couldn't post send during warm up: qp " + q + " scnt=" + i + " ("
                            + RdmaException.Errno.of(rc) + ")");
                }
                left++;
            }
            while (left > 0) {
                int ne = sendCq.poll(wcs);
                if (ne == 0) {
                    emptyPoll();
                    continue;
                }
                dog.progress();
                for (int i = 0; i < ne; i++) {
                    if (wcs[i].status() != WcStatus.SUCCESS) {
                        throw new PerfFailure("Completion with error during warm up: " + failure(wcs[i]));
                    }
                    left--;
                    warmUpRequests++;
                }
            }
        }
    }

    /** @return the index of the QP numbered {@code qpn} (allocation-free; a handful of QPs) */
    private int indexOfQpn(int qpn) {
        for (int i = 0; i < qps.length; i++) {
            if (qps[i].qpn() == qpn) {
                return i;
            }
        }
        throw new PerfFailure("a receive completion names QP " + qpn + ", not one of this test's");
    }

    /** {@code ctx_set_recv_wqes}: {@code rx-depth} receives per QP into its receive half. */
    private void postRecvs(long size) {
        postRecvs(size, o.rxDepth());
    }

    /** Posts {@code perQp} receives for each QP (into the SRQ, if any, as many for each). */
    private void postRecvs(long size, int perQp) {
        int n = o.numQps();
        for (int q = 0; q < n; q++) {
            long recvBase = base + (n + q) * sendQpBuffSize;
            for (int j = 0; j < perQp; j++) {
                postRecv(q, recvAddr(recvBase, size, j), size);
            }
        }
    }

    private long recvAddr(long recvBase, long size, long posted) {
        if (!test.isBw() || size > cycleBuffer / 2) {
            return recvBase;
        }
        long step = inc(size, cacheLine);
        return recvBase + (posted % (cycleBuffer / step)) * step;
    }

    private void postRecv(int q, long addr, long size) {
        rwr.reset().wrId(q).sge(0, addr, recvLength(size), mr.lkey());
        int rc = srq != null ? srq.postRecv(rwr) : qps[q].postRecv(rwr);
        if (rc != 0) {
            throw new PerfFailure("Couldn't post recv " + (srq != null ? "SRQ" : "Qp") + "=" + q + " ("
                    + RdmaException.Errno.of(rc) + ")");
        }
    }

    /**
     * {@code run_iter_bw_server}: count the messages, keep the receives posted; the clock starts at the first. With
     * {@code -D} the duration's clock starts there ({@code set_on_first_rx_packet}), the loop runs until its END
     * whatever arrived, every used receive is posted again, and the messages received while it samples count.
     */
    private void runIterBwServer(long size, long iters) {
        int n = o.numQps();
        boolean dur = clock != null;
        long tot = dur ? Long.MAX_VALUE : iters * n;
        long[] posted = new long[n];
        java.util.Arrays.fill(posted, o.rxDepth());
        long[] rcntQ = new long[n];
        long[] scredit = new long[n];
        long rcnt = 0;
        long first = 0;
        long sampled = 0;
        int turns = 0;
        dog.reset("receiving " + size + " B messages");
        while (rcnt < tot) {
            if (dur && rcnt > 0 && ++turns % CLOCK_TURNS == 0 && clock.advance(System.nanoTime())
                    == PerftestDuration.END) {
                break;
            }
            int ne = recvCq.poll(wcs);
            if (ne == 0) {
                emptyPoll();
                if (dur && rcnt > 0 && clock.advance(System.nanoTime()) == PerftestDuration.END) {
                    break;
                }
                continue;
            }
            dog.progress();
            if (rcnt == 0) {
                first = System.nanoTime();
                if (dur) {
                    clock.start(first);
                }
            }
            for (int i = 0; i < ne; i++) {
                WorkCompletion wc = wcs[i];
                if (wc.status() != WcStatus.SUCCESS) {
                    throw new PerfFailure("Completion with error at server: " + failure(wc) + " (rcnt=" + rcnt + ")"
                            + (creditWrites > 0 ? "; " + CREDIT_REFUSED_BY_PEER : ""));
                }
                int q = (int) wc.wrId(); // whose buffer the receive was (with an SRQ, any QP may have taken it)
                int from = srq == null ? q : indexOfQpn(wc.qpNum()); // the QP the message came on
                rcnt++;
                rcntQ[from]++;
                if (dur && clock.sampling()) {
                    sampled++;
                }
                if (dur || posted[q] + 1 <= iters) {
                    postRecv(q, recvAddr(base + (n + q) * sendQpBuffSize, size, posted[q]), size);
                    posted[q]++;
                }
                if (credits && rcntQ[from] % o.rxDepth() % creditCnt == 0) {
                    sendCredit(from, rcntQ[from], scredit);
                }
            }
        }
        long end = System.nanoTime();
        if (credits) {
            awaitCreditWrites(scredit);
        }
        lastBw = dur
                ? PerftestReport.bw(size, sampled, new long[] {clock.sampleStart()}, new long[] {clock.sampleEnd()},
                        o.cqMod(), true, o.gbits())
                : PerftestReport.bw(size, tot, new long[] {first}, new long[] {end}, o.cqMod(), true, o.gbits());
    }

    /**
     * {@code run_iter_bw_server}'s credit: the receive count of QP {@code q} as a little-endian u32,
     * by a signaled 4-byte RDMA WRITE to the peer's credit word; at most tx_depth of them outstanding.
     */
    private void sendCredit(int q, long count, long[] scredit) {
        while (scredit[q] == o.txDepth()) {
            reapCreditWrites(scredit);
        }
        ctrlBuf.set(INT_LE, 4L * q, (int) count);
        creditWr.reset().opcode(WrOpcode.RDMA_WRITE).wrId(q).flags(SendFlags.SIGNALED)
                .sge(0, ctrlBuf.address() + 4L * q, 4, creditMr.lkey()).remote(rem[q].vaddr(), rem[q].rkey());
        int rc = qps[q].postSend(creditWr);
        if (rc != 0) {
            throw new PerfFailure("Couldn't post send qp " + q + " credit = " + count + " ("
                    + RdmaException.Errno.of(rc) + ", QP state " + qps[q].state() + ")");
        }
        scredit[q]++;
        creditWrites++;
    }

    private void reapCreditWrites(long[] scredit) {
        reapSend(creditWcs, scredit, -1, true); // not wcs: the receive loop is still going through those
    }

    /** {@code clean_scq_credit}: the credit WRITEs still outstanding complete. */
    private void awaitCreditWrites(long[] scredit) {
        dog.reset("completing the credit WRITEs");
        while (java.util.Arrays.stream(scredit).sum() > 0) {
            reapCreditWrites(scredit);
        }
    }

    // ------------------------------------------------------------------ latency loops

    /** -D: the completions a latency loop saw while its clock sampled (perftest's iters in duration mode). */
    private long latSampled;

    /** {@code print_report_lat}, or with -D {@code print_report_lat_duration} of the sampled span. */
    private String latRow(long size, long[] tposted, int rttFactor) {
        if (clock != null) {
            return PerftestReport.latDurationRow(size, latSampled, clock.sampleEnd() - clock.sampleStart(),
                    rttFactor);
        }
        return PerftestReport.latRow(size, o.iters(), tposted, rttFactor);
    }

    /** -D: counts a completion when the clock, read now, samples; @return false once the clock reached END */
    private boolean countLat() {
        int st = clock.advance(System.nanoTime());
        if (st == PerftestDuration.SAMPLE) {
            latSampled++;
        }
        return st != PerftestDuration.END;
    }

    /** -D: an idle turn of a latency wait; @return true once the clock (read every 64th turn) reached END */
    private boolean endedWhileWaiting(int spins) {
        return (spins & 63) == 0 && clock.advance(System.nanoTime()) == PerftestDuration.END;
    }

    /**
     * {@code run_iter_lat_write}: each side writes {@code size} bytes whose last byte is its
     * iteration number into the peer's receive half and waits for the peer's number in its own;
     * the server writes first.
     */
    private void runIterLatWrite(long size, long[] tposted, long iters) {
        long postByte = size - 1;
        long pollByte = o.numQps() * buffUnit + size - 1;
        wr.reset().opcode(WrOpcode.RDMA_WRITE).wrId(0)
                .flags(SendFlags.SIGNALED | (size <= o.inlineSize() ? SendFlags.INLINE : 0))
                .sge(0, base, (int) size, mr.lkey()).remote(rem[0].vaddr(), rem[0].rkey());
        boolean spinOnly = !ctx.remoteWritesNeedProgress();
        long scnt = 0;
        long ccnt = 0;
        long rcnt = 0;
        // -D: no count ends the run, the clock does; each side's own clock, checked while it waits too, so a side
        // whose peer stopped first leaves at its own END (the peer's started within a handshake of it)
        boolean dur = clock != null;
        latSampled = 0;
        dog.reset("running write_lat with " + size + " B messages");
        if (dur) {
            clock.start(System.nanoTime());
        }
        run:
        while (dur ? !clock.ended() : (scnt < iters || ccnt < iters || rcnt < iters)) {
            if ((dur || rcnt < iters) && !(scnt < 1 && server)) {
                rcnt++;
                byte want = (byte) rcnt;
                int spins = 0;
                if (spinOnly) { // the peer's WRITE lands with no duty cycle here: spin on the byte, as perftest's C
                    while ((byte) Session.BYTE.getAcquire(buf, pollByte) != want) {
                        pauseTurn();
                        dog.idle();
                        if (dur && endedWhileWaiting(++spins)) {
                            break run;
                        }
                    }
                } else {
                    while ((byte) Session.BYTE.getAcquire(buf, pollByte) != want) {
                        pauseTurn();
                        if (ctx.progress() > 0) {
                            dog.progress();
                        } else {
                            dog.idle();
                        }
                        if (dur && endedWhileWaiting(++spins)) {
                            break run;
                        }
                    }
                }
                dog.progress();
            }
            if (dur || scnt < iters) {
                buf.set(ValueLayout.JAVA_BYTE, postByte, (byte) ++scnt);
                post(qps[0], scnt);
                // each iteration's timestamp right after its post, not before as perftest's: the differences
                // of consecutive ones are the same round trips, and the clock read (~50 ns on some virtual
                // machines, where perftest's rdtsc takes a few) overlaps the peer's turn instead of delaying it
                if (!dur) {
                    tposted[(int) scnt - 1] = System.nanoTime();
                }
            }
            if (dur) {
                if (!awaitSendOrEnd(scnt, ccnt)) {
                    break;
                }
                ccnt++;
                countLat();
            } else if (ccnt < iters) {
                awaitSend(scnt, ccnt);
                ccnt++;
            }
        }
    }

    /** {@code run_iter_lat}: one READ or atomic at a time, timed from post to post. */
    private void runIterLat(long size, long[] tposted, long iters) {
        WrOpcode op = test == PerfTest.ATOMIC_LAT
                ? (o.cmpSwap() ? WrOpcode.ATOMIC_CMP_AND_SWP : WrOpcode.ATOMIC_FETCH_AND_ADD) : WrOpcode.RDMA_READ;
        wr.reset().opcode(op).wrId(0).flags(SendFlags.SIGNALED).sge(0, base, (int) size, mr.lkey())
                .remote(rem[0].vaddr(), rem[0].rkey());
        if (op.isAtomic()) {
            wr.atomic(o.cmpSwap() ? 0 : 1, 0);
        }
        dog.reset("running " + test.cliName() + " with " + size + " B");
        if (clock != null) {
            // -D: one at a time until END, each completion counted when the clock read after it samples
            latSampled = 0;
            clock.start(System.nanoTime());
            long scnt = 0;
            do {
                post(qps[0], scnt);
                awaitSend(scnt + 1, scnt);
                scnt++;
            } while (countLat());
            return;
        }
        for (long scnt = 0; scnt < iters; scnt++) {
            tposted[(int) scnt] = System.nanoTime();
            post(qps[0], scnt);
            awaitSend(scnt + 1, scnt);
        }
    }

    /**
     * {@code run_iter_lat_send}: a SEND ping-pong into pre-posted receives ({@code posted} of them); the client
     * sends first.
     */
    private void runIterLatSend(long size, long[] tposted, long iters, int posted) {
        int inlineFlag = size <= o.inlineSize() ? SendFlags.INLINE : 0;
        long recvBase = base + o.numQps() * sendQpBuffSize;
        long scnt = 0;
        long rcnt = 0;
        dog.reset("running send_lat with " + size + " B messages");
        // only the post lies between a message's arrival and the reply: the reply's request is made before the
        // wait, its timestamp is read after the post (as write_lat's: consecutive differences are the same round
        // trips), and the used receive is replaced after the reply is posted when at least one more stays posted
        // meanwhile (two or more posted; with one, before it, as perftest: the peer's next SEND could find none)
        boolean refillLate = posted >= 2;
        // -D: until this side's clock reaches END, also while it waits for the peer's SEND (the peer may stop first)
        boolean dur = clock != null;
        latSampled = 0;
        if (dur) {
            clock.start(System.nanoTime());
        }
        while (dur ? !clock.ended() : (scnt < iters || rcnt < iters)) {
            boolean sending = dur || scnt < iters;
            boolean signaled = false;
            if (sending) {
                signaled = (scnt + 1) % o.cqMod() == 0 || (!dur && scnt + 1 == iters);
                wr.reset().opcode(WrOpcode.SEND).wrId(0).flags((signaled ? SendFlags.SIGNALED : 0) | inlineFlag)
                        .sge(0, base, (int) size, mr.lkey());
                address(0);
            }
            boolean refill = false;
            if ((dur || rcnt < iters) && !(scnt < 1 && !server)) {
                int spins = 0;
                boolean ended = false;
                while (recvCq.poll(wcs[0]) == 0) {
                    emptyPoll();
                    if (dur && endedWhileWaiting(++spins)) {
                        ended = true;
                        break;
                    }
                }
                if (ended) {
                    break;
                }
                dog.progress();
                if (wcs[0].status() != WcStatus.SUCCESS) {
                    throw new PerfFailure("Completion with error at " + (server ? "server" : "client") + ": "
                            + failure(wcs[0]) + " (rcnt=" + rcnt + ")");
                }
                rcnt++;
                refill = dur || rcnt + posted <= iters;
                if (refill && !refillLate) {
                    postRecv(0, recvBase, size);
                }
                if (dur && !countLat()) { // perftest counts the receives of its SAMPLE
                    if (refill && refillLate) {
                        postRecv(0, recvBase, size);
                    }
                    break;
                }
            }
            if (sending) {
                scnt++;
                post(qps[0], scnt);
                if (!dur) {
                    tposted[(int) scnt - 1] = System.nanoTime();
                }
            }
            if (refill && refillLate) {
                postRecv(0, recvBase, size);
            }
            if (dur) {
                if (signaled && !awaitSendOrEnd(scnt, scnt - 1)) {
                    break;
                }
            } else if (signaled) {
                awaitSend(scnt, scnt - 1);
            }
        }
    }

    private void post(QueuePair qp, long scnt) {
        int rc;
        while ((rc = qp.postSend(wr)) == RdmaException.Errno.ENOMEM.value()) {
            ctx.progress();
            dog.idle();
        }
        if (rc != 0) {
            throw new PerfFailure("Couldn't post send: scnt=" + scnt + " (" + RdmaException.Errno.of(rc)
                    + ", QP state " + qp.state() + ")");
        }
    }

    /** -D: {@link #awaitSend}, unless the clock reaches END first; @return false then */
    private boolean awaitSendOrEnd(long scnt, long ccnt) {
        int spins = 0;
        while (sendCq.poll(wcs[0]) == 0) {
            emptyPoll();
            if (endedWhileWaiting(++spins)) {
                return false;
            }
        }
        dog.progress();
        if (wcs[0].status() != WcStatus.SUCCESS) {
            throw new PerfFailure("Completion with error at " + (server ? "server" : "client") + ": "
                    + failure(wcs[0]) + " (scnt=" + scnt + ", ccnt=" + ccnt + ")");
        }
        return true;
    }

    private void awaitSend(long scnt, long ccnt) {
        while (sendCq.poll(wcs[0]) == 0) {
            emptyPoll();
        }
        dog.progress();
        if (wcs[0].status() != WcStatus.SUCCESS) {
            throw new PerfFailure("Completion with error at " + (server ? "server" : "client") + ": "
                    + failure(wcs[0]) + " (scnt=" + scnt + ", ccnt=" + ccnt + ")");
        }
    }

    /** A turn of a latency test's busy wait with {@code --pause}: a PAUSE (and its count); else nothing. */
    private void pauseTurn() {
        if (pause) {
            Thread.onSpinWait();
            pausedTurns++;
        }
    }

    /** {@code -e}: the longest one sleep on the channel lasts before the watchdog (and a -D clock) is looked at. */
    private static final java.time.Duration EVENT_SLICE = java.time.Duration.ofMillis(100);

    /**
     * A poll that found nothing. Polling: the watchdog counts it ({@link #pauseTurn} first) and the loop polls again. With {@code -e}, perftest's
     * {@code ctx_notify_events}: sleep on the channel until a CQ has an event, then re-arm that CQ before the next
     * poll, so that a completion after the re-arm raises the next event and one before it is found by that poll; at
     * most {@link #EVENT_SLICE} at a time.
     */
    private void emptyPoll() {
        if (events == null) {
            pauseTurn();
            dog.idle();
            return;
        }
        eventWaits++;
        CompletionQueue cq = events.await(EVENT_SLICE);
        if (cq != null) {
            cqEvents++;
            cq.requestNotify(false);
        }
        dog.check();
    }

    private static String failure(WorkCompletion wc) {
        String hint = switch (wc.status()) {
            case RETRY_EXC_ERR -> ": the peer stopped answering (transport retries exhausted)";
            case RNR_RETRY_EXC_ERR -> ": the peer had no receive posted";
            case REM_ACCESS_ERR -> ": the peer refused the access (use the same -s, -a and -q on both sides)";
            case REM_INV_REQ_ERR -> ": the peer found the request invalid (same -s on both sides?)";
            case LOC_LEN_ERR -> ": a message did not fit the receive buffer (same -s on both sides?)";
            case WR_FLUSH_ERR -> ": the QP entered the error state after an earlier error";
            default -> "";
        };
        return "Failed status " + wc.status() + " (" + wc.status().ordinal() + "): wr_id " + wc.wrId() + hint;
    }

    // ------------------------------------------------------------------ teardown

    /** INVOKER: keep the engine turning briefly, so the last acknowledgements leave before the QPs go. */
    private void linger() {
        if (ctx.options().threadingMode() != ThreadingMode.INVOKER) {
            return;
        }
        Roce.linger(ctx, 50_000_000L, 500);
    }

    private void tearDown() {
        if (ctx != null) {
            Roce.printCounters(ctx, server ? "server" : "client");
        }
        if (qps != null) {
            for (QueuePair q : qps) {
                close(q);
            }
        }
        if (ahs != null) {
            for (AddressHandle ah : ahs) {
                close(ah);
            }
        }
        close(srq);
        close(mr);
        close(creditMr);
        if (recvCq != sendCq) {
            close(recvCq);
        }
        close(sendCq);
        close(events); // after its CQs
        close(pd);
        if (arena != null) {
            arena.close();
        }
        close(ctx);
    }

    /** Closes {@code c} (null: nothing), ignoring what the close throws: teardown. */
    static void close(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // teardown after the result is known
        }
    }
}

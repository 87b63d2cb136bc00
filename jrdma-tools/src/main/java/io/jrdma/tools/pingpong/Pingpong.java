package io.jrdma.tools.pingpong;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.oob.CFormat;
import io.jrdma.tools.oob.Roce;
import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.Grh;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
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
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * One end of {@code ibv_rc_pingpong} (rdma-core {@code libibverbs/examples/rc_pingpong.c}):
 * {@code rx-depth} receives posted up front into the one buffer, the address exchange over TCP,
 * then the client sends and each side sends its next message once both its previous send and
 * the peer's message completed, for {@code iters} messages each way. QP attributes are the
 * tool's: MTU as given, RNR timer 12, timeout 14, retry and RNR retry 7, one outstanding
 * READ/atomic each way, no remote access.
 *
 * <p>On an iWARP device ({@code iwarp_<if>}) the QPs are connected by the device's connection
 * manager (MPA over TCP port {@code -p}) instead of the LID:QPN:PSN:GID exchange and manual
 * modify, which iWARP cannot use (ibv_rc_pingpong does not run on siw either): both ends are
 * then jrdma, and the ping-pong and the output are the same.
 */
public final class Pingpong {
    static final int RECV_WRID = 1;
    static final int SEND_WRID = 2;
    /** What {@code rc_pingpong} fills its buffer with before anything arrives. */
    static final byte FILL = 0x7b;

    /**
     * A parsed command line.
     *
     * @param host        the server to connect to, or null to be the server
     * @param waitClient  the server waits at most {@code timeoutSec} for its client (else forever)
     * @param numQp       {@code --srq}: ibv_srq_pingpong's exchange with this many QPs on one SRQ; 0 for ibv_rc_pingpong's
     */
    public record Options(String host, int port, String device, int ibPort, int size, int mtu, int rxDepth, int iters,
                          int sl, boolean events, int gidIndex, boolean check, int timeoutSec, boolean waitClient,
                          QpType type, int numQp) {
        /** @return these options as a server on {@code port} (tests) */
        public Options asServer(int port) {
            return new Options(null, port, device, ibPort, size, mtu, rxDepth, iters, sl, events, gidIndex, check,
                    timeoutSec, true, type, numQp);
        }
    }

    /** A run that failed: error completion, timeout, bad data. Exit code 1. */
    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    /** A flag value wrong for the device (-i, -g): exit code 2. */
    static final class BadValue extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadValue(String message) {
            super(message);
        }
    }

    private final Options o;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean client;
    private final long timeoutNanos;
    private final IntConsumer listening;
    /** The host's page size ({@link HostPage}): the buffer's alignment and -c's page, as rc_pingpong's page_size. */
    final int page;

    private DeviceContext ctx;
    private ConnectionManager.Connection conn;
    private Arena arena;
    private ProtectionDomain pd;
    private CompletionChannel channel;
    private CompletionQueue cq;
    private QueuePair qp;
    /** UD: the address handle of the peer (ud_pingpong's {@code ctx->ah}) and its QPN */
    private AddressHandle ah;
    private int remoteQpn;
    private MemoryRegion mr;
    private MemorySegment buf;
    private final RecvWorkRequest recvWr = new RecvWorkRequest(1);
    private final SendWorkRequest sendWr = new SendWorkRequest(1);
    private int pending;
    private int routs;
    private int scnt;
    private int rcnt;

    /** @param listening told the server's TCP port once it listens (tests and in-process pairs) */
    Pingpong(Options o, PrintStream out, PrintStream err, IntConsumer listening) {
        this(o, out, err, listening, HostPage.size());
    }

    /** As the other, with a page size of {@code page} bytes in place of the host's (tests: another host's). */
    Pingpong(Options o, PrintStream out, PrintStream err, IntConsumer listening, int page) {
        this.page = page;
        this.listening = listening;
        this.o = o;
        this.out = out;
        this.err = err;
        this.client = o.host() != null;
        this.timeoutNanos = o.timeoutSec() * 1_000_000_000L;
    }

    int run() {
        InetAddress serverAddr = null;
        if (client) {
            try {
                serverAddr = InetAddress.getByName(o.host());
            } catch (UnknownHostException e) {
                throw new SideChannelException("cannot resolve host '" + o.host() + "'");
            }
        }
        Device dev = o.device() != null ? DeviceChoice.named(o.device())
                : client ? DeviceChoice.toward(serverAddr) : DeviceChoice.forServer();
        if (io.jrdma.tools.oob.EngineWarmup.warms(dev)) { // the peer's first packets meet compiled code
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        DeviceOptions opts = DeviceOptions.defaults().with(SoftRoceOptions.defaults().withAnyIpv4Id(true))
                .withThreadingMode(o.events() ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER)
                .withIdleStrategy(IdleStrategy.BACKOFF);
        ctx = dev.open(opts);
        boolean iwarp = dev.transport() == Transport.IWARP;
        try {
            String warning = iwarp ? null : Roce.portWarning(ctx);
            if (warning != null) {
                err.println("jrdma pingpong: " + warning);
            }
            List<Gid> table = port(ctx, o.ibPort()).gids();
            if (o.gidIndex() >= 0 && (o.gidIndex() >= table.size() || Roce.isZero(table.get(o.gidIndex()).raw()))) {
                throw new BadValue("can't read sgid of index " + o.gidIndex() + " on " + dev.name() + " (its GID table"
                        + " has " + table.size() + " entries: see 'jrdma devices')");
            }
            setUp();
            if (iwarp) {
                return client ? runIwarpClient(serverAddr, table) : runIwarpServer(table);
            }
            return client ? runClient(serverAddr, table) : runServer(table);
        } finally {
            tearDown();
        }
    }

    /**
     * {@return port {@code ibPort} of {@code ctx} ({@code ibv_query_port}), whose GID table {@code -g} indexes and whose
     * number the QP's INIT gives}
     *
     * @throws BadValue naming the option and the device's ports when the device has no such port
     */
    static PortAttr port(DeviceContext ctx, int ibPort) {
        return DeviceChoice.port(ctx, ibPort, BadValue::new);
    }

    /** ud_pingpong's Q_Key, on its QP and in each send. */
    static final int UD_QKEY = 0x1111_1111;

    private boolean ud() {
        return o.type() == QpType.UD;
    }

    /** @return the bytes a receive takes: the message, and for UD the 40-byte GRH in front */
    private long recvBytes() {
        return ud() ? o.size() + (long) Grh.LENGTH : o.size();
    }

    private void setUp() {
        if (ud()) {
            int mtu = ctx.queryPort(o.ibPort()).activeMtu().bytes();
            if (o.size() > mtu) {
                throw new BadValue("Requested size larger than port MTU (" + mtu + "): a UD message is one packet;"
                        + " give -s " + mtu + " or less");
            }
        }
        arena = Arena.ofShared();
        buf = arena.allocate(recvBytes(), page); // rc_pingpong: memalign(page_size, size)
        buf.fill(FILL);
        pd = ctx.allocPd();
        mr = pd.register(buf, Access.LOCAL_WRITE);
        channel = o.events() ? ctx.createCompletionChannel() : null;
        cq = ctx.createCq(o.rxDepth() + 1, channel);
        qp = pd.createQp(new QpInitAttr(o.type(), cq, cq, 1, o.rxDepth(), 1, 1, 0, false));
        if (ud()) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(o.ibPort()).qkey(UD_QKEY));
        } else {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(o.ibPort()).accessFlags(0));
        }
        routs = postRecv(o.rxDepth());
        if (routs < o.rxDepth()) {
            throw new Failure("Couldn't post receive (" + routs + ")");
        }
        if (channel != null) {
            cq.requestNotify(false);
        }
    }

    private int postRecv(int n) {
        recvWr.reset().wrId(RECV_WRID).sge(0, mr.address(), (int) recvBytes(), mr.lkey());
        int i = 0;
        for (; i < n; i++) {
            if (retryFull(() -> qp.postRecv(recvWr)) != 0) {
                break;
            }
        }
        return i;
    }

    /**
     * Posts, retrying a full queue for a moment: a DEDICATED engine thread publishes a completion
     * just before it frees the queue slot, so a post right after polling can find it still taken.
     */
    private int retryFull(java.util.function.IntSupplier post) {
        int rc = post.getAsInt();
        if (rc != RdmaException.Errno.ENOMEM.value() || channel == null) {
            return rc;
        }
        long end = System.nanoTime() + 100_000_000L;
        while (rc == RdmaException.Errno.ENOMEM.value() && System.nanoTime() - end < 0) {
            Thread.onSpinWait();
            rc = post.getAsInt();
        }
        return rc;
    }

    private PingpongWire.Dest myDest(byte[] gid) {
        return new PingpongWire.Dest(Roce.lid(ctx), qp.qpn(), new SecureRandom().nextInt(1 << 24), gid);
    }

    private void printAddress(String label, PingpongWire.Dest d) {
        out.println("  " + label + "LID 0x" + CFormat.hex(d.lid(), 4) + ", QPN 0x" + CFormat.hex(d.qpn(), 6)
                + ", PSN 0x" + CFormat.hex(d.psn(), 6) + ", GID " + CFormat.inetNtop6(d.gid()));
        out.flush();
    }

    private int runClient(InetAddress serverAddr, List<Gid> table) {
        PingpongWire.Dest me;
        PingpongWire.Dest rem;
        int sgid;
        SideChannel.Pump pump = Roce.pump(ctx);
        try (SideChannel sc = SideChannel.connect(new InetSocketAddress(serverAddr, o.port()), timeoutNanos)) {
            sgid = o.gidIndex() >= 0 ? o.gidIndex() : routeGid(table, sc.localAddress());
            me = myDest(table.get(sgid).raw());
            printAddress("local address:  ", me);
            io.jrdma.tools.Progress.step("sending this side's address to " + sc.peer()
                    + ", then waiting for the server's address");
            sc.write(PingpongWire.encode(me), "the local address");
            byte[] msg;
            try {
                msg = sc.read(PingpongWire.SIZE, "the server's address", pump);
            } catch (SideChannelException e) {
                if (!e.getMessage().contains(" after 0 of ")) {
                    throw e;
                }
                // rc_pingpong's server closes without a word when it cannot connect its QP to ours
                int other = Roce.sameFamily(table, Roce.isIpv4Mapped(me.gid()) ? V6_SAMPLE : V4_SAMPLE, -1);
                throw new SideChannelException(e.getMessage() + ". The server could not use this side's address (its"
                        + " own output says why); if its GID is of the other IP version than this side's (GID " + sgid
                        + ", " + CFormat.inetNtop6(me.gid()) + ", " + family(me.gid()) + "), " + (other >= 0
                        ? "give this side -g " + other + " (" + CFormat.inetNtop6(table.get(other).raw()) + ")"
                        : "give the server a GID of " + family(me.gid())) + "; without -g both sides pick matching ones");
            }
            rem = withPeerGid(PingpongWire.decode(msg), sc.remoteAddress());
            checkFamilies(sgid, me.gid(), rem.gid(), table, "server");
            sc.write(PingpongWire.DONE, "\"done\"");
        }
        printAddress("remote address: ", rem);
        connect(me, rem, sgid);
        pending = RECV_WRID;
        if (o.check()) {
            for (long i = 0; i < o.size(); i += page) {
                buf.set(ValueLayout.JAVA_BYTE, i, (byte) 0); // rc_pingpong: i / page_size % sizeof(char), always 0
            }
        }
        postSend();
        pending |= SEND_WRID;
        return loop();
    }

    private int runServer(List<Gid> table) {
        PingpongWire.Dest me = null;
        PingpongWire.Dest rem;
        SideChannel.Pump pump = Roce.pump(ctx);
        if (o.gidIndex() >= 0) {
            me = myDest(table.get(o.gidIndex()).raw());
            printAddress("local address:  ", me);
        }
        int sgid = o.gidIndex();
        try (SideChannel.Listener l = SideChannel.listen(new InetSocketAddress(o.port()))) {
            listening.accept(l.port());
            try (SideChannel sc = l.accept(o.waitClient() ? timeoutNanos : 0, timeoutNanos, pump)) {
                l.close();
                byte[] msg = sc.read(PingpongWire.SIZE, "the client's address", pump);
                rem = PingpongWire.decode(msg);
                rem = withPeerGid(rem, sc.remoteAddress());
                if (me == null) {
                    sgid = Roce.sameFamily(table, rem.gid(), routeGid(table, sc.localAddress()));
                    if (sgid < 0) {
                        throw new Failure("the client's GID " + CFormat.inetNtop6(rem.gid()) + " is of an IP version "
                                + ctx.device().name() + " has no address of: give -g");
                    }
                    me = myDest(table.get(sgid).raw());
                    printAddress("local address:  ", me);
                }
                checkFamilies(sgid, me.gid(), rem.gid(), table, "client");
                connect(me, rem, sgid);
                sc.write(PingpongWire.encode(me), "the local address");
                byte[] done = sc.read(PingpongWire.DONE.length, "\"done\"", pump);
                if (!PingpongWire.isDone(done)) {
                    throw new SideChannelException("Couldn't send/recv local address: the client answered "
                            + SideChannel.printable(done, done.length) + " instead of \"done\"");
                }
            }
        }
        printAddress("remote address: ", rem);
        pending = RECV_WRID;
        return loop();
    }

    // ------------------------------------------------------------------ iWARP: the connection manager

    /** rc_pingpong's QP attributes as connection parameters: MTU, retries 7, one READ/atomic each way. */
    private ConnParam connParam() {
        return ConnParam.defaults().withMtu(Mtu.ofBytes(o.mtu())).withRetry(7, 7).withRdAtomic(1, 1);
    }

    /** The address lines of an iWARP connection: LID and PSN are 0 (iWARP has neither), the GIDs are the TCP ends. */
    private PingpongWire.Dest iwarpDest(int qpn, byte[] gid) {
        return new PingpongWire.Dest(0, qpn, 0, gid);
    }

    /** @return the GID for {@code -g}, else this device's first one of the peer's IP version */
    private byte[] localGid(List<Gid> table, InetAddress peer) {
        if (o.gidIndex() >= 0) {
            return table.get(o.gidIndex()).raw();
        }
        int i = Roce.gidIndexOf(table, peer); // loopback: the peer's address is ours
        return table.get(i >= 0 ? i : Roce.bestGidIndex(table, peer instanceof java.net.Inet6Address)).raw();
    }

    private int runIwarpClient(InetAddress serverAddr, List<Gid> table) {
        PingpongWire.Dest me = iwarpDest(qp.qpn(), localGid(table, serverAddr));
        printAddress("local address:  ", me);
        InetSocketAddress server = new InetSocketAddress(serverAddr, o.port());
        try {
            io.jrdma.tools.Progress.step("connecting to " + server + " (iWARP: MPA over TCP)");
            conn = ctx.connectionManager().connect(qp, server, connParam(), Duration.ofNanos(timeoutNanos));
        } catch (RdmaException e) {
            throw new SideChannelException("Couldn't connect to " + serverAddr.getHostAddress() + ":" + o.port()
                    + " (iWARP: MPA over TCP): " + e.getMessage()
                    + (e.errno() == RdmaException.Errno.ECONNREFUSED ? " (is 'jrdma pingpong -d <iwarp device>'"
                    + " running there? an iWARP peer is always jrdma)" : ""));
        }
        printAddress("remote address: ", iwarpDest(conn.peerQpn(), Gid.of(serverAddr).raw()));
        pending = RECV_WRID;
        if (o.check()) {
            for (long i = 0; i < o.size(); i += page) {
                buf.set(ValueLayout.JAVA_BYTE, i, (byte) 0);
            }
        }
        postSend();
        pending |= SEND_WRID;
        return loop();
    }

    private int runIwarpServer(List<Gid> table) {
        ConnectionManager.ConnectRequest cr;
        try (ConnectionManager.Listener l = ctx.connectionManager().listen(new InetSocketAddress(o.port()))) {
            listening.accept(l.address().getPort());
            io.jrdma.tools.Progress.step("waiting for a client on TCP port " + l.address().getPort());
            long deadline = System.nanoTime() + timeoutNanos;
            while ((cr = l.poll(Duration.ofMillis(200))) == null) {
                if (o.waitClient() && System.nanoTime() - deadline > 0) {
                    throw new SideChannelException("no client connected within " + o.timeoutSec() + " s");
                }
            }
            InetAddress peer = cr.peerAddress().getAddress();
            printAddress("local address:  ", iwarpDest(qp.qpn(), localGid(table, peer)));
            try {
                conn = cr.accept(qp, connParam(), Duration.ofNanos(timeoutNanos));
            } catch (RdmaException e) {
                throw new SideChannelException("Couldn't accept the client " + peer.getHostAddress() + " (iWARP: MPA"
                        + " over TCP): " + e.getMessage());
            }
            printAddress("remote address: ", iwarpDest(conn.peerQpn(), Gid.of(peer).raw()));
        } catch (RdmaException e) {
            throw new SideChannelException("Couldn't listen on TCP port " + o.port() + ": " + e.getMessage()
                    + (e.errno() == RdmaException.Errno.EADDRINUSE ? ": " + SideChannel.PORT_BUSY : ""));
        }
        pending = RECV_WRID;
        return loop();
    }

    /** @return the GID index of the address the TCP connection runs over, else perftest's choice */
    private static int routeGid(List<Gid> table, InetAddress local) {
        int i = Roce.gidIndexOf(table, local);
        return i >= 0 ? i : Roce.bestGidIndex(table, false);
    }

    /** A peer that sent the zero GID (ibv_rc_pingpong without -g): reach it at its TCP address. */
    private static PingpongWire.Dest withPeerGid(PingpongWire.Dest d, InetAddress tcpPeer) {
        if (!Roce.isZero(d.gid())) {
            return d;
        }
        return new PingpongWire.Dest(d.lid(), d.qpn(), d.psn(), Gid.of(tcpPeer).raw());
    }

    /** A GID of each IP version, to look up the other family in a table. */
    private static final byte[] V4_SAMPLE = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 127, 0, 0, 1};
    private static final byte[] V6_SAMPLE = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

    private static String family(byte[] gid) {
        return Roce.isIpv4Mapped(gid) ? "IPv4" : "IPv6";
    }

    /**
     * RoCEv2 runs over one IP version: a peer's GID of the other one (two ends on one host, one given
     * {@code -g 0}, a link-local IPv6 GID, the other reaching it over IPv4) fails here, before RTR, with
     * the {@code -g} that would do on this side.
     */
    private void checkFamilies(int sgid, byte[] mine, byte[] peer, List<Gid> table, String peerRole) {
        if (Roce.isIpv4Mapped(mine) == Roce.isIpv4Mapped(peer)) {
            return;
        }
        int alt = Roce.sameFamily(table, peer, -1);
        throw new Failure("the " + peerRole + "'s GID " + CFormat.inetNtop6(peer) + " is " + family(peer)
                + " and this side's GID " + sgid + " (" + CFormat.inetNtop6(mine) + " on " + ctx.device().name()
                + ") is " + family(mine) + ": RoCEv2 needs both of one IP version. " + (alt >= 0
                ? "Give this side -g " + alt + " (" + CFormat.inetNtop6(table.get(alt).raw()) + ")"
                : ctx.device().name() + " has no " + family(peer) + " GID: give the " + peerRole + " an " + family(mine)
                + " one") + ", or run both sides without -g (they then pick matching GIDs)");
    }

    /**
     * {@code pp_connect_ctx}: RTR then RTS with rc_pingpong's attributes; uc_pingpong's (path, MTU and PSNs
     * only); ud_pingpong's (no attributes but the send PSN, then an address handle to the peer, hop limit 1).
     */
    private void connect(PingpongWire.Dest me, PingpongWire.Dest rem, int sgid) {
        if (o.type() != QpType.RC) {
            connectUnreliable(me, rem, sgid);
            return;
        }
        try {
            qp.modify(new QpAttr().state(QpState.RTR)
                    .av(new AddressVector(Gid.of(rem.gid()), sgid, 1, 0, Roce.udpPort(rem.lid())))
                    .pathMtu(Mtu.ofBytes(o.mtu())).destQpn(rem.qpn()).rqPsn(rem.psn()).maxDestRdAtomic(1)
                    .minRnrTimer(12));
        } catch (RdmaException e) {
            throw new Failure("Failed to modify QP to RTR: " + e.getMessage());
        }
        try {
            qp.modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(me.psn())
                    .maxRdAtomic(1));
        } catch (RdmaException e) {
            throw new Failure("Failed to modify QP to RTS: " + e.getMessage());
        }
    }

    private void connectUnreliable(PingpongWire.Dest me, PingpongWire.Dest rem, int sgid) {
        AddressVector av = new AddressVector(Gid.of(rem.gid()), sgid, 1, 0, Roce.udpPort(rem.lid()));
        try {
            qp.modify(ud() ? new QpAttr().state(QpState.RTR) : new QpAttr().state(QpState.RTR).av(av)
                    .pathMtu(Mtu.ofBytes(o.mtu())).destQpn(rem.qpn()).rqPsn(rem.psn()));
        } catch (RdmaException e) {
            throw new Failure("Failed to modify QP to RTR: " + e.getMessage());
        }
        try {
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(me.psn()));
        } catch (RdmaException e) {
            throw new Failure("Failed to modify QP to RTS: " + e.getMessage());
        }
        if (ud()) {
            try {
                AhAttr a = AhAttr.of(av); // on the QP's port, as ud_pingpong's ah_attr.port_num = ib_port
                ah = pd.createAh(new AhAttr(a.dgid(), a.sgidIndex(), a.hopLimit(), a.trafficClass(), a.flowLabel(),
                        a.sl(), o.ibPort(), a.udpPort()));
            } catch (RdmaException e) {
                throw new Failure("Failed to create AH: " + e.getMessage());
            }
            remoteQpn = rem.qpn();
        }
    }

    private void postSend() {
        if (ud()) { // ud_pingpong sends from behind the GRH room
            sendWr.reset().wrId(SEND_WRID).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, mr.address() + Grh.LENGTH, o.size(), mr.lkey()).ud(ah, remoteQpn, UD_QKEY);
        } else {
            sendWr.reset().wrId(SEND_WRID).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, mr.address(), o.size(), mr.lkey());
        }
        int rc = retryFull(() -> qp.postSend(sendWr));
        if (rc != 0) {
            throw new Failure("Couldn't post send (" + RdmaException.Errno.of(rc) + ", QP state " + qp.state() + ")");
        }
    }

    /** The completion loop of rc_pingpong's main, then the two result lines (and -c on the server). */
    private int loop() {
        io.jrdma.tools.Progress.step(() -> "ping-ponging: " + scnt + " of " + o.iters() + " sends and " + rcnt
                + " of " + o.iters() + " receives completed");
        WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion()};
        long start = System.nanoTime();
        long lastProgress = start;
        int idle = 0;
        while (rcnt < o.iters() || scnt < o.iters()) {
            int ne;
            if (channel != null) {
                CompletionQueue fired = channel.await(Duration.ofMillis(100));
                if (fired != null) {
                    cq.requestNotify(false);
                }
                ne = cq.poll(wcs);
            } else {
                ne = cq.poll(wcs);
            }
            if (ne == 0) {
                if (channel != null || (++idle & 1023) == 0) {
                    long now = System.nanoTime();
                    if (now - lastProgress > timeoutNanos) {
                        throw new Failure("timed out: no completion for " + o.timeoutSec() + " s after " + scnt
                                + " sends and " + rcnt + " receives of " + o.iters() + " (is the peer still running?"
                                + " see --timeout; " + packets() + ")");
                    }
                }
                continue;
            }
            idle = 0;
            lastProgress = System.nanoTime();
            for (int i = 0; i < ne; i++) {
                parse(wcs[i]);
            }
            if (channel != null) {
                // drain what else is there: the next event fires only for completions after the re-arm
                while ((ne = cq.poll(wcs)) > 0) {
                    for (int i = 0; i < ne; i++) {
                        parse(wcs[i]);
                    }
                }
            }
        }
        long end = System.nanoTime();
        linger();
        float usec = (float) ((end - start) / 1000);
        long bytes = (long) o.size() * o.iters() * 2;
        out.println(bytes + " bytes in " + CFormat.fixed(usec / 1000000., 2) + " seconds = "
                + CFormat.fixed(bytes * 8. / usec, 2) + " Mbit/sec");
        out.println(o.iters() + " iters in " + CFormat.fixed(usec / 1000000., 2) + " seconds = "
                + CFormat.fixed(usec / o.iters(), 2) + " usec/iter");
        int rc = 0;
        if (!client && o.check()) {
            rc = validate();
        }
        out.flush();
        return rc;
    }

    /** {@code parse_single_wc}. */
    private void parse(WorkCompletion wc) {
        if (wc.status() == WcStatus.WR_FLUSH_ERR && wc.wrId() == RECV_WRID && rcnt >= o.iters()) {
            return; // a spare receive flushed by the peer closing after its last message (iWARP: the TCP FIN)
        }
        if (wc.status() != WcStatus.SUCCESS) {
            throw new Failure("Failed status " + wc.status() + " (" + wc.status().ordinal() + ") for wr_id "
                    + wc.wrId() + hint(wc.status()));
        }
        int id = (int) wc.wrId();
        switch (id) {
            case SEND_WRID -> scnt++;
            case RECV_WRID -> {
                if (--routs <= 1) {
                    routs += postRecv(o.rxDepth() - routs);
                    if (routs < o.rxDepth()) {
                        throw new Failure("Couldn't post receive (" + routs + ")");
                    }
                }
                rcnt++;
            }
            default -> throw new Failure("Completion for unknown wr_id " + id);
        }
        pending &= ~id;
        if (scnt < o.iters() && pending == 0) {
            postSend();
            pending = RECV_WRID | SEND_WRID;
        }
    }

    /** @return the engine's packet counters that tell where packets went */
    private String packets() {
        java.util.Map<String, Long> c = ctx.counters();
        StringBuilder sb = new StringBuilder("packets: ");
        for (String k : List.of("sent_pkts", "rcvd_pkts", "rcvd_unknown_qp", "rcvd_bad_addr", "rcvd_bad_state",
                "rcvd_icrc_err", "out_of_seq_request", "rcvd_rnr_err")) {
            sb.append(k).append(' ').append(c.getOrDefault(k, 0L)).append(k.equals("rcvd_rnr_err") ? "" : ", ");
        }
        return sb.toString();
    }

    private static String hint(WcStatus s) {
        return switch (s) {
            case RETRY_EXC_ERR -> " (the peer stopped answering: is it running, with the same -m?)";
            case RNR_RETRY_EXC_ERR -> " (the peer had no receive posted)";
            case LOC_LEN_ERR -> " (the peer's message is longer than -s: use the same -s on both sides)";
            case REM_INV_REQ_ERR -> " (the peer refused the message: is its -s smaller?)";
            default -> "";
        };
    }

    /**
     * {@code -c}: rc_pingpong's client zeroes the first byte of each page (the host's) before it sends, the
     * server checks those bytes. jrdma also checks that every other byte still has the fill
     * value both sides start with, and a bad page makes the exit code 1.
     */
    private int validate() {
        int bad = 0;
        for (long p = 0; p * page < o.size(); p++) {
            long from = p * page;
            long to = Math.min(o.size(), from + page);
            boolean ok = buf.get(ValueLayout.JAVA_BYTE, from) == 0;
            for (long i = from + 1; ok && i < to; i++) {
                ok = buf.get(ValueLayout.JAVA_BYTE, i) == FILL;
            }
            if (!ok) {
                out.println("invalid data in page " + p);
                bad++;
            }
        }
        if (bad > 0) {
            err.println("jrdma pingpong: " + bad + " page" + (bad == 1 ? "" : "s") + " of the received data differ"
                    + " from what the client sends with -c");
            return 1;
        }
        return 0;
    }

    /** Keeps the engine turning briefly so the last acknowledgements leave before the QP goes away. */
    private void linger() {
        if (ctx.options().threadingMode() == ThreadingMode.DEDICATED) {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
            return;
        }
        Roce.linger(ctx, 50_000_000L, 500);
    }

    private void tearDown() {
        close(conn);
        close(qp);
        close(ah);
        close(mr);
        close(cq);
        close(channel);
        close(pd);
        if (arena != null) {
            arena.close();
        }
        close(ctx);
    }

    /** Teardown: closes {@code c} if there is one, ignoring what it throws (the run's result is known). */
    static void close(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // teardown: the result is known
        }
    }

    /** For tests: the server's buffer (to damage a byte before -c checks it). */
    MemorySegment buffer() {
        return buf;
    }
}

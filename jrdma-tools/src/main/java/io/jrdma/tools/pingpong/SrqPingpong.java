package io.jrdma.tools.pingpong;

import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.oob.CFormat;
import io.jrdma.tools.oob.Roce;
import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.IdleStrategy;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
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
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqInitAttr;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * One end of {@code ibv_srq_pingpong} (rdma-core {@code libibverbs/examples/srq_pingpong.c}): {@code -q}
 * RC QPs whose receives all come from one SRQ of {@code rx-depth} entries; the address exchange sends
 * 256 address messages each way (the tool's {@code MAX_QP}; those beyond {@code -q} all zeros), the
 * client's first, then the client's {@code "done"}; every QP is connected to the peer QP of its index
 * with the first address's GID. The client sends on every QP; a QP sends again once its send and a
 * message on it both completed, until {@code iters} messages went each way in all (not per QP).
 * RoCE only, as the tool (siw cannot be connected by hand).
 */
final class SrqPingpong {
    /** {@code MAX_QP} of srq_pingpong.c: the address messages exchanged, whatever {@code -q}. */
    static final int MAX_QP = 256;
    static final int RECV_WRID = 1;
    static final int SEND_WRID = 2;

    private final Pingpong.Options o;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean client;
    private final long timeoutNanos;
    private final IntConsumer listening;
    private final int numQp;

    private DeviceContext ctx;
    private Arena arena;
    private ProtectionDomain pd;
    private CompletionChannel channel;
    private CompletionQueue cq;
    private SharedReceiveQueue srq;
    private QueuePair[] qps;
    private MemoryRegion mr;
    private final RecvWorkRequest recvWr = new RecvWorkRequest(1);
    private final SendWorkRequest sendWr = new SendWorkRequest(1);
    private int[] pending;
    private int routs;
    private int scnt;
    private int rcnt;

    SrqPingpong(Pingpong.Options o, PrintStream out, PrintStream err, IntConsumer listening) {
        this.o = o;
        this.out = out;
        this.err = err;
        this.listening = listening;
        this.client = o.host() != null;
        this.timeoutNanos = o.timeoutSec() * 1_000_000_000L;
        this.numQp = o.numQp();
    }

    int run() {
        if (numQp > o.rxDepth()) {
            throw new Pingpong.BadValue("rx_depth " + o.rxDepth() + " is too small for " + numQp
                    + " QPs -- must have at least one receive per QP.");
        }
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
        if (dev.transport() != Transport.ROCE_V2) {
            throw new Pingpong.BadValue("--srq speaks ibv_srq_pingpong, which connects its QPs by hand: RoCE devices"
                    + " only (" + dev.name() + " is iWARP, whose QPs only its connection manager connects)");
        }
        if (io.jrdma.tools.oob.EngineWarmup.warms(dev)) {
            io.jrdma.tools.oob.EngineWarmup.run(io.jrdma.tools.oob.EngineWarmup.DEFAULT_NANOS);
        }
        ctx = dev.open(DeviceOptions.defaults().with(io.jrdma.soft.SoftRoceOptions.defaults().withAnyIpv4Id(true))
                .withThreadingMode(o.events() ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER)
                .withIdleStrategy(IdleStrategy.BACKOFF));
        try {
            String warning = Roce.portWarning(ctx);
            if (warning != null) {
                err.println("jrdma pingpong: " + warning);
            }
            List<Gid> table = Pingpong.port(ctx, o.ibPort()).gids();
            if (o.gidIndex() >= 0 && (o.gidIndex() >= table.size() || Roce.isZero(table.get(o.gidIndex()).raw()))) {
                throw new Pingpong.BadValue("can't read sgid of index " + o.gidIndex() + " on " + dev.name());
            }
            setUp();
            return client ? runClient(serverAddr, table) : runServer(table);
        } finally {
            tearDown();
        }
    }

    /** {@code pp_init_ctx}: buffer, CQ of rx-depth + num-qp, the SRQ, the QPs in INIT; then rx-depth receives. */
    private void setUp() {
        arena = Arena.ofShared();
        MemorySegment buf = arena.allocate(o.size(), HostPage.size()); // srq_pingpong: memalign(page_size, size)
        pd = ctx.allocPd();
        mr = pd.register(buf, Access.LOCAL_WRITE);
        channel = o.events() ? ctx.createCompletionChannel() : null;
        cq = ctx.createCq(o.rxDepth() + numQp, channel);
        srq = pd.createSrq(SrqInitAttr.of(o.rxDepth(), 1));
        qps = new QueuePair[numQp];
        for (int i = 0; i < numQp; i++) {
            qps[i] = pd.createQp(new QpInitAttr(QpType.RC, cq, cq, 1, 1, 1, 1, 0, false, srq));
        }
        for (QueuePair qp : qps) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(o.ibPort()).accessFlags(0));
        }
        routs = postRecv(o.rxDepth());
        if (routs < o.rxDepth()) {
            throw new Pingpong.Failure("Couldn't post receive (" + routs + ")");
        }
        if (channel != null) {
            cq.requestNotify(false);
        }
        pending = new int[numQp];
    }

    private int postRecv(int n) {
        recvWr.reset().wrId(RECV_WRID).sge(0, mr.address(), o.size(), mr.lkey());
        int i = 0;
        while (i < n && srq.postRecv(recvWr) == 0) {
            i++;
        }
        return i;
    }

    /** This side's 256 address messages: one per QP, then zeros. */
    private byte[] myDests(PingpongWire.Dest[] me) {
        byte[] all = new byte[MAX_QP * PingpongWire.SIZE];
        PingpongWire.Dest zero = new PingpongWire.Dest(0, 0, 0, new byte[16]);
        for (int i = 0; i < MAX_QP; i++) {
            System.arraycopy(PingpongWire.encode(i < numQp ? me[i] : zero), 0, all, i * PingpongWire.SIZE,
                    PingpongWire.SIZE);
        }
        return all;
    }

    private PingpongWire.Dest[] dests(byte[] gid) {
        SecureRandom rnd = new SecureRandom();
        PingpongWire.Dest[] me = new PingpongWire.Dest[numQp];
        for (int i = 0; i < numQp; i++) {
            me[i] = new PingpongWire.Dest(Roce.lid(ctx), qps[i].qpn(), rnd.nextInt(1 << 24), gid);
            print("local address:  ", me[i]);
        }
        return me;
    }

    /** Reads the peer's 256 address messages; a zero GID (the tool without -g) becomes the TCP peer's address. */
    private PingpongWire.Dest[] readDests(SideChannel sc, SideChannel.Pump pump, String who) {
        PingpongWire.Dest[] rem = new PingpongWire.Dest[MAX_QP];
        for (int i = 0; i < MAX_QP; i++) {
            PingpongWire.Dest d = PingpongWire.decode(sc.read(PingpongWire.SIZE, who + "'s address " + i, pump));
            if (Roce.isZero(d.gid())) {
                d = new PingpongWire.Dest(d.lid(), d.qpn(), d.psn(), Gid.of(sc.remoteAddress()).raw());
            }
            rem[i] = d;
        }
        return rem;
    }

    private void print(String label, PingpongWire.Dest d) {
        out.println("  " + label + "LID 0x" + CFormat.hex(d.lid(), 4) + ", QPN 0x" + CFormat.hex(d.qpn(), 6)
                + ", PSN 0x" + CFormat.hex(d.psn(), 6) + ", GID " + CFormat.inetNtop6(d.gid()));
    }

    private static int gidFor(List<Gid> table, InetAddress local) {
        int i = Roce.gidIndexOf(table, local);
        return i >= 0 ? i : Roce.bestGidIndex(table, false);
    }

    private int runClient(InetAddress serverAddr, List<Gid> table) {
        PingpongWire.Dest[] me;
        PingpongWire.Dest[] rem;
        int sgid;
        SideChannel.Pump pump = Roce.pump(ctx);
        try (SideChannel sc = SideChannel.connect(new InetSocketAddress(serverAddr, o.port()), timeoutNanos)) {
            sgid = o.gidIndex() >= 0 ? o.gidIndex() : gidFor(table, sc.localAddress());
            me = dests(table.get(sgid).raw());
            sc.write(myDests(me), "the local addresses");
            rem = readDests(sc, pump, "the server");
            sc.write(PingpongWire.DONE, "\"done\"");
        }
        printRemote(rem);
        connect(me, rem, sgid);
        for (int i = 0; i < numQp; i++) {
            postSend(i);
            pending[i] = SEND_WRID | RECV_WRID;
        }
        return loop();
    }

    private int runServer(List<Gid> table) {
        PingpongWire.Dest[] me = null;
        PingpongWire.Dest[] rem;
        int sgid = o.gidIndex();
        SideChannel.Pump pump = Roce.pump(ctx);
        if (sgid >= 0) {
            me = dests(table.get(sgid).raw());
        }
        try (SideChannel.Listener l = SideChannel.listen(new InetSocketAddress(o.port()))) {
            listening.accept(l.port());
            try (SideChannel sc = l.accept(o.waitClient() ? timeoutNanos : 0, timeoutNanos, pump)) {
                l.close();
                rem = readDests(sc, pump, "the client");
                if (me == null) {
                    sgid = Roce.sameFamily(table, rem[0].gid(), gidFor(table, sc.localAddress()));
                    if (sgid < 0) {
                        throw new Pingpong.Failure("the client's GID " + CFormat.inetNtop6(rem[0].gid())
                                + " is of an IP version " + ctx.device().name() + " has no address of: give -g");
                    }
                    me = dests(table.get(sgid).raw());
                }
                connect(me, rem, sgid);
                sc.write(myDests(me), "the local addresses");
                byte[] done = sc.read(PingpongWire.DONE.length, "\"done\"", pump);
                if (!PingpongWire.isDone(done)) {
                    throw new SideChannelException("the client answered " + SideChannel.printable(done, done.length)
                            + " instead of \"done\"");
                }
            }
        }
        printRemote(rem);
        for (int i = 0; i < numQp; i++) {
            pending[i] = RECV_WRID;
        }
        return loop();
    }

    private void printRemote(PingpongWire.Dest[] rem) {
        for (int i = 0; i < numQp; i++) {
            print("remote address: ", rem[i]);
        }
        out.flush();
    }

    /** {@code pp_connect_ctx}: QP i to the peer's QP i, all through the first address's GID, as the tool. */
    private void connect(PingpongWire.Dest[] me, PingpongWire.Dest[] rem, int sgid) {
        for (int i = 0; i < numQp; i++) {
            if (rem[i].qpn() == 0) {
                throw new Pingpong.Failure("the peer sent no QP for index " + i + ": it runs fewer QPs than -q "
                        + numQp + " (use the same -q on both sides)");
            }
            try {
                qps[i].modify(new QpAttr().state(QpState.RTR)
                        .av(new AddressVector(Gid.of(rem[0].gid()), sgid, 1, 0, Roce.udpPort(rem[i].lid())))
                        .pathMtu(Mtu.ofBytes(o.mtu())).destQpn(rem[i].qpn()).rqPsn(rem[i].psn()).maxDestRdAtomic(1)
                        .minRnrTimer(12));
            } catch (RdmaException e) {
                throw new Pingpong.Failure("Failed to modify QP[" + i + "] to RTR: " + e.getMessage());
            }
            try {
                qps[i].modify(new QpAttr().state(QpState.RTS).timeout(14).retryCnt(7).rnrRetry(7).sqPsn(me[i].psn())
                        .maxRdAtomic(1));
            } catch (RdmaException e) {
                throw new Pingpong.Failure("Failed to modify QP[" + i + "] to RTS: " + e.getMessage());
            }
        }
    }

    private void postSend(int i) {
        sendWr.reset().wrId(SEND_WRID).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, mr.address(), o.size(), mr.lkey());
        int rc = qps[i].postSend(sendWr);
        if (rc != 0) {
            throw new Pingpong.Failure("Couldn't post send (" + RdmaException.Errno.of(rc) + ")");
        }
    }

    private int findQp(int qpn) {
        for (int i = 0; i < numQp; i++) {
            if (qps[i].qpn() == qpn) {
                return i;
            }
        }
        return -1;
    }

    /** The completion loop of srq_pingpong's main, then its two result lines. */
    private int loop() {
        WorkCompletion[] wcs = new WorkCompletion[numQp + o.rxDepth()];
        for (int i = 0; i < wcs.length; i++) {
            wcs[i] = new WorkCompletion();
        }
        long start = System.nanoTime();
        long lastProgress = start;
        while (rcnt < o.iters() || scnt < o.iters()) {
            if (channel != null && channel.await(Duration.ofMillis(100)) != null) {
                cq.requestNotify(false);
            } else if (channel == null) {
                ctx.progress();
            }
            int ne = cq.poll(wcs);
            if (ne == 0) {
                if (System.nanoTime() - lastProgress > timeoutNanos) {
                    throw new Pingpong.Failure("timed out: no completion for " + o.timeoutSec() + " s after " + scnt
                            + " sends and " + rcnt + " receives of " + o.iters() + " (is the peer still running?)");
                }
                continue;
            }
            lastProgress = System.nanoTime();
            for (int i = 0; i < ne; i++) {
                parse(wcs[i]);
            }
        }
        long end = System.nanoTime();
        if (channel == null) {
            Roce.linger(ctx, 50_000_000L, 500);
        } else {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
        }
        float usec = (float) ((end - start) / 1000);
        long bytes = (long) o.size() * o.iters() * 2;
        out.println(bytes + " bytes in " + CFormat.fixed(usec / 1000000., 2) + " seconds = "
                + CFormat.fixed(bytes * 8. / usec, 2) + " Mbit/sec");
        out.println(o.iters() + " iters in " + CFormat.fixed(usec / 1000000., 2) + " seconds = "
                + CFormat.fixed(usec / o.iters(), 2) + " usec/iter");
        out.flush();
        return 0;
    }

    private void parse(WorkCompletion wc) {
        if (wc.status() != WcStatus.SUCCESS) {
            throw new Pingpong.Failure("Failed status " + wc.status() + " (" + wc.status().ordinal() + ") for wr_id "
                    + wc.wrId());
        }
        int q = findQp(wc.qpNum());
        if (q < 0) {
            throw new Pingpong.Failure("Couldn't find QPN " + CFormat.hex(wc.qpNum(), 6));
        }
        int id = (int) wc.wrId();
        switch (id) {
            case SEND_WRID -> scnt++;
            case RECV_WRID -> {
                if (--routs <= numQp) {
                    routs += postRecv(o.rxDepth() - routs);
                    if (routs < o.rxDepth()) {
                        throw new Pingpong.Failure("Couldn't post receive (" + routs + ")");
                    }
                }
                rcnt++;
            }
            default -> throw new Pingpong.Failure("Completion for unknown wr_id " + id);
        }
        pending[q] &= ~id;
        if (scnt < o.iters() && pending[q] == 0) {
            postSend(q);
            pending[q] = RECV_WRID | SEND_WRID;
        }
    }

    private void tearDown() {
        if (qps != null) {
            for (QueuePair qp : qps) {
                Pingpong.close(qp);
            }
        }
        Pingpong.close(srq);
        Pingpong.close(mr);
        Pingpong.close(cq);
        Pingpong.close(channel);
        Pingpong.close(pd);
        if (arena != null) {
            arena.close();
        }
        Pingpong.close(ctx);
    }
}

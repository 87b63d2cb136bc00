package io.jrdma.engine.roce;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
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
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.DatagramChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Devices, GID tables, address resolution, UDP ports, IPv4 and IPv6 paths, over real sockets. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeviceTest {
    @Test
    void loopbackDeviceHasItsAddressesAsGids() throws Exception {
        Device lo = Rdma.device("roce_lo");
        assertEquals(Transport.ROCE_V2, lo.transport());
        assertEquals("lo", lo.netdev());
        assertTrue(lo.gids().contains(Gid.parse("127.0.0.1")), lo.gids().toString());
        assertEquals("0000:0000:0000:0000:0000:ffff:7f00:0001", Gid.parse("127.0.0.1").toString());
        assertEquals(InetAddress.getByName("127.0.0.1"), Gid.parse("127.0.0.1").toInetAddress());
        ResolvedAddress r = Rdma.resolve(InetAddress.getByName("127.0.0.1"), Transport.ROCE_V2);
        assertEquals("roce_lo", r.device().name());
        assertEquals(Gid.parse("127.0.0.1"), r.sgid());
        if (lo.gids().contains(Gid.parse("::1"))) {
            ResolvedAddress r6 = Rdma.resolve(InetAddress.getByName("::1"), Transport.ROCE_V2);
            assertEquals(Gid.parse("::1"), r6.sgid());
            assertEquals(lo.gids().indexOf(Gid.parse("::1")), r6.sgidIndex());
        }
        RdmaException e = assertThrows(RdmaException.class, () -> Rdma.device("nope0"));
        assertTrue(e.getMessage().contains("roce_lo"), e.getMessage());
    }

    @Test
    void takenPortFallsBackOrFailsClearly() throws Exception {
        InetAddress a = InetAddress.getByName("127.0.0.1");
        try (DatagramChannel squatter = DatagramChannel.open().bind(new InetSocketAddress(a, 0))) {
            int taken = ((InetSocketAddress) squatter.getLocalAddress()).getPort();
            Device lo = Rdma.device("roce_lo");
            try (DeviceContext ctx = lo.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER)
                    .with(SoftRoceOptions.defaults().withAddresses(List.of(a)).withUdpPort(taken, true)))) {
                assertNotEquals(taken, ctx.queryPort().udpPort());
                assertTrue(ctx.queryPort().udpPort() > 0);
            }
            RdmaException e = assertThrows(RdmaException.class, () -> lo.open(DeviceOptions.defaults()
                    .with(SoftRoceOptions.defaults().withAddresses(List.of(a)).withUdpPort(taken, false))));
            assertEquals(RdmaException.Errno.EADDRINUSE, e.errno());
            assertTrue(e.getMessage().contains(String.valueOf(taken)), e.getMessage());
        }
    }

    @Test
    void gidTableFollowsAddressChanges() throws Exception {
        List<InetAddress> addrs = new CopyOnWriteArrayList<>(List.of(InetAddress.getByName("127.0.0.1")));
        SoftRoceDevice dev = SoftRoceDevice.forTest("fake0", () -> List.copyOf(addrs));
        try (DeviceContext ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER)
                .with(SoftRoceOptions.defaults().withUdpPort(0, true)))) {
            Context c = (Context) ctx;
            assertEquals(List.of(Gid.parse("127.0.0.1")), ctx.queryPort().gids());
            addrs.add(InetAddress.getByName("127.0.0.6"));
            c.refreshGidsNow();
            assertEquals(List.of(Gid.parse("127.0.0.1"), Gid.parse("127.0.0.6")), ctx.queryPort().gids());
            addrs.removeFirst();
            c.refreshGidsNow();
            assertEquals(Gid.parse("127.0.0.6"), ctx.gid(1), "other indices keep their meaning");
            assertEquals(-1, ctx.gidIndexOf(Gid.parse("127.0.0.1")));
            assertEquals(Gid.of(new byte[16]), ctx.gid(0), "a vanished address leaves an empty entry");
        }
    }

    /** A server (DEDICATED) and a client (INVOKER) connected through the CM; one WRITE and one READ. */
    private static void writeAndRead(DeviceOptions serverOpts, DeviceOptions clientOpts, InetAddress listen)
            throws Exception {
        Device lo = Rdma.device("roce_lo");
        try (Arena arena = Arena.ofShared();
             DeviceContext sctx = lo.open(serverOpts);
             DeviceContext cctx = lo.open(clientOpts)) {
            ProtectionDomain spd = sctx.allocPd();
            CompletionQueue scq = sctx.createCq(16);
            QueuePair sqp = spd.createQp(QpInitAttr.rc(scq));
            MemorySegment sbuf = arena.allocate(8192, 64);
            MemoryRegion smr = spd.register(sbuf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            ProtectionDomain cpd = cctx.allocPd();
            CompletionQueue ccq = cctx.createCq(16);
            QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
            MemorySegment cbuf = arena.allocate(8192, 64);
            MemoryRegion cmr = cpd.register(cbuf, Access.LOCAL_WRITE);
            try (ConnectionManager.Listener l = sctx.connectionManager().listen(new InetSocketAddress(listen, 0))) {
                CompletableFuture<ConnectionManager.Connection> accepted = CompletableFuture.supplyAsync(() ->
                        l.poll(Duration.ofSeconds(10)).accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10)));
                ConnectionManager.Connection cc = cctx.connectionManager().connect(cqp,
                        new InetSocketAddress(listen, l.address().getPort()), ConnParam.defaults(), Duration.ofSeconds(10));
                ConnectionManager.Connection sc = accepted.get(10, TimeUnit.SECONDS);
                for (int i = 0; i < 3000; i++) {
                    cbuf.set(ValueLayout.JAVA_BYTE, i, (byte) i);
                }
                post(cqp, ccq, new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sge(0, cmr, 0, 3000)
                        .remote(smr.address() + 100, smr.rkey()));
                assertEquals(-1, sbuf.asSlice(100, 3000).mismatch(cbuf.asSlice(0, 3000)));
                post(cqp, ccq, new SendWorkRequest().opcode(WrOpcode.RDMA_READ).sge(0, cmr, 4096, 3000)
                        .remote(smr.address() + 100, smr.rkey()));
                assertEquals(-1, cbuf.asSlice(4096, 3000).mismatch(cbuf.asSlice(0, 3000)));
                cc.close();
                sc.close();
            }
            cqp.close();
            cmr.close();
            ccq.close();
            cpd.close();
            sqp.close();
            smr.close();
            scq.close();
            spd.close();
        }
    }

    private static void post(QueuePair qp, CompletionQueue cq, SendWorkRequest wr) {
        assertEquals(0, qp.postSend(wr.flags(SendFlags.SIGNALED)));
        WorkCompletion wc = new WorkCompletion();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (cq.poll(wc) == 0) {
            assertTrue(System.nanoTime() < deadline, "no completion");
        }
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
    }

    @Test
    void ipv6PathWorksEndToEnd() throws Exception {
        Device lo = Rdma.device("roce_lo");
        org.junit.jupiter.api.Assumptions.assumeTrue(lo.gids().contains(Gid.parse("::1")), "no ::1 on lo");
        writeAndRead(DeviceOptions.defaults(), DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER),
                InetAddress.getByName("::1"));
    }

    @Test
    void distinctLoopbackAddressesShareTheRoceV2Port() throws Exception {
        InetAddress s = InetAddress.getByName("127.0.0.2");
        InetAddress c = InetAddress.getByName("127.0.0.3");
        DeviceOptions so = DeviceOptions.defaults().with(SoftRoceOptions.defaults().withAddresses(List.of(s))
                .withUdpPort(4791, false));
        DeviceOptions co = DeviceOptions.defaults().with(SoftRoceOptions.defaults().withAddresses(List.of(c))
                .withUdpPort(4791, false))
                .withThreadingMode(ThreadingMode.INVOKER);
        boolean free;
        try (DatagramChannel probe = DatagramChannel.open().bind(new InetSocketAddress(s, 4791))) {
            free = true;
        } catch (java.io.IOException e) {
            free = false;
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(free, "UDP 4791 is taken on this host (kernel RoCE?)");
        writeAndRead(so, co, s);
    }

    @Test
    void everyIdleStrategyServesAPassiveTarget() throws Exception {
        for (io.jrdma.verbs.IdleStrategy idle : io.jrdma.verbs.IdleStrategy.values()) {
            writeAndRead(DeviceOptions.defaults().withIdleStrategy(idle),
                    DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER), InetAddress.getByName("127.0.0.1"));
        }
    }

    @Test
    void socketsNoQpUsesAreStillDrained() throws Exception {
        Device lo = Rdma.device("roce_lo");
        InetAddress a1 = InetAddress.getByName("127.0.0.1");
        InetAddress a2 = InetAddress.getByName("127.0.0.4");
        try (DeviceContext ctx = lo.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER)
                .with(SoftRoceOptions.defaults().withAddresses(List.of(a1, a2)).withUdpPort(0, true)));
             DatagramChannel stray = DatagramChannel.open()) {
            int port = ctx.queryPort().udpPort();
            stray.send(java.nio.ByteBuffer.wrap(new byte[40]), new InetSocketAddress(a2, port));
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (((Context) ctx).counter(Counter.RCVD_PKTS) == 0) {
                ctx.progress();
                assertTrue(System.nanoTime() < deadline, "the unused socket was never read");
            }
            assertEquals(1, ((Context) ctx).counter(Counter.RCVD_PKTS));
        }
    }
}

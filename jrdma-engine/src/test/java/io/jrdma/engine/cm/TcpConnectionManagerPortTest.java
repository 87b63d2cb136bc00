package io.jrdma.engine.cm;

import io.jrdma.engine.roce.SoftRoceDevice;
import io.jrdma.soft.SoftRoceOptions;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionManager.ConnectRequest;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The port a connection of jrdma's TCP connection manager is on: the first one whose GID table holds the side
 * channel's local address (as {@code Rdma.resolve} names it), searched on every port of the device.
 */
class TcpConnectionManagerPortTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();

    /**
     * A context of a device with one GID table per port, answering only the calls the port search makes; a
     * provider that does not report device attributes when {@code ports} is 0.
     */
    private static DeviceContext ports(int count, Map<Integer, List<Gid>> tables) {
        return (DeviceContext) Proxy.newProxyInstance(DeviceContext.class.getClassLoader(),
                new Class<?>[] {DeviceContext.class}, (proxy, m, a) -> switch (m.getName()) {
                    case "portCount" -> java.lang.reflect.InvocationHandler.invokeDefault(proxy, m, a);
                    case "queryDevice" -> {
                        if (count == 0) {
                            throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "no device attributes");
                        }
                        yield new DeviceAttr("", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                DeviceAttr.AtomicCap.NONE, 0, 0, 0, 0, 0, 0, count, Set.of());
                    }
                    case "gidIndexOf" -> a.length == 1 ? tables.get(1).indexOf((Gid) a[0])
                            : tables.get((Integer) a[0]).indexOf((Gid) a[1]);
                    case "gid" -> a.length == 1 ? tables.get(1).get((Integer) a[0])
                            : tables.get((Integer) a[0]).get((Integer) a[1]);
                    default -> throw new UnsupportedOperationException(m.getName());
                });
    }

    private static Gid gid(String address) throws Exception {
        return Gid.of(InetAddress.getByName(address));
    }

    @Test
    void theAddressIsOnThePortWhoseTableHoldsIt() throws Exception {
        Gid a = gid("10.0.0.1");
        Gid b = gid("10.0.1.1");
        Gid c = gid("fd00::1");
        DeviceContext two = ports(2, Map.of(1, List.of(a), 2, List.of(b, c)));
        assertEquals(2, two.portCount());
        assertEquals(new TcpConnectionManager.Source(1, 0, a), TcpConnectionManager.source(two, a));
        assertEquals(new TcpConnectionManager.Source(2, 0, b), TcpConnectionManager.source(two, b));
        assertEquals(new TcpConnectionManager.Source(2, 1, c), TcpConnectionManager.source(two, c));
        assertNull(TcpConnectionManager.source(two, gid("10.0.2.1")), "an address of no port");
        // the same address on both ports: port 1's, the first (as the kernel's GID cache searches)
        DeviceContext both = ports(2, Map.of(1, List.of(b), 2, List.of(a, b)));
        assertEquals(new TcpConnectionManager.Source(1, 0, b), TcpConnectionManager.source(both, b));
        // a provider without device attributes has port 1 only: port 2's table is not asked for
        DeviceContext silent = ports(0, Map.of(1, List.of(a)));
        assertEquals(1, silent.portCount());
        assertNull(TcpConnectionManager.source(silent, b));
    }

    /**
     * On soft-RoCE (one port) a client QP the caller moved to INIT on port 1 and a server QP in RESET both end on
     * port 1, sending from the side channel's address: its index in port 1's table.
     */
    @Test
    @Timeout(30)
    void onASoftRoceDeviceBothEndsAreOnPortOneSendingFromTheSideChannelsAddress() throws Exception {
        SoftRoceDevice dev = SoftRoceDevice.forTest("lo", () -> List.of(LO));
        DeviceOptions opts = DeviceOptions.defaults().with(SoftRoceOptions.defaults().withUdpPort(0, true));
        try (DeviceContext s = dev.open(opts); DeviceContext c = dev.open(opts);
             ProtectionDomain spd = s.allocPd(); ProtectionDomain cpd = c.allocPd();
             CompletionQueue scq = s.createCq(16); CompletionQueue ccq = c.createCq(16);
             QueuePair sqp = spd.createQp(QpInitAttr.rc(scq)); QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
             Listener l = s.connectionManager().listen(new InetSocketAddress(LO, 0))) {
            assertEquals(1, s.portCount());
            cqp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(0));
            CompletableFuture<Connection> accepted = CompletableFuture.supplyAsync(() -> {
                ConnectRequest r = l.poll(Duration.ofSeconds(10));
                assertNotNull(r, "no request within 10 s");
                return r.accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10));
            });
            try (Connection cc = c.connectionManager().connect(cqp, new InetSocketAddress(LO, l.address().getPort()),
                    ConnParam.defaults(), Duration.ofSeconds(10));
                 Connection sc = accepted.get(10, TimeUnit.SECONDS)) {
                int index = s.gidIndexOf(Gid.of(LO));
                for (QueuePair qp : List.of(cc.qp(), sc.qp())) {
                    QpAttr q = qp.query();
                    assertEquals(QpState.RTS, q.state());
                    assertEquals(1, q.portNum());
                    assertEquals(index, q.av().sgidIndex(), "the side channel's address in port 1's table");
                }
            }
        }
    }
}

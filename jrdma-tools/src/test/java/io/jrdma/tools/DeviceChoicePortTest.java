package io.jrdma.tools;

import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.Rdma;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The port a tool moves its QP to INIT on before connecting ({@link DeviceChoice#portFor}): the one whose GID table
 * holds the connection's local address; on a device of two ports (a context answering only the port and GID calls)
 * and on roce_lo (one port).
 */
class DeviceChoicePortTest {
    /** A context of a device of {@code tables.size()} ports with these GID tables, answering the port and GID calls. */
    private static DeviceContext ports(Map<Integer, List<Gid>> tables) {
        return (DeviceContext) Proxy.newProxyInstance(DeviceContext.class.getClassLoader(),
                new Class<?>[] {DeviceContext.class}, (proxy, m, a) -> switch (m.getName()) {
                    case "portCount" -> java.lang.reflect.InvocationHandler.invokeDefault(proxy, m, a);
                    case "queryDevice" -> new DeviceAttr("", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            DeviceAttr.AtomicCap.NONE, 0, 0, 0, 0, 0, 0, tables.size(), Set.of());
                    case "gidIndexOf" -> a.length == 1 ? tables.get(1).indexOf((Gid) a[0])
                            : tables.get((Integer) a[0]).indexOf((Gid) a[1]);
                    case "queryPort" -> new PortAttr(PortAttr.PortState.ACTIVE, Mtu.MTU_4096, Mtu.MTU_1024,
                            tables.get(a == null ? 1 : (Integer) a[0]), 4791, "Ethernet", List.of());
                    default -> throw new UnsupportedOperationException(m.getName());
                });
    }

    private static Gid gid(String address) throws Exception {
        return Gid.of(InetAddress.getByName(address));
    }

    @Test
    void onADeviceOfTwoPortsTheAddressesPortIsChosen() throws Exception {
        Gid ten = gid("10.0.0.1");
        Gid lo = gid("127.0.0.1");
        DeviceContext two = ports(Map.of(1, List.of(ten), 2, List.of(gid("10.0.1.1"), lo)));
        assertEquals(1, DeviceChoice.portFor(two, InetAddress.getByName("10.0.0.1")), "an address of port 1");
        assertEquals(2, DeviceChoice.portFor(two, InetAddress.getByName("10.0.1.1")), "an address of port 2 (a bind"
                + " address, or a peer on this host)");
        // a peer: the port of the address the route to it leaves from (127.0.0.2 is reached from 127.0.0.1)
        assertEquals(2, DeviceChoice.portFor(two, InetAddress.getByName("127.0.0.2")));
        assertEquals(1, DeviceChoice.portFor(two, InetAddress.getByName("0.0.0.0")), "a wildcard: port 1");
        assertEquals(1, DeviceChoice.portFor(two, null));
        assertEquals(List.of(ten, gid("10.0.1.1"), lo), DeviceChoice.gidsOfAllPorts(two));
        // the route to 127.0.0.2 leaves from an address of neither port: port 1, the connection manager decides
        assertEquals(1, DeviceChoice.portFor(ports(Map.of(1, List.of(ten), 2, List.of(gid("10.0.1.1")))),
                InetAddress.getByName("127.0.0.2")));
    }

    @Test
    @Timeout(30)
    void onRoceLoEveryAddressIsOnPortOne() throws Exception {
        try (DeviceContext ctx = Rdma.device("roce_lo").open()) {
            assertEquals(1, DeviceChoice.portFor(ctx, InetAddress.getByName("127.0.0.1")));
            assertEquals(1, DeviceChoice.portFor(ctx, InetAddress.getByName("127.0.0.2")));
            assertEquals(ctx.queryPort().gids().stream().distinct().toList(), DeviceChoice.gidsOfAllPorts(ctx));
        }
    }
}

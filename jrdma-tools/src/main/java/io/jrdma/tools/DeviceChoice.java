package io.jrdma.tools;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.DatagramChannel;
import java.util.List;
import java.util.function.Function;

/** Which device a command uses when {@code -d} does not say: the route's for a client, the first non-loopback one for a server. */
public final class DeviceChoice {
    private DeviceChoice() {
    }

    /** A device name that does not exist ({@code -d}): a usage error, exit code 2. */
    public static final class NoSuchDevice extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public NoSuchDevice(String message) {
            super(message);
        }
    }

    /** @return the named device; throws {@link NoSuchDevice} listing those present */
    public static Device named(String name) {
        try {
            return Rdma.device(name);
        } catch (RdmaException e) {
            throw new NoSuchDevice(e.getMessage());
        }
    }

    /**
     * {@return port {@code ibPort} of {@code ctx} ({@code ibv_query_port}): the port a tool's {@code -i/--ib-port} names}
     * A port the device lacks is the caller's bad value, naming the option and the device's ports ({@code option
     * -i/--ib-port: port 2 of roce_lo does not exist: valid ports are 1..1 (phys_port_cnt 1)}).
     *
     * @param bad makes the caller's bad-value exception (exit code 2) from the message
     */
    public static PortAttr port(DeviceContext ctx, int ibPort, Function<String, ? extends RuntimeException> bad) {
        try {
            return ctx.queryPort(ibPort);
        } catch (RdmaException e) {
            if (e.errno() != RdmaException.Errno.EINVAL && e.errno() != RdmaException.Errno.EOPNOTSUPP) {
                throw e;
            }
            throw bad.apply("option -i/--ib-port: " + e.getMessage().replaceFirst("^E[A-Z]+: ", ""));
        }
    }

    /**
     * {@return the port of {@code ctx}'s device a connection to or from {@code address} is on, as rdma_cm's
     * {@code rdma_cm_id} would have it: for one of the device's own addresses (a server's bind address) the port
     * whose GID table holds it; for a peer, the port holding the address the kernel's route to it leaves from; 1
     * when no port holds it (a wildcard, an address of another device: the connection manager then has the final
     * word)} A tool moves its QP to INIT on this port before connecting, as {@code rdma_create_qp} does on the
     * {@code rdma_cm_id}'s port, so that its receives are posted before the peer can send.
     *
     * @param address the server's address (client), the address listened on (server), or null
     */
    public static int portFor(DeviceContext ctx, InetAddress address) {
        if (address == null || address.isAnyLocalAddress()) {
            return 1;
        }
        try {
            int port = portHolding(ctx, Gid.of(address));
            if (port > 0) {
                return port;
            }
            InetAddress routed;
            try (DatagramChannel ch = DatagramChannel.open()) {
                ch.connect(new InetSocketAddress(address, 9)); // routes only; sends nothing
                routed = ((InetSocketAddress) ch.getLocalAddress()).getAddress();
            }
            port = portHolding(ctx, Gid.of(routed));
            return port > 0 ? port : 1;
        } catch (IOException | RdmaException e) {
            return 1; // no route: the connect fails and says so
        }
    }

    /** {@return the GIDs of every port of {@code ctx}'s device, port 1's first, each once} */
    public static List<Gid> gidsOfAllPorts(DeviceContext ctx) {
        java.util.LinkedHashSet<Gid> all = new java.util.LinkedHashSet<>(ctx.queryPort().gids());
        for (int port = 2, n = ctx.portCount(); port <= n; port++) {
            all.addAll(ctx.queryPort(port).gids());
        }
        return List.copyOf(all);
    }

    /** {@return the first port of {@code ctx} whose GID table holds {@code gid}, or 0} */
    private static int portHolding(DeviceContext ctx, Gid gid) {
        if (ctx.gidIndexOf(gid) >= 0) {
            return 1;
        }
        for (int port = 2, n = ctx.portCount(); port <= n; port++) {
            if (ctx.gidIndexOf(port, gid) >= 0) {
                return port;
            }
        }
        return 0;
    }

    /** @return the device whose interface routes to {@code peer}, as {@code rdma_resolve_addr} picks it */
    public static Device toward(InetAddress peer) {
        return Rdma.resolve(peer, Transport.ROCE_V2).device();
    }

    /** @return the first device that is up and not on the loopback interface, else the loopback one */
    public static Device forServer() {
        return forServer(null);
    }

    /** As {@link #forServer()}, among the devices of one transport (null: any). */
    public static Device forServer(Transport transport) {
        List<Device> all = Rdma.devices().stream().filter(d -> transport == null || d.transport() == transport).toList();
        for (Device d : all) {
            if (!d.netdev().equals("lo") && d.isUp()) {
                return d;
            }
        }
        for (Device d : all) {
            if (d.netdev().equals("lo")) {
                return d;
            }
        }
        if (all.isEmpty()) {
            throw new RdmaException(RdmaException.Errno.ENODEV, "no RDMA device found (see 'jrdma devices')");
        }
        return all.getFirst();
    }
}

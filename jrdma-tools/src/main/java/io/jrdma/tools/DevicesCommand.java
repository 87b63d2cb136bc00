package io.jrdma.tools;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.spi.RdmaProvider;

import java.io.PrintStream;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;

/** {@code jrdma devices [-v]}: the devices, each port and its GID table, in {@code ibv_devinfo -v}'s shape. */
final class DevicesCommand {
    private static final ArgParser PARSER = new ArgParser("""
            usage: jrdma devices [-v] [-d device]
                   jrdma devices --resolve ADDRESS...

            Lists the RDMA devices as ibv_devinfo does: provider, transport, network interface, and
            for each port (jrdma's software devices have one; an rdma-core NIC may have more) its
            state, MTUs, link layer and GID table (for RoCEv2 a GID is an IP address of the interface).
            With -v each device is also opened briefly to show the UDP port its engine obtains
            (4791, or another one when 4791 is taken on this host) and its counters. A 'limitation:'
            line says what a device gives up in this JVM and which java flag would lift it.
            With --resolve, prints the device, port and GID that each transport's providers pick for
            each ADDRESS, an address of this host or a peer's, as a tool without -d picks it
            (rdma_resolve_addr's choice); kernel devices (rdma-core) are asked first.""")
            .option('v', "verbose", null, "open each device: UDP port and counters")
            .option('d', "ib-dev", "NAME", "show only this device")
            .option((char) 0, "resolve", null, "the device each transport picks for each address given");

    private DevicesCommand() {
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        ArgParser.Parsed p;
        try {
            p = PARSER.parse(args);
            if (p.has("resolve") && p.positionals().isEmpty()) {
                throw new ArgParser.UsageException("--resolve needs one or more addresses");
            }
            if (!p.has("resolve") && !p.positionals().isEmpty()) {
                throw new ArgParser.UsageException("unexpected argument '" + p.positionals().getFirst() + "'");
            }
        } catch (ArgParser.UsageException e) {
            err.println("jrdma devices: " + e.getMessage());
            err.print(PARSER.usage());
            return 2;
        }
        if (p.help()) {
            out.print(PARSER.usage());
            return 0;
        }
        if (p.has("resolve")) {
            int rc = 0;
            for (String a : p.positionals()) {
                rc = Math.max(rc, resolve(a, out, err));
            }
            return rc;
        }
        boolean verbose = p.has("verbose");
        List<Device> devices;
        try {
            devices = p.has("ib-dev") ? List.of(Rdma.device(p.value("ib-dev"))) : Rdma.devices();
        } catch (RdmaException e) {
            err.println("jrdma devices: " + e.getMessage());
            return p.has("ib-dev") ? 2 : 1;
        }
        for (RdmaProvider prov : Rdma.providers()) {
            String why = prov.unavailableReason();
            if (why != null) {
                err.println("jrdma devices: provider " + prov.name() + " is unavailable: " + why);
            }
        }
        if (devices.isEmpty()) {
            err.println("jrdma devices: no RDMA devices found (no provider, or no network interface with an IP address)");
            return 1;
        }
        int rc = 0;
        for (int i = 0; i < devices.size(); i++) {
            if (i > 0) {
                out.println();
            }
            try {
                print(devices.get(i), verbose, out);
            } catch (RdmaException e) {
                err.println("jrdma devices: " + devices.get(i).name() + ": " + e.getMessage());
                rc = 1;
            }
        }
        return rc;
    }

    /**
     * {@code --resolve ADDRESS}: one line per transport, the device, its provider, the port, and the GID index and GID that
     * {@link Rdma#resolve} gives, or why none.
     *
     * @return 0 when some transport has a device for the address, 1 when none has, 2 when it is not an address
     */
    static int resolve(String address, PrintStream out, PrintStream err) {
        InetAddress a;
        try {
            a = InetAddress.getByName(address);
        } catch (java.net.UnknownHostException | SecurityException e) {
            err.println("jrdma devices: cannot resolve host '" + address + "'");
            return 2;
        }
        int found = 0;
        for (Transport t : List.of(Transport.ROCE_V2, Transport.IWARP)) {
            try {
                ResolvedAddress r = Rdma.resolve(a, t);
                out.printf("%s %s: %s (provider %s), port %d, GID[%d] %s (%s)%n", a.getHostAddress(), name(t),
                        r.device().name(), r.device().provider(), r.portNum(), r.sgidIndex(), r.sgid(), ip(r.sgid()));
                found++;
            } catch (RdmaException e) {
                out.printf("%s %s: no device (%s)%n", a.getHostAddress(), name(t), e.getMessage());
            }
        }
        return found > 0 ? 0 : 1;
    }

    private static void print(Device d, boolean verbose, PrintStream out) {
        if (d instanceof io.jrdma.rdmacore.RdmaCoreDevice rc) { // an rdma-core device: ibv_devinfo's fields
            RdmaCoreDevices.print(rc, verbose, out);
            return;
        }
        out.printf("hca_id:\t%s%n", d.name());
        out.printf("\ttransport:\t\t\t%s%n", transport(d.transport()));
        out.printf("\tprovider:\t\t\t%s%n", d.provider());
        out.printf("\tnetdev:\t\t\t\t%s%n", d.netdev());
        out.printf("\tphys_port_cnt:\t\t\t%d%n", 1);
        out.printf("\t\tport:\t%d%n", 1);
        DeviceContext ctx = null;
        PortAttr attr = null;
        if (verbose) {
            ctx = d.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
            attr = ctx.queryPort();
        }
        try {
            PortAttr.PortState state = attr != null ? attr.state()
                    : d.isUp() ? PortAttr.PortState.ACTIVE : PortAttr.PortState.DOWN;
            out.printf("\t\t\tstate:\t\t\tPORT_%s (%d)%n", state, state.ordinal());
            Mtu max = attr != null ? attr.maxMtu() : Mtu.MTU_4096;
            Mtu active = attr != null ? attr.activeMtu() : activeMtu(d);
            out.printf("\t\t\tmax_mtu:\t\t%d (%d)%n", max.bytes(), max.code());
            out.printf("\t\t\tactive_mtu:\t\t%d (%d)%n", active.bytes(), active.code());
            out.printf("\t\t\tlink_layer:\t\t%s%n", attr != null ? attr.linkLayer() : "Ethernet");
            if (attr != null && d.transport() == io.jrdma.verbs.Transport.ROCE_V2) {
                out.printf("\t\t\tudp_port:\t\t%d%s%n", attr.udpPort(),
                        attr.udpPort() == DeviceOptions.ROCE_V2_PORT ? "" : " (4791 is taken on this host)");
                String why = io.jrdma.engine.link.UdpLink.nativeUnavailableReason();
                out.printf("			udp_sockets:		%s%n", why == null
                        ? "native (recvmmsg; IPv6 zero-checksum datagrams accepted)"
                        : "DatagramChannel (IPv6 peers that send zero UDP checksums, as rxe does, are not heard: " + why + ")");
                if (ctx instanceof io.jrdma.engine.core.Context c && c.transmitMode() != null) {
                    out.printf("\t\t\tudp_transmit:\t\t%s%n", c.transmitMode());
                }
            }
            // what the provider gives up in this JVM (a missing flag): the open context's own, else the device's
            for (String l : attr != null ? attr.limitations() : d.limitations()) {
                out.printf("\t\t\tlimitation:\t\t%s%n", l);
            }
            List<Gid> gids = attr != null ? attr.gids() : d.gids();
            if (gids.isEmpty() && d.transport() == io.jrdma.verbs.Transport.SHM) {
                out.println("\t\t\tGID per open context: fd6a:7264:6d61:7368:<pid>:<control segment fd>");
            } else if (gids.isEmpty()) {
                out.println("\t\t\tGID table is empty (the interface has no IP address)");
            }
            for (int i = 0; i < gids.size(); i++) {
                Gid g = gids.get(i);
                if (d.transport() == io.jrdma.verbs.Transport.IWARP) { // iWARP has no GID types: the address
                    out.printf("\t\t\tGID[%3d]:\t\t%s (%s)%n", i, g, ip(g));
                } else {
                    out.printf("\t\t\tGID[%3d]:\t\t%s, RoCE v2 (%s)%n", i, g, ip(g));
                }
            }
            if (ctx != null) {
                out.println("\t\tcounters:");
                for (Map.Entry<String, Long> e : ctx.counters().entrySet()) {
                    String name = e.getKey() + ":";
                    out.printf("\t\t\t%s%s%d%n", name, name.length() < 16 ? "\t\t" : "\t", e.getValue());
                }
            }
        } finally {
            if (ctx != null) {
                ctx.close();
            }
        }
    }

    private static String name(Transport t) {
        return t == Transport.ROCE_V2 ? "RoCEv2" : "iWARP";
    }

    private static String transport(Transport t) {
        return switch (t) {
            case ROCE_V2 -> "RoCEv2 (InfiniBand transport over UDP/IP)";
            case IWARP -> "iWARP";
            case SHM -> "shared memory";
        };
    }

    /** @return the GID's IP address, IPv6 in the RFC 5952 short form ({@code ::1}, {@code fe80::1}) */
    static String ip(Gid g) {
        InetAddress a = g.toInetAddress();
        if (!(a instanceof Inet6Address)) {
            return a.getHostAddress();
        }
        byte[] b = a.getAddress();
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        }
        int bestStart = -1;
        int bestLen = 1;
        for (int i = 0; i < 8; ) {
            if (groups[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (!sb.isEmpty() && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.toString();
    }

    /** The active MTU without opening the device, as the engine computes it; {@code -v} shows the engine's own value. */
    private static Mtu activeMtu(Device dev) {
        return dev instanceof io.jrdma.engine.roce.SoftRoceDevice s ? s.activeMtu()
                : dev instanceof io.jrdma.engine.iwarp.SoftIwarpDevice s ? s.activeMtu() : Mtu.MTU_1024;
    }
}

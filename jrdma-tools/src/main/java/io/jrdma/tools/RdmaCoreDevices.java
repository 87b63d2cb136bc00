package io.jrdma.tools;

import io.jrdma.rdmacore.GidEntry;
import io.jrdma.rdmacore.RdmaCoreContext;
import io.jrdma.rdmacore.RdmaCoreDevice;
import io.jrdma.rdmacore.RdmaCoreProvider;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.spi.RdmaProvider;

import java.io.PrintStream;
import java.util.Map;

/** {@code jrdma devices} for the devices of the rdma-core provider, with {@code ibv_devinfo [-v]}'s field names. */
final class RdmaCoreDevices {
    private RdmaCoreDevices() {
    }

    static void print(RdmaCoreDevice d, boolean verbose, PrintStream out) {
        try (RdmaCoreContext ctx = d.open()) {
            DeviceAttr a = ctx.queryDeviceAsReported();
            out.printf("hca_id:\t%s%n", d.name());
            out.printf("\ttransport:\t\t\t%s (%d)%n", d.transportType() == 1 ? "iWARP" : "InfiniBand", d.transportType());
            out.printf("\tprovider:\t\t\t%s, %s%n", d.provider(), library(d));
            String netdev = d.netdev();
            out.printf("\tnetdev:\t\t\t\t%s%n", netdev.isEmpty() ? "(not in sysfs; rdma link show names it)" : netdev);
            out.printf("\tfw_ver:\t\t\t\t%s%n", a.fwVer());
            out.printf("\tnode_guid:\t\t\t%s%n", guid(a.nodeGuid()));
            out.printf("\tsys_image_guid:\t\t\t%s%n", guid(a.sysImageGuid()));
            out.printf("\tvendor_id:\t\t\t0x%04x%n", a.vendorId());
            out.printf("\tvendor_part_id:\t\t\t%d%n", a.vendorPartId());
            out.printf("\thw_ver:\t\t\t\t0x%X%n", a.hwVer());
            out.printf("\tphys_port_cnt:\t\t\t%d%n", a.physPortCnt());
            if (verbose) {
                out.printf("\tmax_mr_size:\t\t\t0x%x%n", a.maxMrSize());
                out.printf("\tpage_size_cap:\t\t\t0x%x%n", a.pageSizeCap());
                out.printf("\tmax_qp:\t\t\t\t%d%n", a.maxQp());
                out.printf("\tmax_qp_wr:\t\t\t%d%n", a.maxQpWr());
                out.printf("\tdevice_cap_flags:\t\t0x%08x%n", a.deviceCapFlags());
                out.printf("\tmax_sge:\t\t\t%d%n", a.maxSge());
                out.printf("\tmax_sge_rd:\t\t\t%d%n", a.maxSgeRd());
                out.printf("\tmax_cq:\t\t\t\t%d%n", a.maxCq());
                out.printf("\tmax_cqe:\t\t\t%d%n", a.maxCqe());
                out.printf("\tmax_mr:\t\t\t\t%d%n", a.maxMr());
                out.printf("\tmax_pd:\t\t\t\t%d%n", a.maxPd());
                out.printf("\tmax_qp_rd_atom:\t\t\t%d%n", a.maxQpRdAtom());
                out.printf("\tmax_res_rd_atom:\t\t%d%n", a.maxResRdAtom());
                out.printf("\tmax_qp_init_rd_atom:\t\t%d%n", a.maxQpInitRdAtom());
                out.printf("\tatomic_cap:\t\t\tATOMIC_%s (%d)%n", a.atomicCap(), a.atomicCap().ordinal());
                out.printf("\tmax_mw:\t\t\t\t%d%n", a.maxMw());
                out.printf("\tmax_ah:\t\t\t\t%d%n", a.maxAh());
                out.printf("\tmax_srq:\t\t\t%d%n", a.maxSrq());
                out.printf("\tmax_srq_wr:\t\t\t%d%n", a.maxSrqWr());
                out.printf("\tmax_srq_sge:\t\t\t%d%n", a.maxSrqSge());
                out.printf("\tmax_pkeys:\t\t\t%d%n", a.maxPkeys());
            }
            for (int port = 1; port <= a.physPortCnt(); port++) {
                RdmaCoreContext.PortInfo p = ctx.portInfo(port);
                out.printf("\t\tport:\t%d%n", port);
                PortAttr.PortState[] states = PortAttr.PortState.values();
                String state = p.state() >= 0 && p.state() < states.length ? "PORT_" + states[p.state()] : "unknown";
                out.printf("\t\t\tstate:\t\t\t%s (%d)%n", state, p.state());
                out.printf("\t\t\tmax_mtu:\t\t%s (%d)%n", mtu(p.maxMtu()), p.maxMtu());
                out.printf("\t\t\tactive_mtu:\t\t%s (%d)%n", mtu(p.activeMtu()), p.activeMtu());
                out.printf("\t\t\tport_lid:\t\t%d%n", p.lid());
                out.printf("\t\t\tlink_layer:\t\t%s%n", p.linkLayerName());
                if (verbose) {
                    out.printf("\t\t\tmax_msg_sz:\t\t0x%x%n", p.maxMsgSz());
                    out.printf("\t\t\tport_cap_flags:\t\t0x%08x%n", p.portCapFlags());
                    out.printf("\t\t\tgid_tbl_len:\t\t%d%n", p.gidTblLen());
                    out.printf("\t\t\tphys_state:\t\t%d%n", p.physState());
                }
                for (String l : d.limitations()) {
                    out.printf("\t\t\tlimitation:\t\t%s%n", l);
                }
                for (GidEntry g : ctx.gidTable(port)) {
                    out.printf("\t\t\tGID[%3d]:\t\t%s%s (%s)%n", g.index(), g.gid(),
                            g.type() != null ? ", " + g.type() : "", DevicesCommand.ip(g.gid()));
                }
            }
            if (verbose) { // each port's hw_counters; "counters:" alone for a device of one port, as before
                for (int port = 1; port <= a.physPortCnt(); port++) {
                    Map<String, Long> counters = ctx.counters(port);
                    if (!counters.isEmpty()) {
                        out.println(a.physPortCnt() == 1 ? "\t\tcounters:" : "\t\tcounters of port " + port + ":");
                        for (Map.Entry<String, Long> e : counters.entrySet()) {
                            String name = e.getKey() + ":";
                            out.printf("\t\t\t%s%s%d%n", name, name.length() < 16 ? "\t\t" : "\t", e.getValue());
                        }
                    }
                }
            }
        }
    }

    private static String library(RdmaCoreDevice d) {
        for (RdmaProvider p : io.jrdma.verbs.Rdma.providers()) {
            if (p instanceof RdmaCoreProvider r) {
                return r.libraryDescription();
            }
        }
        return "libibverbs";
    }

    private static String mtu(int code) {
        return code >= 1 && code <= 5 ? Integer.toString(Mtu.ofCode(code).bytes()) : "unknown";
    }

    /** As ibv_devinfo: the GUID in four groups of four hex digits. */
    static String guid(long g) {
        String h = String.format("%016x", g);
        return h.substring(0, 4) + ":" + h.substring(4, 8) + ":" + h.substring(8, 12) + ":" + h.substring(12);
    }
}

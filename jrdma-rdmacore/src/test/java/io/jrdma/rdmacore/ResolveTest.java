package io.jrdma.rdmacore;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.Transport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Rdma.resolve} by address over rdma-core's devices: the GID chosen from a table (anywhere), the answer where
 * the provider cannot run (anywhere), and, where rdma-core has devices (the interop guests' rxe0 and siw0), that each
 * address of a device resolves to it with the GID entry that holds it.
 */
@Timeout(60)
class ResolveTest {
    private static Gid gid(String ip) throws Exception {
        return Gid.of(InetAddress.getByName(ip));
    }

    @Test
    void onRoceTheEntryHoldingTheAddressIsPickedAndItsRoceV2TypeFirst() throws Exception {
        List<GidEntry> table = List.of(new GidEntry(0, gid("fe80::1"), "RoCE v2"),
                new GidEntry(1, gid("10.77.0.11"), "IB/RoCE v1"), new GidEntry(2, gid("10.77.0.11"), "RoCE v2"));
        InetAddress a = InetAddress.getByName("10.77.0.11");
        assertEquals(2, RdmaCoreProvider.pickGid(table, Transport.ROCE_V2, a, null).index());
        assertEquals(1, RdmaCoreProvider.pickGid(table.subList(0, 2), Transport.ROCE_V2, a, null).index(),
                "no RoCE v2 entry: the v1 one");
        assertNull(RdmaCoreProvider.pickGid(table, Transport.ROCE_V2, InetAddress.getByName("10.77.0.99"), null),
                "an address the table does not hold");
        assertEquals(0, RdmaCoreProvider.pickGid(table, Transport.ROCE_V2, InetAddress.getByName("10.77.0.99"),
                gid("fe80::1")).index(), "else rdma_cm's source GID");
    }

    @Test
    void onIwarpRdmaCmsSourceGidIsPickedElseTheFirstEntry() throws Exception {
        // siw's GID holds the interface's MAC, not an address
        Gid mac = Gid.of(new byte[]{0x52, 0x54, 0x00, 0x77, 0x01, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
        List<GidEntry> table = List.of(new GidEntry(0, mac, null));
        InetAddress a = InetAddress.getByName("10.77.1.11");
        assertSame(table.get(0), RdmaCoreProvider.pickGid(table, Transport.IWARP, a, mac));
        assertSame(table.get(0), RdmaCoreProvider.pickGid(table, Transport.IWARP, a, null));
        assertNull(RdmaCoreProvider.pickGid(List.of(), Transport.IWARP, a, mac));
    }

    @Test
    void theProviderOffersBothTransportsAndIsAskedBeforeTheSoftwareOnes() {
        RdmaCoreProvider p = new RdmaCoreProvider();
        assertEquals(Set.of(Transport.ROCE_V2, Transport.IWARP), p.transports());
        assertTrue(p.kernelDevices());
    }

    @Test
    void aPortOutsideTheDeviceIsEinvalNamingTheRangeAsTheVerbsApiDoes() {
        RdmaException e = RdmaException.noSuchPort("mlx5_0", 3, 2);
        assertEquals(RdmaException.Errno.EINVAL, e.errno());
        assertEquals("EINVAL: port 3 of mlx5_0 does not exist: valid ports are 1..2 (phys_port_cnt 2)", e.getMessage());
    }

    @Test
    void withoutTheLibraryNothingResolves() {
        RdmaCoreProvider p = new RdmaCoreProvider("libibverbs-does-not-exist.so.1");
        assertNotNull(p.unavailableReason());
        assertNull(p.resolve(InetAddress.getLoopbackAddress()));
        assertNull(p.resolve(InetAddress.getLoopbackAddress(), Transport.IWARP));
    }

    @Test
    void withoutADeviceNothingResolvesAndNothingWaits() {
        RdmaCoreProvider p = new RdmaCoreProvider();
        Assumptions.assumeTrue(p.unavailableReason() != null, "skipped: this host has an rdma-core device");
        long t0 = System.nanoTime();
        assertNull(p.resolve(InetAddress.getLoopbackAddress()));
        assertNull(p.resolve(InetAddress.getLoopbackAddress(), Transport.ROCE_V2));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < AddressResolver.RESOLVE_TIMEOUT_MS, "answered in " + ms + " ms, without a route resolution");
    }

    /** Each address in a device's GID table (RoCE), or of its interface (iWARP), resolves to that device. */
    @Test
    void everyAddressOfADeviceResolvesToItWithItsGidEntry() throws Exception {
        RdmaCoreProvider p = new RdmaCoreProvider();
        String device = System.getProperty("jrdma.tck.rdmacore.device");
        Assumptions.assumeTrue(p.unavailableReason() == null,
                () -> "skipped: no rdma-core device on this host (" + p.unavailableReason() + ")");
        List<String> checked = new ArrayList<>();
        for (Device d : p.devices()) {
            if (device != null && !device.isEmpty() && !d.name().equals(device)) {
                continue;
            }
            for (InetAddress a : addressesOf((RdmaCoreDevice) d)) {
                ResolvedAddress r = p.resolve(a, d.transport());
                assertNotNull(r, d.name() + ": " + a + " did not resolve");
                assertEquals(d.name(), r.device().name(), a.toString());
                try (RdmaCoreContext c = ((RdmaCoreDevice) d).open()) {
                    assertTrue(r.portNum() >= 1 && r.portNum() <= c.physPortCnt(), "the port (" + r.portNum()
                            + ") is one of the device's 1.." + c.physPortCnt());
                    assertEquals(c.gid(r.portNum(), r.sgidIndex()), r.sgid(), "the index is the GID's in that port's table");
                    if (c.physPortCnt() == 1) {
                        assertEquals(1, r.portNum(), "a device of one port");
                    }
                }
                if (d.transport() == Transport.ROCE_V2) {
                    assertEquals(Gid.of(a), r.sgid(), "a RoCE GID holds the address");
                }
                Transport other = d.transport() == Transport.ROCE_V2 ? Transport.IWARP : Transport.ROCE_V2;
                assertNull(p.resolve(a, other), a + " is not an address of a " + other + " device");
                assertEquals(d.name(), Rdma.resolve(a, d.transport()).device().name(),
                        "Rdma.resolve asks rdma-core before the software devices");
                checked.add(d.name() + " " + a.getHostAddress() + " port " + r.portNum() + " GID[" + r.sgidIndex() + "]");
            }
        }
        Assumptions.assumeFalse(checked.isEmpty(), "skipped: no device with an IPv4 address to check");
        System.out.println("resolved: " + checked);
    }

    /**
     * The device's interface's IPv4 addresses: sysfs names the netdev of a RoCE port; siw's does not show, but its
     * GID holds the interface's MAC.
     */
    private static List<InetAddress> addressesOf(RdmaCoreDevice d) throws Exception {
        java.net.NetworkInterface ni = d.netdev().isEmpty() ? null : java.net.NetworkInterface.getByName(d.netdev());
        if (ni == null) {
            byte[] mac;
            try (RdmaCoreContext c = d.open()) {
                mac = java.util.Arrays.copyOf(c.gidTable(1).getFirst().gid().raw(), 6);
            }
            for (java.net.NetworkInterface n : java.net.NetworkInterface.networkInterfaces().toList()) {
                if (java.util.Arrays.equals(mac, n.getHardwareAddress())) {
                    ni = n;
                }
            }
        }
        List<InetAddress> out = new ArrayList<>();
        if (ni != null) {
            ni.inetAddresses().filter(a -> a instanceof java.net.Inet4Address).forEach(out::add);
        }
        return out;
    }
}

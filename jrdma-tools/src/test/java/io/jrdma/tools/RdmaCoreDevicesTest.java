package io.jrdma.tools;

import io.jrdma.rdmacore.RdmaCoreProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jrdma devices} with the rdma-core provider: its devices, or the line saying why it has none. */
@Timeout(60)
class RdmaCoreDevicesTest {
    @Test
    void devicesSaysWhyRdmaCoreHasNoDevice() {
        RdmaCoreProvider p = new RdmaCoreProvider();
        Assumptions.assumeTrue(p.unavailableReason() != null, "skipped: rdma-core has a device on this host");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Main.run(new String[] {"devices", "-v", "-d", "roce_lo"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String e = err.toString(StandardCharsets.UTF_8);
        assertTrue(e.contains("jrdma devices: provider rdmacore is unavailable: " + p.unavailableReason()), e);
    }

    @Test
    void rdmaCoreDevicesAreListedWithIbvDevinfoFields() {
        RdmaCoreProvider p = new RdmaCoreProvider();
        Assumptions.assumeTrue(p.unavailableReason() == null,
                "skipped: no rdma-core device on this host (" + p.unavailableReason() + ")");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(0, Main.run(new String[] {"devices", "-v", "-d", p.devices().getFirst().name()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)));
        String o = out.toString(StandardCharsets.UTF_8);
        assertTrue(o.contains("max_qp:") && o.contains("active_mtu:") && o.contains("GID[  0]:"), o);
    }

    @Test
    void guidsAreGroupedAsIbvDevinfoPrintsThem() {
        assertEquals("5054:00ff:fe12:3456", RdmaCoreDevices.guid(0x505400fffe123456L));
    }
}

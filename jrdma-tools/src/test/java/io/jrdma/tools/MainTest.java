package io.jrdma.tools;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MainTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void noCommandIsAUsageError() {
        assertEquals(2, run());
        assertTrue(err().contains("missing command"));
        assertTrue(err().contains("usage: jrdma <command>"));
    }

    @Test
    void unknownCommandIsAUsageError() {
        assertEquals(2, run("frobnicate"));
        assertTrue(err().contains("unknown command 'frobnicate'"));
    }

    @Test
    void helpGoesToStdout() {
        assertEquals(0, run("--help"));
        assertTrue(out().contains("devices"));
        assertTrue(out().contains("perf <test>"));
    }

    @Test
    void versionPrintsTheProjectVersionAndTheJdk() {
        String expected = System.getProperty("jrdma.expectedVersion");
        for (String flag : new String[] {"--version", "-V"}) {
            out.reset();
            assertEquals(0, run(flag));
            String[] lines = out().split("\\R");
            assertEquals(2, lines.length, out());
            assertTrue(expected != null && !expected.isEmpty(), "the build passes jrdma.expectedVersion");
            assertEquals("jrdma " + expected, lines[0]);
            assertTrue(lines[1].startsWith("JDK " + Runtime.version() + " ("), lines[1]);
            assertTrue(lines[1].contains(System.getProperty("java.home")), lines[1]);
        }
    }

    @Test
    void devicesListsTheLoopbackDeviceAndItsGids() {
        assertEquals(0, run("devices"));
        String o = out();
        assertTrue(o.contains("hca_id:\troce_lo"), o);
        assertTrue(o.contains("state:\t\t\tPORT_ACTIVE (4)"), o);
        assertTrue(o.contains("max_mtu:\t\t4096 (5)"), o);
        assertTrue(o.contains("link_layer:\t\tEthernet"), o);
        assertTrue(o.contains("GID[  0]:\t\t0000:0000:0000:0000:0000:ffff:7f00:0001, RoCE v2 (127.0.0.1)"), o);
    }

    @Test
    void devicesVerboseOpensTheDevice() {
        assertEquals(0, run("devices", "-v", "-d", "roce_lo"));
        String o = out();
        assertTrue(o.contains("udp_port:"), o);
        assertTrue(o.contains("sent_pkts:"), o);
        assertTrue(!o.contains("hca_id:\troce_eth"), o);
    }

    @Test
    void devicesRejectsBadFlagsAndUnknownDevices() {
        assertEquals(2, run("devices", "--bogus"));
        assertTrue(err().contains("unknown option --bogus"));
        assertEquals(2, run("devices", "-d", "no_such_device"));
        assertTrue(err().contains("no RDMA device named no_such_device"), err());
    }

    @Test
    void devicesResolvePrintsTheDeviceEachTransportPicksForAnAddress() {
        assertEquals(0, run("devices", "--resolve", "127.0.0.1"), err());
        assertTrue(out().contains("127.0.0.1 RoCEv2: roce_lo (provider rxe), port 1, GID[0] "
                + "0000:0000:0000:0000:0000:ffff:7f00:0001 (127.0.0.1)"), out());
        assertTrue(out().contains("127.0.0.1 iWARP: iwarp_lo (provider siw), port 1, GID[0] "), out());
    }

    @Test
    void devicesResolveWithoutAnAddressOrWithANameThatDoesNotResolveIsAUsageError() {
        assertEquals(2, run("devices", "--resolve"));
        assertTrue(err().contains("--resolve needs one or more addresses"), err());
        err.reset();
        assertEquals(2, run("devices", "--resolve", "no-such-host.invalid"));
        assertTrue(err().contains("cannot resolve host 'no-such-host.invalid'"), err());
    }

    @Test
    void aotTrainingTakesNoArguments() {
        assertEquals(2, run("aot-training", "x"));
        assertTrue(err().contains("takes no arguments"), err());
    }
}

package io.jrdma.rdmacore;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.spi.RdmaProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loading libibverbs and listing its devices. Runs everywhere: where the library is installed it is
 * loaded and checked; where there is no device the provider says so; tests that need a device are
 * skipped with a message saying so.
 */
@Timeout(30)
class LoadingTest {
    private static boolean libraryInstalled() {
        return Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1"))
                || Files.exists(Path.of("/usr/lib64/libibverbs.so.1"))
                || Files.exists(Path.of("/usr/lib/aarch64-linux-gnu/libibverbs.so.1"))
                || Files.exists(Path.of("/usr/lib/libibverbs.so.1"));
    }

    @Test
    void theInstalledLibraryLoadsAndIsAbi1() {
        Assumptions.assumeTrue(libraryInstalled(), "skipped: libibverbs.so.1 is not installed on this host");
        LibIbverbs lib = LibIbverbs.load(LibIbverbs.DEFAULT_LIBRARY);
        assertNull(lib.reason(), () -> "libibverbs.so.1 is installed but: " + lib.reason());
        assertNotNull(lib.version(), "the loaded file's version is found in /proc/self/maps");
        assertTrue(lib.version().startsWith("1."), lib.version());
        assertTrue(new RdmaCoreProvider().libraryDescription().startsWith("libibverbs.so.1 (1."));
    }

    @Test
    void everyBoundSymbolIsItsIbverbs11Version() {
        Assumptions.assumeTrue(libraryInstalled(), "skipped: libibverbs.so.1 is not installed on this host");
        LibIbverbs lib = LibIbverbs.load(LibIbverbs.DEFAULT_LIBRARY);
        assertNull(lib.reason());
        var lookup = java.lang.foreign.SymbolLookup.libraryLookup(LibIbverbs.DEFAULT_LIBRARY, java.lang.foreign.Arena.global());
        for (String sym : LibIbverbs.SYMBOLS) {
            assertNull(LibIbverbs.symbolVersionMismatch(LibIbverbs.DEFAULT_LIBRARY, sym, lookup.find(sym).orElseThrow()), sym);
        }
        // an address that is not the IBVERBS_1.1 one (here: another function's) is named
        String m = LibIbverbs.symbolVersionMismatch(LibIbverbs.DEFAULT_LIBRARY, "ibv_query_port",
                lookup.find("ibv_query_gid").orElseThrow());
        assertEquals("libibverbs.so.1's default ibv_query_port is not its IBVERBS_1.1 version: a newer rdma-core changed"
                + " that function's structs; this provider's layouts are IBVERBS_1.1's", m);
    }

    @Test
    void loadingFindsAndChecksEveryFunctionButMakesNoDowncallHandleUntilItsFirstCall() {
        Assumptions.assumeTrue(libraryInstalled(), "skipped: libibverbs.so.1 is not installed on this host");
        LibIbverbs lib = LibIbverbs.load(LibIbverbs.DEFAULT_LIBRARY);
        assertNull(lib.reason());
        List<Downcall> all = lib.downcalls();
        assertEquals(LibIbverbs.SYMBOLS.size() + IbvVerbs.SYMBOLS.size() + 1 /* poll */, all.size());
        assertEquals(List.of(), bound(all), "no handle is made at load");
        try {
            lib.deviceList();
        } catch (LibIbverbs.NativeCallException e) {
            assertEquals(38, e.errno(), "no device here: ENOSYS"); // a call all the same
        }
        List<String> listing = List.of("ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name",
                "ibv_get_device_guid");
        assertTrue(bound(all).contains("ibv_get_device_list"), bound(all).toString());
        assertTrue(listing.containsAll(bound(all)), "listing the devices binds only what it calls: " + bound(all));
        // an object verb's first call binds it alone: poll(2) on an eventfd, which needs no device
        Libc libc = Libc.get();
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            var state = IbvVerbs.callState(a);
            int fd = libc.eventfd(state, 1, Libc.EFD_CLOEXEC);
            assertTrue(fd >= 0);
            try {
                assertTrue(lib.verbs().pollIn(state, a.allocate(Structs.POLLFD), fd, 0), "an eventfd holding 1 is readable");
            } finally {
                libc.close(state, fd);
            }
        }
        assertTrue(bound(all).contains("poll"), bound(all).toString());
        assertEquals(List.of(), bound(lib.verbs().downcalls()).stream().filter(n -> !n.equals("poll")).toList());
    }

    private static List<String> bound(List<Downcall> d) {
        return d.stream().filter(Downcall::bound).map(Downcall::name).toList();
    }

    @Test
    void withoutNativeAccessTheFlagToGiveIsNamed() throws Exception {
        // a child JVM on the same class path without --enable-native-access
        Path javaBin = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(javaBin.toString(), "-cp", System.getProperty("java.class.path"),
                ReasonMain.class.getName()).redirectErrorStream(true).start();
        assertTrue(p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS), "the child JVM ends");
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        assertEquals("rdma-core is reached through the FFM API, which needs native access: run java with"
                + " --enable-native-access=ALL-UNNAMED", out.strip());
    }

    @Test
    void aMissingLibraryIsNamedWithWhatToInstall() {
        RdmaCoreProvider p = new RdmaCoreProvider("libibverbs-does-not-exist.so.9");
        String why = p.unavailableReason();
        assertNotNull(why);
        assertTrue(why.startsWith("libibverbs-does-not-exist.so.9 cannot be loaded"), why);
        assertTrue(why.contains("libibverbs1"), why);
        assertEquals(List.of(), p.devices());
    }

    @Test
    void aLibraryWithoutTheSymbolsIsNamed() {
        RdmaCoreProvider p = new RdmaCoreProvider("libc.so.6");
        String why = p.unavailableReason();
        assertEquals("libc.so.6 has no symbol ibv_get_device_list: it is not rdma-core's libibverbs,"
                + " or one too old for this provider", why);
        assertEquals(List.of(), p.devices());
    }

    @Test
    void theProviderIsFoundThroughServiceLoader() {
        RdmaProvider found = Rdma.providers().stream().filter(p -> p.name().equals("rdmacore")).findFirst().orElse(null);
        assertNotNull(found, "rdmacore is registered in META-INF/services");
    }

    @Test
    void withoutADeviceTheListIsEmptyAndTheReasonSaysSo() {
        Assumptions.assumeTrue(libraryInstalled(), "skipped: libibverbs.so.1 is not installed on this host");
        RdmaCoreProvider p = new RdmaCoreProvider();
        Assumptions.assumeTrue(p.devices().isEmpty(), "skipped: this host has an rdma-core device (see deviceQueries)");
        String why = p.unavailableReason();
        assertNotNull(why);
        assertTrue(why.contains("lists no RDMA device") && why.contains("rdma link add"), why);
        if (!Files.isDirectory(Path.of("/sys/class/infiniband_verbs"))) {
            assertTrue(why.contains("ENOSYS"), why); // the kernel has no uverbs: rdma-core says so with ENOSYS
        }
    }

    @Test
    void deviceQueries() {
        Assumptions.assumeTrue(libraryInstalled(), "skipped: libibverbs.so.1 is not installed on this host");
        RdmaCoreProvider p = new RdmaCoreProvider();
        List<Device> devices = p.devices();
        Assumptions.assumeFalse(devices.isEmpty(),
                "skipped: no rdma-core device on this host (needs an RDMA NIC or rdma_rxe/siw; the interop guests have both)");
        assertNull(p.unavailableReason());
        for (Device d : devices) {
            try (RdmaCoreContext ctx = ((RdmaCoreDevice) d).open()) {
                DeviceAttr a = ctx.queryDevice();
                assertTrue(a.physPortCnt() >= 1, d.name());
                assertTrue(a.maxQp() > 0, d.name());
                PortAttr port = ctx.queryPort();
                assertNotNull(port.state());
                assertFalse(ctx.gidTable(1).isEmpty(), d.name() + " has a GID");
                var e = assertThrows(RdmaException.class, ctx::allocPd);
                assertEquals(RdmaException.Errno.EOPNOTSUPP, e.errno());
                assertTrue(e.getMessage().contains("not built yet"), e.getMessage());
            }
        }
    }
}

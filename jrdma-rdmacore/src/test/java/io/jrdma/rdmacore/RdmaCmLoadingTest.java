package io.jrdma.rdmacore;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loading librdmacm, and the errors where it cannot serve: runs everywhere (this build host has
 * librdmacm.so.1 and no RDMA device).
 */
@Timeout(30)
class RdmaCmLoadingTest {
    private static boolean installed() {
        return Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/librdmacm.so.1"))
                || Files.exists(Path.of("/usr/lib64/librdmacm.so.1"))
                || Files.exists(Path.of("/usr/lib/aarch64-linux-gnu/librdmacm.so.1"));
    }

    @Test
    void theInstalledLibraryLoadsAtTheSymbolVersionsOfItsLayouts() {
        Assumptions.assumeTrue(installed(), "skipped: librdmacm.so.1 is not installed on this host");
        LibRdmacm lib = LibRdmacm.load(LibRdmacm.DEFAULT_LIBRARY);
        assertNull(lib.reason(), () -> "librdmacm.so.1 is installed but: " + lib.reason());
        assertNotNull(lib.version(), "the loaded file's version is found in /proc/self/maps");
        assertTrue(lib.version().startsWith("1."), lib.version());
        SymbolLookup lookup = SymbolLookup.libraryLookup(LibRdmacm.DEFAULT_LIBRARY, Arena.global());
        for (var e : LibRdmacm.SYMBOLS.entrySet()) {
            assertNull(LibIbverbs.symbolVersionMismatch(LibRdmacm.DEFAULT_LIBRARY, e.getKey(), e.getValue(),
                    lookup.find(e.getKey()).orElseThrow()), e.getKey());
        }
        // another function's address for rdma_connect: named as not its RDMACM_1.0 version
        assertEquals("librdmacm.so.1's default rdma_connect is not its RDMACM_1.0 version: a newer rdma-core changed"
                + " that function's structs; this provider's layouts are RDMACM_1.0's",
                LibIbverbs.symbolVersionMismatch(LibRdmacm.DEFAULT_LIBRARY, "rdma_connect", "RDMACM_1.0",
                        lookup.find("rdma_accept").orElseThrow()));
    }

    @Test
    void loadingMakesNoDowncallHandleUntilAFunctionsFirstCall() {
        Assumptions.assumeTrue(installed(), "skipped: librdmacm.so.1 is not installed on this host");
        LibRdmacm lib = LibRdmacm.load(LibRdmacm.DEFAULT_LIBRARY);
        assertNull(lib.reason());
        assertEquals(LibRdmacm.SYMBOLS.size(), lib.downcalls().size());
        assertEquals(List.of(), lib.downcalls().stream().filter(Downcall::bound).toList(), "no handle is made at load");
        try (Arena a = Arena.ofConfined()) {
            lib.destroyEventChannel(IbvVerbs.callState(a), lib.createEventChannel(IbvVerbs.callState(a)));
        } catch (LibIbverbs.NativeCallException e) {
            // no RDMA device here (ENODEV): the call was made all the same
        }
        assertTrue(lib.downcalls().stream().filter(Downcall::bound).map(Downcall::name).toList()
                .contains("rdma_create_event_channel"));
        assertEquals(List.of(), lib.downcalls().stream().filter(Downcall::bound).map(Downcall::name)
                .filter(n -> !n.equals("rdma_create_event_channel") && !n.equals("rdma_destroy_event_channel")).toList());
    }

    @Test
    void aMissingLibraryIsNamedWithWhatToInstall() {
        LibRdmacm lib = LibRdmacm.load("librdmacm-does-not-exist.so.7");
        assertNotNull(lib.reason());
        assertTrue(lib.reason().startsWith("librdmacm-does-not-exist.so.7 cannot be loaded"), lib.reason());
        assertTrue(lib.reason().contains("apt install librdmacm1"), lib.reason());
    }

    @Test
    void aLibraryWithoutTheSymbolsIsNamed() {
        assertEquals("libc.so.6 has no symbol rdma_create_event_channel: it is not rdma-core's librdmacm, or one too"
                + " old for this provider", LibRdmacm.load("libc.so.6").reason());
    }

    @Test
    void withoutADeviceTheEventChannelSaysWhatToDo() {
        Assumptions.assumeTrue(installed(), "skipped: librdmacm.so.1 is not installed on this host");
        Assumptions.assumeTrue(!Files.exists(Path.of("/dev/infiniband/rdma_cm")),
                "skipped: this host has /dev/infiniband/rdma_cm (see RdmaCmConnectionTest)");
        LibRdmacm lib = LibRdmacm.load(LibRdmacm.DEFAULT_LIBRARY);
        try (Arena a = Arena.ofConfined()) {
            var e = assertThrows(LibIbverbs.NativeCallException.class, () -> lib.createEventChannel(IbvVerbs.callState(a)));
            assertTrue(e.errno() == 19 || e.errno() == 2, "ENODEV or ENOENT: " + e.getMessage());
            assertTrue(e.getMessage().contains("modprobe"), e.getMessage());
            var r = RdmaCoreProvider.toRdma(e);
            assertTrue(r.errno() == io.jrdma.verbs.RdmaException.Errno.ENODEV
                    || r.errno() == io.jrdma.verbs.RdmaException.Errno.ENOENT, r.toString());
        }
        assertTrue(LibRdmacm.channelFailure(2).contains("modprobe rdma_ucm"));
    }

    @Test
    void theJrdmaTrailerCarriesTheQpnAndIsStripped() {
        byte[] app = {1, 2, 3};
        byte[] pd = java.nio.ByteBuffer.allocate(3 + RdmaCoreCm.EXT_LENGTH).put(app).putInt(0).putInt(0x1234)
                .put((byte) 3).put(new byte[3]).putInt(RdmaCoreCm.EXT_MAGIC).array();
        RdmaCoreCm.Split s = RdmaCoreCm.split(pd);
        assertArrayEquals(app, s.app());
        assertEquals(0x1234, s.qpn());
        RdmaCoreCm.Split plain = RdmaCoreCm.split(Arrays.copyOf(app, 40)); // rping's, perftest's: no trailer
        assertEquals(-1, plain.qpn());
        assertEquals(40, plain.app().length);
        assertEquals(235, RdmaCoreCm.MAX_DATA_WITH_TRAILER);
    }
}

package io.jrdma.verbs;

import io.jrdma.verbs.spi.RdmaProvider;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * jrdma-verbs alone (this module's test class path has no provider): the errors say that no
 * provider is loaded and which artifact to add, instead of "no route".
 */
class NoProviderTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    @Test
    void noProviderOnThisClassPath() {
        assertEquals(List.of(), Rdma.providers(), "jrdma-verbs' tests must run without any provider");
        assertEquals(List.of(), Rdma.devices());
    }

    @Test
    void resolveWithNoProviderNamesTheEngineArtifact() {
        RdmaException e = assertThrows(RdmaException.class, () -> Rdma.resolve(LOOPBACK, Transport.ROCE_V2));
        assertEquals(RdmaException.Errno.ENODEV, e.errno());
        assertTrue(e.getMessage().contains("no ROCE_V2 provider is on the class path or module path (none was found)"),
                e.getMessage());
        assertTrue(e.getMessage().contains("add the io.jrdma:jrdma-engine artifact"), e.getMessage());
        assertTrue(e.getMessage().contains("module io.jrdma.engine"), e.getMessage());
    }

    @Test
    void deviceAndProviderByNameWithNoProviderNameTheEngineArtifact() {
        RdmaException d = assertThrows(RdmaException.class, () -> Rdma.device("roce_lo"));
        assertEquals(RdmaException.Errno.ENODEV, d.errno());
        assertTrue(d.getMessage().contains("no RDMA device named roce_lo: no RDMA provider is on the class path"),
                d.getMessage());
        assertTrue(d.getMessage().contains("io.jrdma:jrdma-engine"), d.getMessage());
        RdmaException p = assertThrows(RdmaException.class, () -> Rdma.provider("soft-roce"));
        assertTrue(p.getMessage().contains("no provider named soft-roce: no RDMA provider"), p.getMessage());
        assertTrue(p.getMessage().contains("io.jrdma:jrdma-engine"), p.getMessage());
    }

    @Test
    void onlyOtherTransportsPresentSaysWhichAreThere() {
        RdmaException e = assertThrows(RdmaException.class, () -> Rdma.resolve(
                List.of(new Fake("siw", Transport.IWARP, null, null)), LOOPBACK, Transport.ROCE_V2));
        assertEquals(RdmaException.Errno.ENODEV, e.errno());
        assertTrue(e.getMessage().startsWith("ENODEV: no ROCE_V2 provider is on the class path or module path"
                + " (found only [siw (IWARP)]): add the io.jrdma:jrdma-engine artifact"), e.getMessage());
    }

    @Test
    void unavailableProviderSaysWhy() {
        RdmaException e = assertThrows(RdmaException.class, () -> Rdma.resolve(
                List.of(new Fake("rxe", Transport.ROCE_V2, "no UDP sockets here", null)), LOOPBACK, Transport.ROCE_V2));
        assertEquals(RdmaException.Errno.ENODEV, e.errno());
        assertEquals("ENODEV: provider rxe cannot run: no UDP sockets here", e.getMessage());
    }

    @Test
    void aRunningProviderWithoutARouteIsStillUnreachable() {
        RdmaException e = assertThrows(RdmaException.class, () -> Rdma.resolve(
                List.of(new Fake("rxe", Transport.ROCE_V2, null, null)), LOOPBACK, Transport.ROCE_V2));
        assertEquals(RdmaException.Errno.ENETUNREACH, e.errno());
        assertTrue(e.getMessage().contains("no ROCE_V2 device has a route to"), e.getMessage());
    }

    @Test
    void theFirstProviderWithARouteWins() {
        ResolvedAddress r = new ResolvedAddress(null, Gid.of(LOOPBACK), 0);
        assertSame(r, Rdma.resolve(List.of(new Fake("a", Transport.ROCE_V2, "down", r),
                new Fake("b", Transport.ROCE_V2, null, null), new Fake("c", Transport.ROCE_V2, null, r)),
                LOOPBACK, Transport.ROCE_V2));
    }

    @Test
    void providersOfTheKernelsDevicesAreAskedFirst() {
        ResolvedAddress soft = new ResolvedAddress(null, Gid.of(LOOPBACK), 0);
        ResolvedAddress kernel = new ResolvedAddress(null, Gid.of(LOOPBACK), 1);
        assertSame(kernel, Rdma.resolve(List.of(new Fake("rxe", Transport.ROCE_V2, null, soft),
                new Kernel(kernel, Transport.ROCE_V2)), LOOPBACK, Transport.ROCE_V2));
        // no route there: the software provider's answer
        assertSame(soft, Rdma.resolve(List.of(new Fake("rxe", Transport.ROCE_V2, null, soft),
                new Kernel(null, Transport.ROCE_V2)), LOOPBACK, Transport.ROCE_V2));
    }

    @Test
    void aProviderOfSeveralTransportsIsAskedForEachAndAnswersForTheOneAsked() {
        ResolvedAddress iwarp = new ResolvedAddress(null, Gid.of(LOOPBACK), 2);
        assertSame(iwarp, Rdma.resolve(List.of(new Kernel(iwarp, Transport.IWARP)), LOOPBACK, Transport.IWARP));
        RdmaException e = assertThrows(RdmaException.class, () -> Rdma.resolve(List.of(new Kernel(iwarp, Transport.IWARP)),
                LOOPBACK, Transport.ROCE_V2));
        assertEquals(RdmaException.Errno.ENETUNREACH, e.errno(), "its device there is an iWARP one");
    }

    @Test
    void byDefaultAProviderAnswersForItsOwnTransportOnly() {
        ResolvedAddress r = new ResolvedAddress(null, Gid.of(LOOPBACK), 0);
        Fake f = new Fake("siw", Transport.IWARP, null, r);
        assertEquals(java.util.Set.of(Transport.IWARP), f.transports());
        assertSame(r, f.resolve(LOOPBACK, Transport.IWARP));
        assertEquals(null, f.resolve(LOOPBACK, Transport.ROCE_V2));
    }

    /** A provider of kernel devices of both transports whose one route is a device of {@code routeTransport}. */
    private record Kernel(ResolvedAddress route, Transport routeTransport) implements RdmaProvider {
        @Override
        public String name() {
            return "kernel";
        }

        @Override
        public Transport transport() {
            return Transport.ROCE_V2;
        }

        @Override
        public java.util.Set<Transport> transports() {
            return java.util.Set.of(Transport.ROCE_V2, Transport.IWARP);
        }

        @Override
        public boolean kernelDevices() {
            return true;
        }

        @Override
        public String unavailableReason() {
            return null;
        }

        @Override
        public List<Device> devices() {
            return List.of();
        }

        @Override
        public ResolvedAddress resolve(InetAddress destination) {
            return route;
        }

        @Override
        public ResolvedAddress resolve(InetAddress destination, Transport transport) {
            return transport == routeTransport ? route : null;
        }
    }

    private record Fake(String name, Transport transport, String unavailableReason, ResolvedAddress route)
            implements RdmaProvider {
        @Override
        public List<Device> devices() {
            return List.of();
        }

        @Override
        public ResolvedAddress resolve(InetAddress destination) {
            return route;
        }
    }
}

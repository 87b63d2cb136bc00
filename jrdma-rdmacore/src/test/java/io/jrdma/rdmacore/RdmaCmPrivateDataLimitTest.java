package io.jrdma.rdmacore;

import io.jrdma.rdmacore.tck.RdmaCoreFixture;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The most private data an iWARP connection carries through rdma_cm on a real device (-Djrdma.tck.rdmacore.device=
 * siw0; skipped without one, and on RoCE, whose limits are the InfiniBand CM's): every MPA private data length from
 * 216 bytes up to the provider's declared limit ({@link RdmaCoreCm#MAX_IWARP_PRIVATE_DATA}) must connect in both
 * directions, found by bisection (a failing length is printed with what each side saw), and one byte more is refused
 * by the provider (EINVAL). The lengths are those on the wire: the application's data plus the 16-byte jrdma
 * trailer that a jrdma client appends (and a jrdma server answers with) when it fits.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RdmaCmPrivateDataLimitTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private RdmaCoreDevice dev;
    private RdmaCoreContext server, client;
    private InetAddress address;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void open() {
        dev = RdmaCoreFixture.requireDevice();
        Assumptions.assumeTrue(dev.transport() == Transport.IWARP, "skipped: " + dev.name() + " is not iWARP (over"
                + " RoCE rdma_cm's limits are the InfiniBand CM's, checked in RdmaCmConnectionTest)");
        server = dev.open();
        client = dev.open();
        address = RdmaCoreFixture.ipv4Of(dev);
        Assumptions.assumeTrue(address != null, "skipped: no IPv4 address of " + dev.name());
    }

    @AfterEach
    void close() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (RuntimeException e) {
                // a QP of a failed connection: closed with its context below
            }
        }
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private <T extends AutoCloseable> T track(T t) {
        toClose.add(t);
        return t;
    }

    private QueuePair newQp(RdmaCoreContext ctx) {
        ProtectionDomain pd = track(ctx.allocPd());
        CompletionQueue cq = track(ctx.createCq(16));
        return track(pd.createQp(QpInitAttr.rc(cq)));
    }

    private static byte[] data(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed + 7 * i);
        }
        return b;
    }

    /**
     * One connection: the client sends {@code fromClient} bytes, the server answers with {@code fromServer}; returns
     * null when it connected with both sides' data intact, else what went wrong on each side.
     */
    private String attempt(ConnectionManager.Listener l, int fromClient, int fromServer) throws Exception {
        QueuePair sqp = newQp(server);
        QueuePair cqp = newQp(client);
        byte[] c = data(fromClient, 1);
        byte[] s = data(fromServer, 9);
        CompletableFuture<Object> accepted = CompletableFuture.supplyAsync(() -> {
            try {
                ConnectionManager.ConnectRequest req = l.poll(WAIT);
                if (req == null) {
                    return "no request within " + WAIT;
                }
                if (!Arrays.equals(c, req.peerParam().privateData())) {
                    req.reject(new byte[0]);
                    return "the request carried " + req.peerParam().privateData().length + " bytes, not " + c.length;
                }
                return req.accept(sqp, ConnParam.defaults().withPrivateData(s), WAIT);
            } catch (RuntimeException e) {
                return "server: " + e;
            }
        });
        String clientSide = null;
        try {
            ConnectionManager.Connection cc = track(client.rdmaCm().connect(cqp, l.address(),
                    ConnParam.defaults().withPrivateData(c), WAIT));
            if (!Arrays.equals(s, cc.peerParam().privateData())) {
                clientSide = "the reply carried " + cc.peerParam().privateData().length + " bytes, not " + s.length;
            }
        } catch (RdmaException e) {
            clientSide = "client: " + e;
        }
        Object server = accepted.get(WAIT.toSeconds() * 2, TimeUnit.SECONDS);
        if (server instanceof AutoCloseable conn) {
            track(conn);
            return clientSide;
        }
        return (clientSide == null ? "" : clientSide + "; ") + server;
    }

    /** {@return the data length for {@code wire} bytes of MPA private data: with the 16-byte trailer when it fits} */
    private static int appFor(int wire) {
        return wire - RdmaCoreCm.EXT_LENGTH;
    }

    @Test
    void everyLengthUpToTheDeclaredLimitConnectsBothWaysAndOneMoreIsRefused() throws Exception {
        ConnectionManager.Listener l = track(server.rdmaCm().listen(new InetSocketAddress(address, 0)));
        int top = RdmaCoreCm.MAX_DATA_WITH_TRAILER + RdmaCoreCm.EXT_LENGTH; // the longest wire length with a trailer
        assertEquals(RdmaCoreCm.MAX_IWARP_PRIVATE_DATA, top, "the trailer's room is the limit less 16 bytes");
        List<String> wrong = new ArrayList<>();
        for (boolean request : new boolean[] {true, false}) {
            String way = request ? "connect (MPA Request)" : "accept (MPA Reply)";
            int good = 216, bad = top + 1;
            String first = attempt(l, request ? appFor(good) : 0, request ? 0 : appFor(good));
            System.out.println("private data " + way + ", " + good + " bytes on the wire: " + (first == null ? "connected" : first));
            assertEquals(null, first, way + " with " + good + " bytes of MPA private data");
            String last = attempt(l, request ? appFor(top) : 0, request ? 0 : appFor(top));
            System.out.println("private data " + way + ", " + top + " bytes on the wire: " + (last == null ? "connected" : last));
            if (last == null) {
                good = top;
            } else {
                bad = top;
                while (bad - good > 1) { // bisect: good connects, bad does not
                    int mid = (good + bad) >>> 1;
                    String r = attempt(l, request ? appFor(mid) : 0, request ? 0 : appFor(mid));
                    System.out.println("private data " + way + ", " + mid + " bytes on the wire: "
                            + (r == null ? "connected" : r));
                    if (r == null) {
                        good = mid;
                    } else {
                        bad = mid;
                    }
                }
            }
            System.out.println("private data " + way + ": the most that connects is " + good + " bytes");
            if (good != top) {
                wrong.add(way + ": the most MPA private data that connects on " + dev.name() + " is " + good
                        + " bytes, not the declared " + top);
            }
        }
        assertEquals(List.of(), wrong, "both directions carry the declared limit");
        QueuePair qp = newQp(client);
        RdmaException e = assertThrows(RdmaException.class, () -> client.rdmaCm().connect(qp, l.address(),
                ConnParam.defaults().withPrivateData(new byte[top + 1]), WAIT));
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.toString());
        assertTrue(e.getMessage().contains(String.valueOf(top)), "names the limit: " + e.getMessage());
    }
}

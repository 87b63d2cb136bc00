package io.jrdma.tck;

import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs on every provider: the ports of a device, as {@code ibv_query_port(ctx, port)} and
 * {@code ibv_query_gid(ctx, port, index)} number them. Every port 1 to {@code physPortCnt} (1 when the provider
 * reports no device attributes) answers {@code queryPort(n)}, and its GID table answers {@code gid(n, i)} and
 * {@code gidIndexOf(n, gid)} consistently with the list {@code queryPort(n)} gives; port 1 is what the no-argument
 * forms answer; ports 0 and {@code physPortCnt + 1} are EINVAL naming the valid range; a QP moved to INIT on port
 * {@code physPortCnt + 1}, and an address handle on it, are refused with EINVAL (the address handle test is skipped,
 * with the reason, on a provider without address handles). A counter read by name ({@code counter(name)}, port 1's
 * on rdma-core) agrees with the snapshot {@code counters()} gives, and an unknown name reads -1.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class PortTck extends VerbsTckSupport {
    /** For subclasses. */
    protected PortTck() {
    }

    /** {@return the client device's ports: physPortCnt, or 1 when the provider reports no device attributes} */
    private int ports() {
        DeviceAttr a = attrOrNull(client);
        int n = a == null ? 1 : a.physPortCnt();
        assertTrue(n >= 1 && n <= 255, "physPortCnt is 1..255: " + n);
        assertEquals(n, client.ctx.portCount(), "DeviceContext.portCount() is physPortCnt (1 without device attributes)");
        return n;
    }

    private static boolean isZero(Gid g) {
        for (byte b : g.raw()) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    @Test
    void everyPortAnswersQueryPortAndItsGidTableConsistently() {
        int ports = ports();
        assertEquals(client.ctx.queryPort(), client.ctx.queryPort(1), "queryPort() is port 1's");
        for (int n = 1; n <= ports; n++) {
            PortAttr p = client.ctx.queryPort(n);
            List<Gid> gids = p.gids();
            int valid = 0;
            for (int i = 0; i < gids.size(); i++) {
                Gid g = gids.get(i);
                if (isZero(g)) {
                    continue; // an empty entry (rdma-core lists it as the zero GID so that indexes stay indexes)
                }
                valid++;
                assertEquals(g, client.ctx.gid(n, i), "gid(" + n + ", " + i + ") is entry " + i + " of queryPort(" + n + ")");
                int j = client.ctx.gidIndexOf(n, g);
                assertTrue(j >= 0 && j <= i && gids.get(j).equals(g), "gidIndexOf(" + n + ", " + g + ") is " + j
                        + ": an index of that GID in port " + n + "'s table " + gids + ", at most " + i);
                if (n == 1) {
                    assertEquals(client.ctx.gid(i), client.ctx.gid(1, i), "gid(" + i + ") is port 1's");
                    assertEquals(client.ctx.gidIndexOf(g), j, "gidIndexOf(" + g + ") is port 1's");
                }
            }
            int port = n;
            int beyond = gids.size();
            RdmaException e = assertThrows(RdmaException.class, () -> client.ctx.gid(port, beyond),
                    "gid(" + n + ", " + beyond + "): an index beyond the table");
            assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
            if (n == 1 && fx.device().transport() != io.jrdma.verbs.Transport.SHM) {
                assertTrue(valid > 0, "port 1 has a GID (the fixture's address is on it): " + gids);
            }
        }
        int mine = gidIndex(client);
        assertEquals(fx.gid(client.ctx), client.ctx.gid(1, mine), "the fixture's address is on port 1");
    }

    private void assertNoSuchPort(int port, int ports, String what, Executable call) {
        RdmaException e = assertThrows(RdmaException.class, call, what + " of port " + port);
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), what + " of port " + port + ": " + e.getMessage());
        assertTrue(e.getMessage().contains("1.." + ports), what + " of port " + port + ": the message names the valid"
                + " range 1.." + ports + ": " + e.getMessage());
    }

    @Test
    void aCounterReadByNameIsTheSnapshotsAndAnUnknownNameIsMinusOne() {
        // the counters of a context that is idle but may still acknowledge: each read by name lies between two
        // snapshots (counters only grow); a name the snapshot lacks, or one that is no plain name, reads -1
        java.util.Map<String, Long> before = client.ctx.counters();
        long[] byName = new long[before.size()];
        int i = 0;
        for (String name : before.keySet()) {
            byName[i++] = client.ctx.counter(name);
        }
        java.util.Map<String, Long> after = client.ctx.counters();
        i = 0;
        for (java.util.Map.Entry<String, Long> e : before.entrySet()) {
            long v = byName[i++];
            Long later = after.get(e.getKey());
            assertTrue(later != null && e.getValue() <= v && v <= later, "counter(\"" + e.getKey() + "\") = " + v
                    + ", between the snapshots' " + e.getValue() + " and " + later);
        }
        assertEquals(-1, client.ctx.counter("no_such_counter_" + System.nanoTime()), "an unknown counter");
        assertEquals(-1, client.ctx.counter("../hw_counters/rcvd_pkts"), "a path is no counter's name");
        assertEquals(-1, client.ctx.counter(""), "an empty name");
    }

    @Test
    void portsOutsideOneToPhysPortCntAreEinvalNamingTheRange() {
        int ports = ports();
        Gid mine = fx.gid(client.ctx);
        for (int port : new int[] {0, ports + 1, -1}) {
            assertNoSuchPort(port, ports, "queryPort", () -> client.ctx.queryPort(port));
            assertNoSuchPort(port, ports, "gid", () -> client.ctx.gid(port, 0));
            assertNoSuchPort(port, ports, "gidIndexOf", () -> client.ctx.gidIndexOf(port, mine));
        }
    }

    @Test
    void aQpMovedToInitOnAPortBeyondPhysPortCntIsRefusedAndThenTakesAPortThatExists() {
        int ports = ports();
        QueuePair qp = client.newQp(QpInitAttr.rc(client.newCq(16)));
        RdmaException e = assertThrows(RdmaException.class,
                () -> qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(ports + 1).accessFlags(0)));
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
        assertTrue(e.getMessage().contains("port " + (ports + 1)), "the message names the port: " + e.getMessage());
        assertEquals(QpState.RESET, qp.state(), "a refused INIT leaves the QP in RESET");
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(ports).accessFlags(0));
        assertEquals(QpState.INIT, qp.state());
    }

    @Test
    void anAddressHandleOnAPortBeyondPhysPortCntIsRefused() {
        // without address handles (UnsupportedVerbsTck checks their EOPNOTSUPP) this is skipped, saying so
        DeviceAttr a = require("address handles (UD)", d -> d.maxAh() > 0 && d.supports(QpType.UD));
        int ports = a.physPortCnt();
        AhAttr good = AhAttr.of(fx.gid(server.ctx), gidIndex(client));
        AhAttr bad = new AhAttr(good.dgid(), good.sgidIndex(), good.hopLimit(), good.trafficClass(), good.flowLabel(),
                good.sl(), ports + 1, DeviceOptions.ROCE_V2_PORT);
        RdmaException e = assertThrows(RdmaException.class, () -> track(client, "ah", client.pd.createAh(bad)));
        assertEquals(RdmaException.Errno.EINVAL, e.errno(), e.getMessage());
        assertTrue(e.getMessage().contains("port " + (ports + 1)), "the message names the port: " + e.getMessage());
        track(client, "ah", client.pd.createAh(good)).close();
    }
}

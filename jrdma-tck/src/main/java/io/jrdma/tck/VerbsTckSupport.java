package io.jrdma.tck;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceCap;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import org.junit.jupiter.api.Assumptions;

import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What the TCK classes of the verbs beyond RC share: the provider's declared support, read from
 * {@code queryDevice()}, with tests that need a feature the provider does not declare <em>aborted</em>
 * with the reason (JUnit assumptions, reported as skipped, never passed); QPs brought to RTS by hand
 * ({@code modify}, as {@code ibv_*_pingpong} do, since the connection manager sets up RC only); address
 * handles between the two sides; and waits for asynchronous events.
 */
public abstract class VerbsTckSupport extends TckSupport {
    /** The Q_Key the TCK's UD QPs use. */
    protected static final int QKEY = 0x1111_1111;

    /** For subclasses. */
    protected VerbsTckSupport() {
    }

    /**
     * {@return the device attributes of {@code side}'s context, or null when the provider does not report them
     * (queryDevice throws EOPNOTSUPP, which is then checked to name the verb)}
     *
     * @param side the side
     */
    protected final DeviceAttr attrOrNull(Side side) {
        try {
            return side.ctx.queryDevice();
        } catch (RdmaException e) {
            if (e.errno() != RdmaException.Errno.EOPNOTSUPP) {
                throw e;
            }
            assertTrue(e.getMessage().contains("queryDevice"), "EOPNOTSUPP names the verb: " + e.getMessage());
            return null;
        }
    }

    private String provider() {
        return fx.device().provider() + " (" + fx.device().name() + ")";
    }

    /**
     * Aborts the test unless the provider declares {@code feature}.
     *
     * @param feature what the test needs, for the reason
     * @param has     whether the device attributes declare it
     * @return the client's device attributes
     */
    protected final DeviceAttr require(String feature, Predicate<DeviceAttr> has) {
        DeviceAttr a = attrOrNull(client);
        Assumptions.assumeTrue(a != null, () -> "skipped: provider " + provider() + " reports no device attributes"
                + " (queryDevice: EOPNOTSUPP), so it declares no " + feature);
        Assumptions.assumeTrue(has.test(a), () -> "skipped: provider " + provider() + " does not declare " + feature
                + " in queryDevice(): " + a);
        return a;
    }

    /**
     * Aborts the test unless the provider has QPs of {@code type}.
     *
     * @param type the QP type
     * @return the device attributes
     */
    protected final DeviceAttr requireQpType(QpType type) {
        return require(type + " queue pairs", a -> a.supports(type));
    }

    /** {@return the device attributes; aborts the test unless the provider has shared receive queues} */
    protected final DeviceAttr requireSrq() {
        return require("shared receive queues (max_srq > 0)", DeviceAttr::supportsSrq);
    }

    /**
     * Aborts the test unless the provider has memory windows of {@code type}.
     *
     * @param type the window type
     * @return the device attributes
     */
    protected final DeviceAttr requireMw(MwType type) {
        return require("memory windows of " + type, a -> a.supportsMw(type));
    }

    /** {@return the device attributes; aborts the test unless the provider has fast registration and LOCAL_INV} */
    protected final DeviceAttr requireFastReg() {
        DeviceAttr a = attrOrNull(client);
        if (a != null && !a.has(DeviceCap.MEM_MGT_EXTENSIONS)) {
            // the skip says why, in the provider's words: its allocMr's EOPNOTSUPP
            String why;
            try {
                client.pd.allocMr(4096).close();
                why = "allocMr did not refuse";
            } catch (RdmaException e) {
                why = e.getMessage();
            }
            String reason = why;
            Assumptions.abort(() -> "skipped: provider " + provider() + " does not declare fast registration"
                    + " (MEM_MGT_EXTENSIONS) in queryDevice(): " + reason);
        }
        return require("fast registration (MEM_MGT_EXTENSIONS)", x -> x.has(DeviceCap.MEM_MGT_EXTENSIONS));
    }

    /**
     * Aborts the test unless {@code side}'s context has asynchronous events (a poll does not throw EOPNOTSUPP).
     * The probe is a poll: run it before anything that raises an event.
     *
     * @param side the side whose events the test waits for
     */
    protected final void requireAsyncEvents(Side side) {
        try {
            side.ctx.pollAsyncEvent(new AsyncEvent());
        } catch (RdmaException e) {
            if (e.errno() != RdmaException.Errno.EOPNOTSUPP) {
                throw e;
            }
            Assumptions.abort("skipped: provider " + provider() + " has no asynchronous events: " + e.getMessage());
        }
    }

    /**
     * {@return the next asynchronous event of {@code side} that {@code match} accepts, driving INVOKER contexts
     * as it waits; events it does not accept are skipped; fails at the deadline ({@link #WAIT})}
     *
     * @param side  whose context
     * @param match the event wanted
     * @param what  what is awaited, for the failure message
     */
    protected final AsyncEvent awaitAsync(Side side, Predicate<AsyncEvent> match, String what) {
        AsyncEvent e = new AsyncEvent();
        StringBuilder skipped = new StringBuilder();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            int work = pump();
            if (side.ctx.pollAsyncEvent(e)) {
                if (match.test(e)) {
                    return e;
                }
                skipped.append(' ').append(e);
                continue;
            }
            if (System.nanoTime() - deadline > 0) {
                fail("no asynchronous event within " + WAIT + " for " + what + " (others seen:" + skipped + "); "
                        + counters());
            }
            if (work == 0) {
                LockSupport.parkNanos(20_000);
            }
        }
    }

    // ------------------------------------------------------------------ addresses

    /**
     * {@return the index of the fixture's address in {@code side}'s GID table}
     *
     * @param side the side
     */
    protected final int gidIndex(Side side) {
        int i = side.ctx.gidIndexOf(fx.gid(side.ctx));
        assertTrue(i >= 0, "the fixture's address " + fx.address() + " is not in " + side + "'s GID table "
                + side.ctx.queryPort().gids());
        return i;
    }

    /**
     * {@return the UDP port {@code side} receives on}
     *
     * @param side the side
     */
    protected static int udpPort(Side side) {
        return side.ctx.queryPort().udpPort();
    }

    /** {@return the path MTU both sides' ports allow} */
    protected final Mtu pathMtu() {
        Mtu a = client.ctx.queryPort().activeMtu();
        Mtu b = server.ctx.queryPort().activeMtu();
        return a.bytes() <= b.bytes() ? a : b;
    }

    /**
     * {@return the attributes of an address handle of {@code from} to {@code to}}
     *
     * @param from the sending side
     * @param to   the receiving side
     */
    protected final AhAttr ahAttr(Side from, Side to) {
        return AhAttr.of(fx.gid(to.ctx), gidIndex(from)).withUdpPort(udpPort(to));
    }

    /**
     * {@return a new address handle of {@code from} to {@code to}, closed at cleanup}
     *
     * @param from the sending side
     * @param to   the receiving side
     */
    protected final AddressHandle newAh(Side from, Side to) {
        return track(from, "AH", from.pd.createAh(ahAttr(from, to)));
    }

    // ------------------------------------------------------------------ bringing QPs up by hand

    /**
     * Moves a UD QP from RESET to RTS: INIT with P_Key index 0, port 1 and {@code qkey}; RTR; RTS with send PSN 0.
     *
     * @param qp   a UD QP in RESET
     * @param qkey its Q_Key
     */
    protected static void readyUd(QueuePair qp, int qkey) {
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).qkey(qkey));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        assertEquals(QpState.RTS, qp.state(), "UD QP after RESET→INIT→RTR→RTS");
        assertEquals(qkey, qp.query().qkey(), "query() reports the Q_Key");
    }

    /**
     * Connects {@code qp} of {@code side} to {@code peer} of the other side by hand (RC or UC), as
     * {@code ibv_rc_pingpong} and {@code ibv_uc_pingpong} do: INIT, RTR to the peer, RTS.
     *
     * @param side   the side {@code qp} belongs to
     * @param qp     the QP, in RESET
     * @param peer   the peer's QP
     * @param access the remote access {@code qp} allows
     */
    protected final void connectByHand(Side side, QueuePair qp, QueuePair peer, int access) {
        Side other = side == client ? server : client;
        boolean rc = qp.type() == QpType.RC;
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(access));
        AddressVector av = AddressVector.of(fx.gid(other.ctx), gidIndex(side)).withUdpPort(udpPort(other));
        QpAttr rtr = new QpAttr().state(QpState.RTR).av(av).pathMtu(pathMtu()).destQpn(peer.qpn()).rqPsn(0);
        if (rc) {
            rtr.maxDestRdAtomic(1).minRnrTimer(12);
        }
        qp.modify(rtr);
        QpAttr rts = new QpAttr().state(QpState.RTS).sqPsn(0);
        if (rc) {
            rts.timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(1);
        }
        qp.modify(rts);
        assertEquals(QpState.RTS, qp.state(), qp.type() + " QP connected by hand");
    }

    /**
     * Connects a client QP and a server QP to each other by hand.
     *
     * @param cqp    the client's QP, in RESET
     * @param sqp    the server's QP, in RESET
     * @param access the remote access both allow
     */
    protected final void connectByHand(QueuePair cqp, QueuePair sqp, int access) {
        if (fx.device().transport() == io.jrdma.verbs.Transport.IWARP && cqp.type() == QpType.RC) {
            // an iWARP RC QP reaches RTS only over a TCP stream, which only its connection manager makes
            // (siw: the same); the QPs are made and given to it exactly as the by-hand path would use them
            connectThroughCm(cqp, sqp, access);
            return;
        }
        connectByHand(client, cqp, sqp, access);
        connectByHand(server, sqp, cqp, access);
    }

    /**
     * Connects two RC QPs in RESET through the connection manager (the server accepting in a thread of its
     * own, its listener closed once it accepted); the connections are closed at cleanup.
     */
    private void connectThroughCm(QueuePair cqp, QueuePair sqp, int access) {
        if (access != 0) {
            sqp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(access));
            cqp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(access));
        }
        try (Accepting acc = new Accepting(req -> req.accept(sqp, io.jrdma.verbs.ConnParam.defaults(), WAIT))) {
            track(client, "client connection",
                    client.ctx.connectionManager().connect(cqp, acc.address(), io.jrdma.verbs.ConnParam.defaults(), WAIT));
            track(server, "server connection", acc.result());
        }
        assertEquals(QpState.RTS, cqp.state(), "client QP connected through the connection manager");
    }

    /** Remote access for WRITE-only tests (UC has no READ or atomics). */
    protected static final int WRITE_ACCESS = Access.REMOTE_WRITE;
}

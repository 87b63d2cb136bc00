package io.jrdma.tck;

import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Asynchronous events ({@code ibv_get_async_event}): polling and waiting with a deadline, the communication
 * established event of a QP in RTR, and the CQ error of an overrun CQ. (The SRQ limit and last-WQE events are
 * in {@link SrqTck}.) Aborted with the reason on a provider without asynchronous events.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
public abstract class AsyncEventTck extends VerbsTckSupport {
    /** For subclasses. */
    protected AsyncEventTck() {
    }

    @Test
    void aFreshContextHasNoEventAndAWaitEndsAtItsTimeout() {
        requireAsyncEvents(client);
        AsyncEvent e = new AsyncEvent();
        assertFalse(client.ctx.pollAsyncEvent(e), "an event on a fresh context: " + e);
        assertNull(e.type(), "a poll that found nothing leaves the event as it was");
        Duration timeout = Duration.ofMillis(100);
        long t0 = System.nanoTime();
        assertFalse(client.ctx.awaitAsyncEvent(e, timeout), "an event on a fresh context: " + e);
        long took = System.nanoTime() - t0;
        assertTrue(took >= timeout.toNanos(), "awaitAsyncEvent returned after " + took / 1000 + " us, before its timeout");
        assertTrue(took < WAIT.toNanos(), "awaitAsyncEvent took " + took / 1_000_000 + " ms for a timeout of 100 ms");
        assertFalse(client.ctx.awaitAsyncEvent(e, Duration.ZERO), "a zero timeout polls");
    }

    @Test
    void theFirstPacketToAQpInRtrRaisesCommEst() {
        requireAsyncEvents(server);
        Assumptions.assumeTrue(fx.device().transport() != io.jrdma.verbs.Transport.IWARP, "skipped: an iWARP QP is"
                + " never in RTR with a peer sending (its connection manager moves it to RTS with the TCP stream), so"
                + " iWARP has no COMM_EST (siw raises none)");
        CompletionQueue ccq = client.newCq(16);
        CompletionQueue scq = server.newCq(16);
        QueuePair cqp = client.newQp(QpInitAttr.rc(ccq));
        QueuePair sqp = server.newQp(QpInitAttr.rc(scq));
        connectByHand(client, cqp, sqp, 0);
        // the server's QP stops in RTR, as a passive side does until it learns the connection is up
        sqp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1).accessFlags(0));
        sqp.modify(new QpAttr().state(QpState.RTR)
                .av(io.jrdma.verbs.AddressVector.of(fx.gid(client.ctx), gidIndex(server))
                        .withUdpPort(udpPort(client)))
                .pathMtu(pathMtu()).destQpn(cqp.qpn()).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(12));
        post(sqp, new RecvWorkRequest().wrId(1).sge(0, server.mr, 0, 64));
        post(cqp, new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, client.mr, 0, 64));
        assertEquals(WcStatus.SUCCESS, awaitCompletion(scq, "the receive in RTR").status());
        fx.deviation(ProviderFixture.Deviation.NO_COMM_EST_EVENT).ifPresent(why -> Assumptions.abort(
                "skipped (the receive in RTR was checked, the event not): " + why));
        AsyncEvent e = awaitAsync(server, ev -> ev.type() == AsyncEvent.Type.COMM_EST, "COMM_EST");
        assertSame(sqp, e.queuePair(), "the event names the QP: " + e);
        assertEquals(AsyncEvent.Element.QP, e.type().element());
    }

    @Test
    void anOverrunCqRaisesCqErr() {
        requireAsyncEvents(client);
        Link l = link().cqe(4).connect();
        int cap = l.ccq.capacity();
        Assumptions.assumeTrue(cap < 100, () -> "skipped: the provider made a CQ of " + cap
                + " entries for 4 asked; the test posts one more than the CQ holds into a 128-deep send queue");
        SendWorkRequest wr = new SendWorkRequest();
        for (int i = 0; i <= cap; i++) {
            post(l.cqp, wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .sge(0, client.mr, 0, 8).remote(server.addr(0), server.mr.rkey()));
        }
        AsyncEvent e = awaitAsync(client, ev -> ev.type() == AsyncEvent.Type.CQ_ERR, "CQ_ERR of a CQ of " + cap
                + " entries given " + (cap + 1) + " completions");
        assertSame(l.ccq, e.completionQueue(), "the event names the CQ: " + e);
    }
}

package io.jrdma.engine.ibcm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jrdma.engine.ibcm.IbCmTest.RawPeer;
import io.jrdma.engine.ibcm.IbCmTest.Side;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager.ConnectRequest;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionManager.Event;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.mad.CmMessage;
import io.jrdma.wire.mad.CmRej;
import io.jrdma.wire.mad.Mad;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The InfiniBand CM's listener cannot be held hostage by clients that send a REQ and then nothing (issue 16):
 * a server thread that polls and accepts as a service does is not held by them, a real client is served
 * promptly, and each unconfirmed connection ends at its deadline through its own events.
 * {@code -Djrdma.test.hostile.report=true} prints the times.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IbCmListenerHostageTest {
    private static final boolean REPORT = Boolean.getBoolean("jrdma.test.hostile.report");

    /** An accepted connection and when its accept began (its deadline counts from there). */
    record Accepted(Connection conn, long acceptStart) {
    }

    @Test
    void clientsSilentAfterTheirRequestDoNotHoldUpTheNextAccept() throws Exception {
        int n = 20;
        Duration confirm = Duration.ofSeconds(1);
        List<RawPeer> silent = new ArrayList<>();
        List<QueuePair> serverQps = new ArrayList<>();
        LinkedBlockingQueue<Accepted> served = new LinkedBlockingQueue<>();
        List<Connection> toClose = new ArrayList<>();
        try (Side s = new Side(ThreadingMode.DEDICATED); Side c = new Side(ThreadingMode.DEDICATED);
             Listener l = s.ctx.rdmaCm().listen(new InetSocketAddress(IbCmTest.LO, 0))) {
            // the service: one thread polls the listener and accepts every request
            Thread server = Thread.ofPlatform().daemon().name("ibcm-hostage-server").start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    ConnectRequest r = l.poll(Duration.ofMillis(100));
                    if (r == null) {
                        continue;
                    }
                    QueuePair qp = s.pd.createQp(QpInitAttr.rc(s.cq));
                    synchronized (serverQps) {
                        serverQps.add(qp);
                    }
                    long start = System.nanoTime();
                    try {
                        served.add(new Accepted(r.accept(qp, ConnParam.defaults(), confirm), start));
                    } catch (RuntimeException e) {
                        // a client gone during accept: the service goes on
                    }
                }
            });
            try {
                for (int i = 0; i < n; i++) {
                    silent.add(new RawPeer(s.ctx.queryPort().udpPort()));
                }
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    RawPeer p = silent.get(i);
                    p.send(p.req(0x20000 + i, l.address().getPort(), 0x300 + i).toMad(100 + i));
                }
                // every one accepted at once: accept does not wait for an RTU
                List<Accepted> accepted = new ArrayList<>();
                long until = t0 + 3_000_000_000L;
                for (int i = 0; i < n; i++) {
                    Accepted a = served.poll(Math.max(1, until - System.nanoTime()), TimeUnit.NANOSECONDS);
                    assertNotNull(a, "the server accepted " + i + " of " + n + " clients that sent a REQ and then"
                            + " nothing within 3 s: its accept waits for them");
                    toClose.add(a.conn());
                    accepted.add(a);
                }
                long allAccepted = System.nanoTime() - t0;

                // a real client is served promptly, and its connection carries a SEND
                long c0 = System.nanoTime();
                CompletableFuture<Connection> client = CompletableFuture.supplyAsync(() -> c.ctx.rdmaCm().connect(
                        c.qp, l.address(), ConnParam.defaults(), IbCmTest.T));
                Connection cc = client.get(20, TimeUnit.SECONDS);
                long took = System.nanoTime() - c0;
                toClose.add(cc);
                Accepted real = served.poll(5, TimeUnit.SECONDS);
                assertNotNull(real, "the server did not report the real client's connection");
                toClose.add(real.conn());
                assertTrue(took < 1_000_000_000L, "the real client took " + took / 1_000_000 + " ms behind " + n
                        + " clients silent after their REQ");
                QueuePair sqp = real.conn().qp();
                assertEquals(0, sqp.postRecv(new RecvWorkRequest().wrId(1).sge(0, s.mr, 0, 64)));
                c.buf.setString(0, "served");
                assertEquals(0, c.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND)
                        .flags(SendFlags.SIGNALED).sge(0, c.mr, 0, 7)));
                assertEquals(WcStatus.SUCCESS, c.await(s).status());
                WorkCompletion rw = s.await(c);
                assertEquals(WcStatus.SUCCESS, rw.status());
                assertEquals("served", s.buf.getString(0));

                // nobody polled the silent clients' connections: each ends at its deadline through its events
                long firstEnd = Long.MAX_VALUE;
                long lastEnd = 0;
                for (Accepted a : accepted) {
                    assertEquals(Event.DISCONNECTED, a.conn().pollEvent(Duration.ofSeconds(10)),
                            "an unconfirmed connection ends");
                    long end = System.nanoTime() - a.acceptStart();
                    assertTrue(end >= confirm.toNanos() && end < confirm.toNanos() + 2_000_000_000L, "an unconfirmed"
                            + " connection ended " + end / 1_000_000 + " ms after its accept began; its deadline is "
                            + confirm);
                    firstEnd = Math.min(firstEnd, end);
                    lastEnd = Math.max(lastEnd, end);
                    assertEquals(QpState.ERROR, a.conn().qp().state(), "an unconfirmed connection's QP");
                    assertEquals(Event.TIMEWAIT_EXIT, a.conn().pollEvent(Duration.ofSeconds(5)));
                }
                assertEquals((long) n, s.ctx.counters().get("ibcm_rtu_timed_out"));
                // each silent client was told: a REJ with reason timeout for its own comm ID
                for (int i = 0; i < n; i++) {
                    CmRej rej = null;
                    for (byte[] m; rej == null && (m = silent.get(i).receive(5000)) != null; ) {
                        if (CmMessage.decode(m, 0, Mad.LENGTH) instanceof CmRej j) {
                            rej = j; // after the REP and its retries
                        }
                    }
                    assertNotNull(rej, "silent client " + i + " got no REJ");
                    assertEquals(CmRej.REASON_TIMEOUT, rej.reason());
                    assertEquals(0x20000 + i, rej.remoteCommId());
                }
                // the real client confirmed: its connection outlives the deadline
                assertNull(real.conn().pollEvent(Duration.ZERO));
                assertEquals(QpState.RTS, sqp.state());
                assertNull(cc.pollEvent(Duration.ZERO));
                if (REPORT) {
                    System.out.printf(java.util.Locale.ROOT, "[hostile-listener] IB CM: %d clients silent after their"
                                    + " REQ: all accepted in %.1f ms; a real client then connected in %.1f ms; the %d"
                                    + " unconfirmed connections ended %d-%d ms after their accept began (deadline %d"
                                    + " ms), counted%n", n, allAccepted / 1e6, took / 1e6, n, firstEnd / 1_000_000,
                            lastEnd / 1_000_000, confirm.toMillis());
                }
            } finally {
                server.interrupt();
                server.join(5_000);
                for (Connection conn : toClose) {
                    conn.close();
                }
                synchronized (serverQps) {
                    for (QueuePair qp : serverQps) {
                        qp.close();
                    }
                }
                for (RawPeer p : silent) {
                    p.close();
                }
            }
        }
    }
}

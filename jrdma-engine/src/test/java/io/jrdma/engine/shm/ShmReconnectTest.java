package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A UC connection one end of which is reset and connected again while the other is not: as a NIC's UC responder takes
 * the next message that starts whatever its PSN, the messages sent after it arrive. Before, a receiver reset alone
 * left its sender waiting for ring room for ever, and a sender reset alone wrote where its receiver never looked.
 * RC: a sender reset alone goes on behind what it wrote; a receiver reset alone fails its sender's messages in flight
 * with RETRY_EXC_ERR, as a NIC's requester whose PSNs its responder no longer expects (before, it waited for ever).
 * Also ring positions across 2^32.
 */
@Timeout(60)
class ShmReconnectTest {
    private static final int SIZE = 1 << 18;

    private static long counter(ShmPair.Side s, Counter c) {
        return ((Context) s.ctx).engine.counters.get(c);
    }

    /** One 8-byte SEND from a to b holding {@code value}, and both completions checked. */
    private static void message(ShmPair p, long value) {
        assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(value).sge(0, p.b.mr, 4096, 64)));
        p.a.buf.set(ValueLayout.JAVA_LONG, 0, value);
        assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(value).opcode(WrOpcode.SEND)
                .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)));
        WorkCompletion s = p.await(p.a.cq);
        assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
        assertEquals(value, s.wrId());
        WorkCompletion r = p.await(p.b.cq);
        assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
        assertEquals(WcOpcode.RECV, r.opcode());
        assertEquals(value, r.wrId(), "the receive of message " + value);
        assertEquals(8, r.byteLen());
        assertEquals(value, p.b.buf.get(ValueLayout.JAVA_LONG, 4096), "message " + value + "'s data");
    }

    /**
     * Posts a 200 KiB SEND on a and drives a's engine alone (INVOKER: b's runs only when driven), so that the
     * message's first chunks fill b's ring, unread; asserts it has not completed.
     */
    private static void longSendIntoAFullRing(ShmPair p, long wrId) {
        assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(wrId).opcode(WrOpcode.SEND)
                .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 200 << 10)));
        for (int i = 0; i < 1000; i++) {
            p.a.ctx.progress();
        }
        assertEquals(0, p.a.cq.poll(new WorkCompletion()), "completed before the ring emptied");
    }

    /** Drives a's engine alone for {@code nanos}, asserting that a's CQ gets nothing. */
    static void drivenAloneCompletesNothing(ShmPair p, long nanos, String what) {
        WorkCompletion wc = new WorkCompletion();
        long until = System.nanoTime() + nanos;
        while (System.nanoTime() < until) {
            p.a.ctx.progress();
            assertEquals(0, p.a.cq.poll(wc), what + ": " + wc);
        }
    }

    private static void reconnect(ShmPair.Side s, ShmPair.Side peer) {
        s.qp.modify(new QpAttr().state(QpState.RESET));
        if (s.qp.type() == io.jrdma.verbs.QpType.UC) {
            ShmPair.connectUc(s, peer);
        } else {
            ShmPair.connect(s, peer, 7);
        }
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aReceiverResetAndConnectedAgainAloneTakesItsSendersNextMessages(ThreadingMode mode) {
        try (ShmPair p = ShmPair.uc(mode, SIZE)) {
            for (int i = 1; i <= 21; i++) { // past the ring's 16 slots
                message(p, i);
            }
            reconnect(p.b, p.a);
            for (int i = 100; i < 140; i++) { // its ring twice over again
                message(p, i);
            }
            assertEquals(QpState.RTS, p.a.qp.state());
        }
    }

    /**
     * RC: a receiver reset and connected again alone, to the same sender, while that sender's SEND is in flight: its
     * ring started anew at another base and will never answer it; the sender's liveness check sees the receiver's
     * R_READ outside its connection's positions and fails the SEND with RETRY_EXC_ERR (before, it waited for ever).
     * INVOKER: the new base set below the positions the sender's connection wrote, and above them (each side of the
     * check); DEDICATED: the random base, the SEND posted after the reconnection (b's engine would answer one before).
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"below", "above", "dedicated"})
    void anRcReceiverResetAndConnectedAgainAloneFailsItsSendersMessageInFlight(String how) {
        boolean dedicated = how.equals("dedicated");
        try (ShmPair p = new ShmPair(dedicated ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER, SIZE)) {
            message(p, 1);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 2);
            SendWorkRequest second = new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, p.a.mr, 0, 8);
            if (dedicated) {
                reconnect(p.b, p.a);
                assertEquals(0, p.a.qp.postSend(second));
            } else {
                assertEquals(0, p.a.qp.postSend(second)); // in b's ring, b not driven: no answer
                reconnect(p.b, p.a);
                ShmQp a = (ShmQp) p.a.qp;
                ShmQp b = (ShmQp) p.b.qp;
                long base = how.equals("below") ? a.ringStart - 1000 : a.ringWrite + 1000;
                b.ringBase = base;
                b.ringRead = base;
                b.ringReadPublished = base;
                ShmTransport.LONG.setVolatile(p.b.transport().ctrl, b.resp + Ctrl.R_READ, base);
            }
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(2).sge(0, p.b.mr, 4096, 64)));
            WorkCompletion s = p.await(p.a.cq);
            assertEquals(WcStatus.RETRY_EXC_ERR, s.status(), s.toString());
            assertEquals(2, s.wrId());
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (p.a.qp.state() != QpState.ERROR) {
                assertTrue(System.nanoTime() < deadline, "the sender's QP did not fail");
                p.a.ctx.progress();
            }
            WorkCompletion wc = new WorkCompletion();
            assertEquals(0, p.b.cq.poll(wc), "the receiver took a message of the connection it left: " + wc);
        }
    }

    /**
     * RC: a sender reset and connected again alone, with two of its earlier messages still unread in the ring, and a
     * SEND in flight behind them for 100 ms of its engine's duty cycles (five liveness checks) before the receiver
     * runs: the receiver's R_READ stays within the positions the sender's connection knows, nothing fails, and the
     * three messages arrive in order (the first two were flushed at the sender by its reset, as packets already on a
     * wire still reach a NIC's responder).
     */
    @Test
    void anRcSenderResetAloneWithItsEarlierMessagesUnreadFailsNothing() {
        try (ShmPair p = new ShmPair(ThreadingMode.INVOKER, SIZE)) {
            for (int i = 1; i <= 21; i++) {
                message(p, i);
            }
            for (int i = 0; i < 2; i++) {
                p.a.buf.set(ValueLayout.JAVA_LONG, 0, 30 + i);
                assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(30 + i).opcode(WrOpcode.SEND)
                        .sge(0, p.a.mr, 0, 8))); // unsignaled, into b's ring; b not driven
            }
            reconnect(p.a, p.b);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 32);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(32).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)));
            drivenAloneCompletesNothing(p, 100_000_000L, "completed before its receiver ran");
            assertTrue(!((ShmQp) p.a.qp).ringLost, "a healthy connection's ring taken for lost");
            for (int i = 0; i < 3; i++) {
                assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(30 + i).sge(0, p.b.mr, 4096 + 64 * i, 64)));
            }
            for (int i = 0; i < 3; i++) {
                WorkCompletion r = p.await(p.b.cq);
                assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                assertEquals(30 + i, r.wrId());
                assertEquals(30 + i, p.b.buf.get(ValueLayout.JAVA_LONG, 4096 + 64 * i), "message " + (30 + i));
            }
            WorkCompletion s = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
            assertEquals(32, s.wrId());
            assertEquals(QpState.RTS, p.a.qp.state());
        }
    }

    /**
     * RC: a receiver that refused a message (RNR: it drops every later slot until that message comes again, marked so)
     * when its sender was reset and connected again alone takes the sender's next message, which its first since it
     * connected is marked as (before, it dropped every message and the sender waited for ever).
     */
    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void anRcReceiverRefusingWhenItsSenderIsResetAloneTakesItsNextMessage(ThreadingMode mode) {
        try (ShmPair p = new ShmPair(mode, SIZE)) {
            message(p, 1);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 2);
            long rnr = counter(p.b, Counter.SEND_RNR_ERR);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND)
                    .sge(0, p.a.mr, 0, 8))); // no receive posted at b
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (counter(p.b, Counter.SEND_RNR_ERR) == rnr) { // b refuses it (RNR); DEDICATED: b's engine does
                assertTrue(System.nanoTime() < deadline, "the receiver did not refuse the message");
                p.b.ctx.progress();
            }
            reconnect(p.a, p.b);
            message(p, 3);
            message(p, 4);
        }
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void anRcSenderResetAndConnectedAgainAloneGoesOnBehindWhatItWrote(boolean dedicated) {
        try (ShmPair p = new ShmPair(dedicated ? ThreadingMode.DEDICATED : ThreadingMode.INVOKER, SIZE)) {
            for (int i = 1; i <= 21; i++) {
                message(p, i);
            }
            reconnect(p.a, p.b);
            for (int i = 100; i < 140; i++) {
                message(p, i);
            }
            assertEquals(QpState.RTS, p.b.qp.state());
        }
    }

    @ParameterizedTest
    @EnumSource(ThreadingMode.class)
    void aSenderResetAndConnectedAgainAloneIsTakenByItsReceiver(ThreadingMode mode) {
        try (ShmPair p = ShmPair.uc(mode, SIZE)) {
            for (int i = 1; i <= 21; i++) {
                message(p, i);
            }
            reconnect(p.a, p.b);
            for (int i = 100; i < 140; i++) {
                message(p, i);
            }
            // and both again, the receiver first, then the sender alone once more
            reconnect(p.b, p.a);
            message(p, 200);
            reconnect(p.a, p.b);
            message(p, 201);
            assertEquals(QpState.RTS, p.b.qp.state());
        }
    }

    /**
     * A sender reset in the middle of a message whose first chunks are in the ring, unread: connected again, it writes
     * behind them (not over them), and its receiver, finding a message that starts in the middle of that one, drops
     * the one in progress (counted) and takes the new one into the same receive.
     */
    @Test
    void aSenderResetInAMessagesMiddleGoesOnBehindItAndTheReceiverDropsThatMessage() {
        try (ShmPair p = ShmPair.uc(ThreadingMode.INVOKER, SIZE)) { // INVOKER: b's engine runs only when driven
            message(p, 1);
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(2).sge(0, p.b.mr, 0, SIZE)));
            p.a.buf.fill((byte) 0x5A);
            longSendIntoAFullRing(p, 2);
            long dropped = counter(p.b, Counter.UC_DROPPED_MSGS);
            reconnect(p.a, p.b);
            p.a.buf.set(ValueLayout.JAVA_LONG, 0, 4242);
            assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.SEND)
                    .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 8)));
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(3, wc.wrId(), "the SEND posted after the reset"); // the one before it went with the reset
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(2, r.wrId());
            assertEquals(8, r.byteLen(), "the receive took the message cut short");
            assertEquals(4242, p.b.buf.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(dropped + 1, counter(p.b, Counter.UC_DROPPED_MSGS));
            assertEquals(QpState.RTS, p.b.qp.state());
            message(p, 5);
        }
    }

    /**
     * Ring positions past 2^32, where a slot's sequence (the position's low 32 bits, plus one, never 0) repeats: the
     * position before a multiple of 2^32 has sequence 1, as the multiple itself has. The receiver's position is set
     * 12 short of 2^32 before any message (the UC sender finds it from R_READ), 12 messages make the ring's newest slot
     * that position, and the sender, reset and connected again alone, finds its place from it (read as the position
     * after it, the sender would write that one again, behind its receiver, and its next message would be lost).
     * Also RC, whose sender finds the same position from R_READ: messages across 2^32.
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void ringPositionsAcrossTwoToTheThirtyTwo(boolean uc) {
        long start = (1L << 32) - 12;
        try (ShmPair p = uc ? ShmPair.uc(ThreadingMode.INVOKER, SIZE) : new ShmPair(ThreadingMode.INVOKER, SIZE)) {
            ShmQp b = (ShmQp) p.b.qp;
            b.ringRead = start;
            b.ringReadPublished = start;
            ShmTransport.LONG.setVolatile(p.b.transport().ctrl, b.resp + Ctrl.R_READ, start);
            for (int i = 1; i <= 12; i++) {
                message(p, i);
            }
            assertEquals(1L << 32, b.ringRead, "the receiver's position");
            if (uc) {
                reconnect(p.a, p.b);
            }
            for (int i = 100; i < 120; i++) {
                message(p, i);
            }
            assertEquals((1L << 32) + 20, b.ringRead, "the receiver's position");
        }
    }

    /**
     * A modify of the receiving QP that clears nothing (RTS to RTS, new access flags) while its sender's ring is full
     * raises the QP's generation: the sender looks for its position again, finds the same one, and still waits for
     * room (found in review: it wrote over the receiver's next slot, unread, and both ends stopped).
     */
    @Test
    void aModifyOfTheReceiverWhileItsRingIsFullLosesNothing() {
        try (ShmPair p = ShmPair.uc(ThreadingMode.INVOKER, SIZE)) {
            // the message's first chunk at the connection's first position, which the receiver reads last
            assertEquals(0, p.b.qp.postRecv(new RecvWorkRequest().wrId(2).sge(0, p.b.mr, 0, SIZE)));
            for (int i = 0; i < 200 << 10; i += 8) {
                p.a.buf.set(ValueLayout.JAVA_LONG, i, i * 31L + 7);
            }
            longSendIntoAFullRing(p, 2);
            p.b.qp.modify(new QpAttr().state(QpState.RTS).accessFlags(io.jrdma.verbs.Access.REMOTE_WRITE));
            for (int i = 0; i < 1000; i++) {
                p.a.ctx.progress();
            }
            long dropped = counter(p.b, Counter.UC_DROPPED_MSGS);
            WorkCompletion r = p.await(p.b.cq);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(200 << 10, r.byteLen());
            for (int i = 0; i < 200 << 10; i += 8) {
                assertEquals(i * 31L + 7, p.b.buf.get(ValueLayout.JAVA_LONG, i), "byte " + i);
            }
            WorkCompletion s = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
            assertEquals(dropped, counter(p.b, Counter.UC_DROPPED_MSGS));
            message(p, 3);
        }
    }

    /**
     * A receiver reset and connected again in the middle of a message whose first chunks its ring held: its sender,
     * finding the ring started anew, drops the rest of that message (completes it, counted) and goes on.
     */
    @Test
    void aReceiverResetAndConnectedAgainInAMessagesMiddleHasItsSenderDropThatMessage() {
        try (ShmPair p = ShmPair.uc(ThreadingMode.INVOKER, SIZE)) {
            message(p, 1);
            longSendIntoAFullRing(p, 2);
            long dropped = counter(p.a, Counter.UC_DROPPED_MSGS);
            reconnect(p.b, p.a);
            WorkCompletion wc = p.await(p.a.cq);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(2, wc.wrId());
            assertEquals(dropped + 1, counter(p.a, Counter.UC_DROPPED_MSGS), "the message cut short is counted");
            message(p, 3);
            message(p, 4);
        }
    }
}

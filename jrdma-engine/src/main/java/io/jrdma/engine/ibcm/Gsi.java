package io.jrdma.engine.ibcm;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.wire.Bth;
import io.jrdma.wire.Deth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.mad.Mad;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * QP 1 of a soft-RoCE context, the general services interface: MADs in and out as UD SEND_ONLY
 * datagrams with a DETH (Q_Key 0x80010000, source QP 1).
 *
 * <p>In: the packet receiver (engine thread) hands every datagram for QP 1 to {@link #onPacket}, which
 * checks the opcode, the Q_Key and the length, copies the MAD into a slot of a fixed ring (no allocation)
 * and wakes the {@link CmThread}; a full ring drops the MAD and counts it, so a flood cannot grow memory.
 * Out: the CM thread queues whole MADs with their path ({@link #queue}); the engine sends them in its
 * next duty cycle ({@link #drain}), one UD SEND_ONLY each, so only the engine thread touches the link.
 */
public final class Gsi {
    /** MADs the ring holds before it drops. */
    static final int RING = 64;

    /** What sends a built MAD: the transport's packet path (engine thread). */
    public interface Sender {
        /**
         * Sends a UD SEND_ONLY to QP 1 at {@code remote} from {@code local}, carrying {@code mad}.
         *
         * @return false if the link was full (the MAD is dropped: the CM's retries cover it)
         */
        boolean send(byte[] mad, Endpoint local, Endpoint remote, int psn);
    }

    private final byte[][] slots = new byte[RING][Mad.LENGTH];
    private final Endpoint[] srcs = new Endpoint[RING];
    private final Endpoint[] dsts = new Endpoint[RING];
    private volatile long head; // next slot the engine fills
    private volatile long tail; // next slot the CM thread reads
    private final ConcurrentLinkedQueue<Out> out = new ConcurrentLinkedQueue<>();
    private int psn;
    volatile Thread reader;

    final AtomicLong madsReceived = new AtomicLong();
    final AtomicLong madsSent = new AtomicLong();
    /** dropped before decoding: not UD SEND_ONLY, wrong Q_Key or length, or the ring full */
    final AtomicLong madsDropped = new AtomicLong();
    /** dropped after decoding: malformed, or unexpected in the state they came in */
    final AtomicLong madsBad = new AtomicLong();

    record Out(byte[] mad, Endpoint local, Endpoint remote) {
    }

    /**
     * Engine thread: a datagram for QP 1 (BTH at 0 of {@code pkt}, its payload after {@code hdr} bytes).
     * Allocates nothing.
     */
    public void onPacket(MemorySegment pkt, int opcode, int hdr, int payload, Endpoint src, Endpoint dst) {
        if (opcode != IbOpcode.UD_SEND_ONLY || Deth.qkey(pkt, Bth.LENGTH) != Deth.GSI_QKEY || payload != Mad.LENGTH
                || head - tail >= RING) {
            madsDropped.incrementAndGet();
            return;
        }
        int i = (int) (head % RING);
        MemorySegment.copy(pkt, ValueLayout.JAVA_BYTE, hdr, slots[i], 0, Mad.LENGTH);
        srcs[i] = src;
        dsts[i] = dst;
        head = head + 1; // single writer: publishes the slot
        madsReceived.incrementAndGet();
        Thread t = reader;
        if (t != null) {
            java.util.concurrent.locks.LockSupport.unpark(t);
        }
    }

    /** A received MAD handed to the CM thread. */
    interface Handler {
        void onMad(byte[] mad, Endpoint src, Endpoint dst);
    }

    /** CM thread: hands each MAD received since the last call to {@code h}. @return how many */
    int take(Handler h) {
        int n = 0;
        byte[] copy = new byte[Mad.LENGTH];
        while (tail != head) {
            int i = (int) (tail % RING);
            System.arraycopy(slots[i], 0, copy, 0, Mad.LENGTH);
            Endpoint s = srcs[i];
            Endpoint d = dsts[i];
            tail = tail + 1; // frees the slot
            h.onMad(copy, s, d);
            n++;
        }
        return n;
    }

    /** Any thread: queues a MAD for the engine to send. */
    void queue(byte[] mad, Endpoint local, Endpoint remote) {
        out.add(new Out(mad, local, remote));
    }

    /** @return true when MADs wait to be sent */
    public boolean pending() {
        return !out.isEmpty();
    }

    /** Engine thread: sends the queued MADs. @return how many */
    public int drain(Sender s) {
        int n = 0;
        Out o;
        while ((o = out.poll()) != null) {
            if (s.send(o.mad(), o.local(), o.remote(), psn)) {
                madsSent.incrementAndGet();
            }
            psn = (psn + 1) & Bth.PSN_MASK;
            n++;
        }
        return n;
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A completion queue: a single-producer (the engine thread) single-consumer (the polling
 * thread) ring of completion entries, four longs each in one array. The producer fills a
 * slot and publishes it with a release store of {@code producer}; the consumer reads
 * {@code producer} with an acquire load, copies the slot out and frees it with a release store
 * of {@code consumer}, which the producer reads with an acquire load for its full check.
 */
public final class Cq implements CompletionQueue {
    private static final VarHandle PRODUCER;
    private static final VarHandle CONSUMER;
    private static final VarHandle ARMED;
    private static final WcOpcode[] OPCODES = WcOpcode.values();

    static final int NOT_ARMED = 0;
    static final int ARMED_ANY = 1;
    static final int ARMED_SOLICITED = 2;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PRODUCER = l.findVarHandle(Cq.class, "producer", long.class);
            CONSUMER = l.findVarHandle(Cq.class, "consumer", long.class);
            ARMED = l.findVarHandle(Cq.class, "armed", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public final Context context;
    private final Channel channel;
    private final int capacity;
    private final int mask;
    /**
     * The entries, {@value #WORDS} longs each (half a cache line): the work request id; byte length and immediate
     * data; QPN and source QP; status, opcode and flags. One array, so a push stores and a poll loads one place
     * (parallel arrays, one per field, touched eight lines per completion and checked eight array bounds).
     */
    private final long[] entries;
    private static final int WORDS = 4;
    @SuppressWarnings("unused")
    private long pad0, pad1, pad2, pad3, pad4, pad5, pad6;
    private long producer;
    @SuppressWarnings("unused")
    private long pad10, pad11, pad12, pad13, pad14, pad15, pad16;
    private long consumer;
    private int armed;
    public int users;
    /** The CQ overran: CQ_ERR was raised and its QPs go to ERROR (engine thread). */
    boolean overrun;
    private boolean closed;

    public Cq(Context context, int cqe, Channel channel) {
        this.context = context;
        this.channel = channel;
        this.capacity = cqe;
        int slots = Integer.highestOneBit(Math.max(2, cqe) * 2 - 1);
        if (slots < cqe) {
            slots <<= 1;
        }
        mask = slots - 1;
        entries = new long[slots * WORDS];
    }

    @Override
    public int capacity() {
        return capacity;
    }

    /**
     * Engine thread only: appends a completion and fires the channel if armed.
     *
     * @return false on overflow (the entry is dropped and counted)
     */
    public boolean push(long id, WcStatus st, WcOpcode op, int len, int immData, int wcFlags, int qpNum, int src) {
        long p = producer;
        if (p - (long) CONSUMER.getAcquire(this) >= capacity) { // release partner: poll()
            context.counters.increment(Counter.CQ_OVERFLOW);
            if (!overrun) { // ibv_create_cq(3): an overrun is a CQ error; its QPs go to ERROR at the end of the cycle
                overrun = true;
                context.events.raise(io.jrdma.verbs.AsyncEvent.Type.CQ_ERR, this);
                context.engine.cqOverrun();
            }
            return false;
        }
        int i = (int) (p & mask) * WORDS;
        long[] e = entries;
        e[i] = id;
        e[i + 1] = (len & 0xFFFFFFFFL) | (long) immData << 32;
        e[i + 2] = (qpNum & 0xFFFFFFFFL) | (long) src << 32;
        e[i + 3] = st.ordinal() | op.ordinal() << 8 | (long) wcFlags << 32;
        PRODUCER.setRelease(this, p + 1); // acquire partner: poll()
        if (channel != null) {
            fire(wcFlags, st);
        }
        return true;
    }

    /** After a completion was added (or given straight to the poller): fires the channel if the CQ is armed for it. */
    private void fire(int wcFlags, WcStatus st) {
        boolean solicited = (wcFlags & WorkCompletion.SOLICITED) != 0 || st != WcStatus.SUCCESS;
        // a Dekker pair with requestNotify then poll: the entry's store before the armed word's load, as the
        // arming's store comes before the poller's load of producer (both fenced), so one of the two sees the other:
        // the poll finds the entry, or this push fires the channel (with release/acquire alone both could miss)
        VarHandle.fullFence();
        int a = (int) ARMED.getAcquire(this);
        if (a != NOT_ARMED && (a == ARMED_ANY || solicited) && ARMED.compareAndSet(this, a, NOT_ARMED)) {
            channel.signal(this);
        }
    }

    /**
     * The engine's thread, after {@link Engine#pollInto} gave a completion straight to the poller: the CQ was not
     * armed when that began ({@link #takesDirect}), but another thread may have armed it since; its event fires as a
     * push's would.
     */
    void directTaken(WorkCompletion wc) {
        if (channel != null) {
            fire(wc.flags(), wc.status());
        }
    }

    @Override
    public int poll(WorkCompletion[] wcs) {
        if (context.invoker) {
            context.progress();
        }
        long c = consumer;
        long available = (long) PRODUCER.getAcquire(this) - c; // release partner: push()
        int n = (int) Math.min(available, wcs.length);
        for (int k = 0; k < n; k++) {
            read((int) ((c + k) & mask), wcs[k]);
        }
        if (n > 0) {
            CONSUMER.setRelease(this, c + n); // acquire partner: push()'s full check
        }
        return n;
    }

    @Override
    public int poll(WorkCompletion wc) {
        if (context.invoker && context.progressInto(this, wc)) {
            return 1;
        }
        long c = consumer;
        if ((long) PRODUCER.getAcquire(this) == c) {
            return 0;
        }
        read((int) (c & mask), wc);
        CONSUMER.setRelease(this, c + 1);
        return 1;
    }

    /**
     * The engine's thread, driving it: whether a completion may go straight to this CQ's poller
     * ({@link Engine#pollInto}): none is waiting here (it would come first), no notification is armed (the
     * completion's push fires it) and the CQ has not overrun.
     */
    boolean takesDirect() {
        return (long) PRODUCER.getAcquire(this) == consumer && !overrun
                && (channel == null || (int) ARMED.getAcquire(this) == NOT_ARMED);
    }

    private void read(int i, WorkCompletion wc) {
        long[] e = entries;
        int at = i * WORDS;
        long lenImm = e[at + 1];
        long qps = e[at + 2];
        long kind = e[at + 3];
        wc.set(e[at], WcStatus.of((int) kind & 0xFF), OPCODES[(int) kind >>> 8 & 0xFF], 0, (int) lenImm,
                (int) (lenImm >>> 32), (int) (kind >>> 32), (int) qps, (int) (qps >>> 32));
    }

    /** @return completions waiting (approximate when racing the engine) */
    public int pending() {
        return (int) ((long) PRODUCER.getAcquire(this) - (long) CONSUMER.getAcquire(this));
    }

    @Override
    public void requestNotify(boolean solicitedOnly) {
        if (channel == null) {
            throw new RdmaException(Errno.EINVAL, "this CQ has no completion channel; create it with one to use notifications");
        }
        // volatile: the arming before the caller's next poll's load of producer (the Dekker pair with push)
        ARMED.setVolatile(this, solicitedOnly ? ARMED_SOLICITED : ARMED_ANY);
    }

    @Override
    public CompletionChannel channel() {
        return channel;
    }

    @Override
    public void close() {
        synchronized (context) {
            if (closed) {
                return;
            }
            if (users > 0) {
                throw new RdmaException(Errno.EBUSY, "the CQ is still used by " + users + " queue pairs; close them first");
            }
            closed = true;
            if (channel != null) {
                channel.users--;
            }
            context.release(this);
        }
    }
}

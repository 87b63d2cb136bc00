package io.jrdma.engine.core;

import io.jrdma.verbs.ConnectionManager.Event;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The event stream of one established connection ({@link io.jrdma.verbs.ConnectionManager.Connection#pollEvent}),
 * shared by the connection managers: DISCONNECTED at most once, then TIMEWAIT_EXIT at most once. A manager
 * that learns of the disconnect by itself (the IB CM's DREQ) calls {@link #disconnected} and later
 * {@link #timewaitExit}; one that must look (a socket, a QP's state) passes a probe to {@link #poll}.
 */
public final class ConnEvents {
    /** How often {@link #poll} runs its probe while it waits. */
    private static final long PROBE_NANOS = 1_000_000;

    private final LinkedBlockingQueue<Event> queue = new LinkedBlockingQueue<>();
    private boolean down;
    private boolean exited;

    /** Something that looks for a disconnect while {@link #poll} waits (a socket read, the QP's state). */
    public interface Probe {
        /**
         * @param waitNanos how long it may block
         * @return true when the connection turned out to be down
         */
        boolean isDown(long waitNanos);
    }

    /** Queues DISCONNECTED, once. @return true the first time */
    public synchronized boolean disconnected() {
        if (down) {
            return false;
        }
        down = true;
        queue.add(Event.DISCONNECTED);
        return true;
    }

    /** Queues TIMEWAIT_EXIT (after DISCONNECTED), once. */
    public synchronized void timewaitExit() {
        disconnected();
        if (!exited) {
            exited = true;
            queue.add(Event.TIMEWAIT_EXIT);
        }
    }

    /** @return true once DISCONNECTED was queued */
    public synchronized boolean isDown() {
        return down;
    }

    /**
     * Takes the next event, waiting up to {@code timeout}.
     *
     * @param probe null, or what looks for a disconnect while waiting; when it finds one, DISCONNECTED and
     *              (no time-wait to keep: the manager has no identifiers to hold) TIMEWAIT_EXIT are queued
     */
    public Event poll(Duration timeout, Probe probe) {
        long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
        while (true) {
            Event e = queue.poll();
            if (e != null) {
                return e;
            }
            long left = deadline - System.nanoTime();
            if (probe != null && !isDown()) {
                if (probe.isDown(Math.max(0, Math.min(left, PROBE_NANOS)))) {
                    timewaitExit();
                    continue;
                }
            } else if (left > 0) {
                try {
                    e = queue.poll(left, TimeUnit.NANOSECONDS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return null;
                }
                if (e != null) {
                    return e;
                }
            }
            if (deadline - System.nanoTime() <= 0) {
                return queue.poll();
            }
        }
    }
}

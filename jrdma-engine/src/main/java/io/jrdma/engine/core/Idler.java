package io.jrdma.engine.core;

import io.jrdma.verbs.IdleStrategy;

import java.util.concurrent.locks.LockSupport;

/**
 * What a dedicated engine thread does after an idle duty cycle (Agrona's idle strategies,
 * reduced). BACKOFF goes by how long the engine has been idle, not by how many idle cycles it
 * ran: it spins for the first {@value #SPIN_NANOS} ns, yields until {@value #YIELD_NANOS} ns,
 * and only then parks, 1 µs doubling to 1 ms; from then on it parks the transport's limit
 * ({@link Transport#maxParkNanos}): 1 ms, or longer while nothing of the transport needs the clock (shared
 * memory with no request in flight: until its next liveness check, or 1 s with no peer). A stream's gaps (a receiver waiting for the
 * sender's next window, tens of µs) are thus bridged without a sleep — a park costs at least the
 * kernel's timer slack (about 50 µs on Linux), and a receiver that dozes through each gap
 * throttles the sender's window — while an engine with nothing to do for half a millisecond
 * costs next to no CPU.
 */
public final class Idler {
    private static final long SPIN_NANOS = 20_000;
    private static final long YIELD_NANOS = 500_000;
    private static final long MIN_PARK = 1_000;
    /** The longest park unless the transport allows longer ({@link Transport#maxParkNanos}). */
    public static final long MAX_PARK = 1_000_000;

    private final IdleStrategy kind;
    private final Engine engine;
    private long idleSince;
    private long park = MIN_PARK;

    public Idler(IdleStrategy kind, Engine engine) {
        this.kind = kind;
        this.engine = engine;
    }

    public void idle(int work) {
        idle(work, kind == IdleStrategy.BACKOFF ? System.nanoTime() : 0);
    }

    /** What an idle duty cycle does: spin, yield, or park for the returned nanoseconds (> 0). */
    public static final long SPIN = 0;
    public static final long YIELD = -1;

    /** As {@link #idle(int)} at time {@code now}; @return what it did: {@link #SPIN}, {@link #YIELD} or the park time */
    public long idle(int work, long now) {
        if (work > 0) {
            idleSince = 0;
            park = MIN_PARK;
            return SPIN;
        }
        long action = switch (kind) {
            case SPIN -> SPIN;
            case YIELD -> YIELD;
            case BACKOFF -> {
                if (idleSince == 0) {
                    idleSince = now;
                }
                long idle = now - idleSince;
                if (idle < SPIN_NANOS) {
                    yield SPIN;
                } else if (idle < YIELD_NANOS) {
                    yield YIELD;
                }
                // doubling up to 1 ms; from there the transport's limit (1 ms, or longer while nothing of it needs
                // the clock: then one park to the limit, not a doubling through the next 20 ms)
                long limit = engine.transport.maxParkNanos();
                long p = park >= MAX_PARK ? limit : Math.min(park, limit);
                park = Math.min(park * 2, MAX_PARK);
                yield p;
            }
            case PARK -> engine.transport.maxParkNanos();
        };
        if (action == SPIN) {
            Thread.onSpinWait();
        } else if (action == YIELD) {
            Thread.yield();
        } else {
            parkUnlessSignalled(action);
        }
        return action;
    }

    private void parkUnlessSignalled(long nanos) {
        engine.parked = true; // a doorbell after this store sees it and unparks us
        if (!engine.hasPendingSignals() && !engine.transport.park(nanos)) {
            LockSupport.parkNanos(nanos);
        }
        engine.parked = false;
    }
}

package io.jrdma.engine;

import io.jrdma.verbs.IdleStrategy;

import java.util.concurrent.locks.LockSupport;

/**
 * What a dedicated engine thread does after an idle duty cycle (Agrona's idle strategies,
 * reduced). BACKOFF goes by how long the engine has been idle, not by how many idle cycles it
 * ran: it spins for the first {@value #SPIN_NANOS} ns, yields until {@value #YIELD_NANOS} ns,
 * and only then parks, 1 µs doubling to 1 ms. A stream's gaps (a receiver waiting for the
 * sender's next window, tens of µs) are thus bridged without a sleep — a park costs at least the
 * kernel's timer slack (about 50 µs on Linux), and a receiver that dozes through each gap
 * throttles the sender's window — while an engine with nothing to do for half a millisecond
 * costs next to no CPU.
 */
final class Idler {
    private static final long SPIN_NANOS = 20_000;
    private static final long YIELD_NANOS = 500_000;
    private static final long MIN_PARK = 1_000;
    private static final long MAX_PARK = 1_000_000;

    private final IdleStrategy kind;
    private final Engine engine;
    private long idleSince;
    private long park = MIN_PARK;

    Idler(IdleStrategy kind, Engine engine) {
        this.kind = kind;
        this.engine = engine;
    }

    void idle(int work) {
        if (work > 0) {
            idleSince = 0;
            park = MIN_PARK;
            return;
        }
        switch (kind) {
            case SPIN -> Thread.onSpinWait();
            case YIELD -> Thread.yield();
            case BACKOFF -> {
                long now = System.nanoTime();
                if (idleSince == 0) {
                    idleSince = now;
                }
                long idle = now - idleSince;
                if (idle < SPIN_NANOS) {
                    Thread.onSpinWait();
                } else if (idle < YIELD_NANOS) {
                    Thread.yield();
                } else {
                    parkUnlessSignalled(park);
                    park = Math.min(park * 2, MAX_PARK);
                }
            }
            case PARK -> parkUnlessSignalled(MAX_PARK);
        }
    }

    private void parkUnlessSignalled(long nanos) {
        engine.parked = true; // a doorbell after this store sees it and unparks us
        if (!engine.hasPendingSignals()) {
            LockSupport.parkNanos(nanos);
        }
        engine.parked = false;
    }
}

package io.jrdma.engine;

import io.jrdma.verbs.IdleStrategy;

import java.util.concurrent.locks.LockSupport;

/** What a dedicated engine thread does after an idle duty cycle (Agrona's idle strategies, reduced). */
final class Idler {
    private static final int SPINS = 200;
    private static final int YIELDS = 50;
    private static final long MIN_PARK = 1_000;
    private static final long MAX_PARK = 1_000_000;

    private final IdleStrategy kind;
    private final Engine engine;
    private int idleCycles;
    private long park = MIN_PARK;

    Idler(IdleStrategy kind, Engine engine) {
        this.kind = kind;
        this.engine = engine;
    }

    void idle(int work) {
        if (work > 0) {
            idleCycles = 0;
            park = MIN_PARK;
            return;
        }
        switch (kind) {
            case SPIN -> Thread.onSpinWait();
            case YIELD -> Thread.yield();
            case BACKOFF -> {
                idleCycles++;
                if (idleCycles <= SPINS) {
                    Thread.onSpinWait();
                } else if (idleCycles <= SPINS + YIELDS) {
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

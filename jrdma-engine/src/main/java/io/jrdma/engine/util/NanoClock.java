package io.jrdma.engine.util;

/** The engine's time source; tests substitute a clock they advance by hand. */
@FunctionalInterface
public interface NanoClock {
    long nanoTime();

    NanoClock SYSTEM = System::nanoTime;
}

package io.jrdma.bench.jmh;

import io.jrdma.engine.util.IntMap;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The memory-key lookup structure: the engine's key table maps a 32-bit random lkey/rkey to its
 * region through an {@link IntMap} (the table itself is package-private; {@link LoopbackBench}
 * measures lookups through the public API, a WRITE naming one of 1,000 registered regions).
 * Keys are drawn as the engine draws them: 32 random bits, never 0.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC"})
public class MrLookupBench {
    @Param({"16", "1000", "100000"})
    public int regions;

    private IntMap<Object> map;
    private int[] keys;
    private int next;

    @Setup
    public void setup() {
        SplittableRandom r = new SplittableRandom(42);
        map = new IntMap<>(16);
        keys = new int[regions];
        for (int i = 0; i < regions; i++) {
            int k;
            do {
                k = r.nextInt();
            } while (k == 0 || map.containsKey(k));
            keys[i] = k;
            map.put(k, new Object());
        }
        // look keys up in a scrambled order, so the branch predictor cannot learn the probe sequence
        for (int i = regions - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            int t = keys[i];
            keys[i] = keys[j];
            keys[j] = t;
        }
    }

    @Benchmark
    public Object lookup() {
        int i = next;
        next = i + 1 == keys.length ? 0 : i + 1;
        return map.get(keys[i]);
    }

    @Benchmark
    public Object lookupMiss() {
        int i = next;
        next = i + 1 == keys.length ? 0 : i + 1;
        return map.get(keys[i] ^ 0x5A5A5A5A);
    }
}

package io.jrdma.engine.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.LinkedHashMap;
import java.util.Map;

/** Counter values: written by the engine thread only (opaque stores), read by anyone. */
public final class Counters {
    private static final VarHandle ELEM = MethodHandles.arrayElementVarHandle(long[].class);
    private static final Counter[] ALL = Counter.values();
    private final long[] values = new long[ALL.length];

    /** Engine thread only. */
    public void increment(Counter c) {
        int i = c.ordinal();
        ELEM.setOpaque(values, i, (long) ELEM.getOpaque(values, i) + 1);
    }

    /** Engine thread only. */
    public void add(Counter c, long n) {
        int i = c.ordinal();
        ELEM.setOpaque(values, i, (long) ELEM.getOpaque(values, i) + n);
    }

    public long get(Counter c) {
        return (long) ELEM.getOpaque(values, c.ordinal());
    }

    public Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (Counter c : ALL) {
            m.put(c.counterName(), get(c));
        }
        return m;
    }
}

package io.jrdma.engine.core;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A context's counters, per device ({@link Counter}) and per QP ({@link QpCounter}), kept in its
 * counters file ({@link StatsFile}) so that {@code jrdma stat} reads them from outside the process.
 * Written by the engine thread only, each update a load and an opaque store of a long in the
 * mapped memory (no lock, no allocation, no fence); read by anyone.
 */
public final class Counters {
    private static final VarHandle LONG = StatsFile.LONG_VH;
    private static final Counter[] ALL = Counter.values();
    private final StatsFile file;
    private final MemorySegment seg;
    private final long values;
    /** the mapping's address: {@link #bump} reaches it through {@link #MEM} */
    private final long base;
    /**
     * The process's memory as one segment, a constant: an update through it compiles to its load and store alone,
     * without the checks of an access through {@link #seg} (its bounds, which the offsets here keep to by their
     * construction, and its global scope)
     */
    private static final MemorySegment MEM = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /** Counters of a context of {@code device} (transport as {@code jrdma stat} prints it). */
    Counters(String device, String transport) {
        this.file = StatsFile.open(device, transport);
        // a plain native view of the mapping (global scope): the data path's other segment accesses (the shared-
        // memory provider's control segments and buffers) are native segments too, and a mapped segment of an
        // automatic arena here made the JDK's shared segment-access code see two segment and two scope classes,
        // which slowed every access of the shm data path (docs/shm-design.md, "Counters"). The updates go by
        // address through MEM, the reads through this view. The mapping stays while file (kept by this object) is
        // reachable.
        this.seg = MemorySegment.ofAddress(file.seg.address()).reinterpret(file.seg.byteSize());
        this.values = file.valuesOffset;
        this.base = seg.address();
    }

    /** Engine thread only. */
    public void increment(Counter c) {
        bump(values + c.ordinal() * 8L, 1);
    }

    /** Engine thread only. */
    public void add(Counter c, long n) {
        bump(values + c.ordinal() * 8L, n);
    }

    public long get(Counter c) {
        return (long) LONG.getOpaque(seg, values + c.ordinal() * 8L);
    }

    /** Engine thread only: one more of {@code c} for the QP whose slot is {@code slot} ({@link #takeQpSlot}). */
    public void increment(long slot, QpCounter c) {
        bump(slot + 8 + c.ordinal() * 8L, 1);
    }

    /** Engine thread only. */
    public void add(long slot, QpCounter c, long n) {
        bump(slot + 8 + c.ordinal() * 8L, n);
    }

    /**
     * The one update: a load and an opaque store. These methods are kept under the JIT's 35-byte limit for
     * inlining a call whatever its measured frequency (-XX:MaxInlineSize): at 44 bytes the shm data path's
     * calls were compiled as calls ("callee is too large").
     */
    private void bump(long at, long n) {
        long a = base + at;
        LONG.setOpaque(MEM, a, (long) LONG.getOpaque(MEM, a) + n);
    }

    /** @return a QP counter's value */
    public long get(long slot, QpCounter c) {
        return (long) LONG.getOpaque(seg, slot + 8 + c.ordinal() * 8L);
    }

    /** @return the hidden slot where QPs without a slot of their own count */
    long overflowSlot() {
        return file.qpSlotsOffset + (long) StatsFile.QP_SLOTS * file.qpSlotLength;
    }

    /** Control path: a zeroed slot for a new QP. */
    long takeQpSlot(int qpn) {
        return file.takeQpSlot(qpn);
    }

    /** Control path: the QP is gone. */
    void freeQpSlot(long slot) {
        file.freeQpSlot(slot);
    }

    /** @return the counters file, or null when there is none */
    public Path path() {
        return file.path;
    }

    /** @return why this context has no counters file, or null */
    public String noFileReason() {
        return file.noFileReason;
    }

    /** The context closed: the file goes (the values stay readable here). */
    void close() {
        file.delete();
    }

    public Map<String, Long> snapshot() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (Counter c : ALL) {
            m.put(c.counterName(), get(c));
        }
        return m;
    }
}

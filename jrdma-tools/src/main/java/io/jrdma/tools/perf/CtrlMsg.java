package io.jrdma.tools.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/**
 * A control message between client and server, carried by an RDMA WRITE WITH IMMEDIATE into
 * the peer's inbox (the immediate data names the type, so a message consumes any receive
 * WQE, whatever its size). One phase per message size:
 * client START → server READY → (the measured run) → client DONE → server ACK.
 */
final class CtrlMsg {
    static final int START = 1;
    static final int READY = 2;
    static final int DONE = 3;
    static final int ACK = 4;

    static final int HEADER = 64;
    static final int MAX_TEXT = 1024;
    static final int MAX_BYTES = HEADER + MAX_TEXT;

    /** ACK/DONE status: all good. */
    static final int OK = 0;
    /** ACK/DONE status: the data or the count did not match; {@link #text} says how. */
    static final int MISMATCH = 1;

    int type;
    int phase;
    int size;
    boolean last;
    /** the unmeasured warm-up run before the first size: no row is printed */
    boolean warmup;
    /**
     * ACK of a warm-up run: the server's JIT compiler threads still work ({@link JitQuiet}), so the client warms up
     * on (a server that predates it leaves the flag 0: quiet)
     */
    boolean compiling;
    /** START: iterations to run (0 = duration mode); DONE/ACK: iterations done or received */
    long count;
    /** START: duration in ns (0 = iteration mode); DONE/ACK: elapsed ns */
    long nanos;
    double peakMBps;
    double avgMBps;
    double msgRateMpps;
    int status;
    String text = "";

    CtrlMsg set(int type, int phase, int size, boolean last, long count, long nanos) {
        this.type = type;
        this.phase = phase;
        this.size = size;
        this.last = last;
        this.warmup = false;
        this.compiling = false;
        this.count = count;
        this.nanos = nanos;
        peakMBps = 0;
        avgMBps = 0;
        msgRateMpps = 0;
        status = OK;
        text = "";
        return this;
    }

    CtrlMsg warmup(boolean w) {
        warmup = w;
        return this;
    }

    CtrlMsg compiling(boolean c) {
        compiling = c;
        return this;
    }

    CtrlMsg rates(double peak, double avg, double rate) {
        peakMBps = peak;
        avgMBps = avg;
        msgRateMpps = rate;
        return this;
    }

    CtrlMsg status(int st, String txt) {
        status = st;
        text = txt == null ? "" : txt;
        return this;
    }

    /** @return the bytes written at {@code off} */
    int writeTo(MemorySegment seg, long off) {
        byte[] t = text.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(t.length, MAX_TEXT);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, off, type);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, off + 4, phase);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, off + 8, size);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, off + 12, (last ? 1 : 0) | (warmup ? 2 : 0) | (compiling ? 4 : 0));
        seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off + 16, count);
        seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off + 24, nanos);
        seg.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, off + 32, peakMBps);
        seg.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, off + 40, avgMBps);
        seg.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, off + 48, msgRateMpps);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, off + 56, status);
        seg.set(ValueLayout.JAVA_INT_UNALIGNED, off + 60, n);
        MemorySegment.copy(t, 0, seg, ValueLayout.JAVA_BYTE, off + HEADER, n);
        return HEADER + n;
    }

    void readFrom(MemorySegment seg, long off) {
        type = seg.get(ValueLayout.JAVA_INT_UNALIGNED, off);
        phase = seg.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
        size = seg.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
        int flags = seg.get(ValueLayout.JAVA_INT_UNALIGNED, off + 12);
        last = (flags & 1) != 0;
        warmup = (flags & 2) != 0;
        compiling = (flags & 4) != 0;
        count = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16);
        nanos = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 24);
        peakMBps = seg.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, off + 32);
        avgMBps = seg.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, off + 40);
        msgRateMpps = seg.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, off + 48);
        status = seg.get(ValueLayout.JAVA_INT_UNALIGNED, off + 56);
        int n = Math.clamp(seg.get(ValueLayout.JAVA_INT_UNALIGNED, off + 60), 0, MAX_TEXT);
        byte[] t = new byte[n];
        MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, off + HEADER, t, 0, n);
        text = new String(t, StandardCharsets.UTF_8);
    }

    static String typeName(int type) {
        return switch (type) {
            case START -> "START";
            case READY -> "READY";
            case DONE -> "DONE";
            case ACK -> "ACK";
            default -> "type " + type;
        };
    }
}

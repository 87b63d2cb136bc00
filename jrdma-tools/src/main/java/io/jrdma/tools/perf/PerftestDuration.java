package io.jrdma.tools.perf;

/**
 * perftest's duration mode ({@code -D SEC --margin M}) as a clock the loops read themselves: START for M seconds,
 * SAMPLE for SEC - 2M seconds, STOP_SAMPLE for M seconds, then END. perftest moves through these states from a
 * SIGALRM handler ({@code catch_alarm}), each alarm set when the previous state began; here the loop calls
 * {@link #advance(long)} with the clock it read (when a poll found nothing, or once per turn), which moves on when
 * the state's deadline passed and sets the next deadline from that moment, as the alarm would. A margin of 0 skips
 * its state at once, as perftest's {@code catch_alarm(0)}. No allocation, no thread, no signal.
 *
 * <p>{@link #sampleStart()} and {@link #sampleEnd()} are perftest's {@code tposted[0]} and {@code tcompleted[0]}:
 * the clock read when SAMPLE began and when it ended. The loop counts what completes while {@link #sampling()}.
 */
final class PerftestDuration {
    static final int START = 0;
    static final int SAMPLE = 1;
    static final int STOP_SAMPLE = 2;
    static final int END = 3;

    private final long marginNanos;
    private final long sampleNanos;
    private int state = END;
    private long deadline;
    private long sampleStart;
    private long sampleEnd;

    /** @param durationSec {@code -D}; @param marginSec {@code --margin}, with {@code durationSec > 2 marginSec} */
    PerftestDuration(int durationSec, int marginSec) {
        if (durationSec <= 2L * marginSec || marginSec < 0) {
            throw new IllegalArgumentException("duration " + durationSec + " s must exceed twice the margin "
                    + marginSec + " s");
        }
        this.marginNanos = marginSec * 1_000_000_000L;
        this.sampleNanos = (durationSec - 2L * marginSec) * 1_000_000_000L;
    }

    /** Starts a run at {@code now} (START, or SAMPLE at once with a margin of 0). */
    void start(long now) {
        state = START;
        deadline = now + marginNanos;
        sampleStart = 0;
        sampleEnd = 0;
        advance(now);
    }

    /** Moves on through every state whose deadline {@code now} passed; returns the state it is in. */
    int advance(long now) {
        while (state != END && now - deadline >= 0) {
            switch (state) {
                case START -> {
                    state = SAMPLE;
                    sampleStart = now;
                    deadline = now + sampleNanos;
                }
                case SAMPLE -> {
                    state = STOP_SAMPLE;
                    sampleEnd = now;
                    deadline = now + marginNanos;
                }
                default -> state = END;
            }
        }
        return state;
    }

    int state() {
        return state;
    }

    boolean sampling() {
        return state == SAMPLE;
    }

    boolean ended() {
        return state == END;
    }

    /** @return the clock when SAMPLE began (perftest's {@code tposted[0]}) */
    long sampleStart() {
        return sampleStart;
    }

    /** @return the clock when SAMPLE ended (perftest's {@code tcompleted[0]}) */
    long sampleEnd() {
        return sampleEnd;
    }
}

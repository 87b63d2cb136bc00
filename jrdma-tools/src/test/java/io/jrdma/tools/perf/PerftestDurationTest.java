package io.jrdma.tools.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** perftest's duration states (catch_alarm) on a clock given by hand: each deadline set when its state began. */
class PerftestDurationTest {
    static final long S = 1_000_000_000L;

    @Test
    void startSampleStopSampleEnd() {
        PerftestDuration d = new PerftestDuration(5, 1);
        long t0 = 1_000 * S; // any origin, the clock's values are differences only
        d.start(t0);
        assertEquals(PerftestDuration.START, d.state());
        assertEquals(PerftestDuration.START, d.advance(t0 + S - 1));
        assertEquals(PerftestDuration.SAMPLE, d.advance(t0 + S + 7), "after the margin");
        assertTrue(d.sampling());
        assertEquals(t0 + S + 7, d.sampleStart(), "tposted[0]: the clock read when SAMPLE began");
        // the sample lasts duration - 2 margin from when it began (the alarm is set then), not from the start
        assertEquals(PerftestDuration.SAMPLE, d.advance(t0 + S + 7 + 3 * S - 1));
        assertEquals(PerftestDuration.STOP_SAMPLE, d.advance(t0 + 4 * S + 7 + 5));
        assertFalse(d.sampling());
        assertEquals(t0 + 4 * S + 12, d.sampleEnd(), "tcompleted[0]: the clock read when SAMPLE ended");
        assertEquals(PerftestDuration.STOP_SAMPLE, d.advance(t0 + 5 * S + 11));
        assertEquals(PerftestDuration.END, d.advance(t0 + 5 * S + 12));
        assertTrue(d.ended());
        assertEquals(PerftestDuration.END, d.advance(t0 + 100 * S), "END stays");
        assertEquals(t0 + S + 7, d.sampleStart());
        assertEquals(t0 + 4 * S + 12, d.sampleEnd());
    }

    @Test
    void aZeroMarginSkipsItsStatesAtOnce() {
        PerftestDuration d = new PerftestDuration(2, 0);
        d.start(-5); // the monotonic clock may be negative
        assertEquals(PerftestDuration.SAMPLE, d.state(), "catch_alarm(0): sampling from the start");
        assertEquals(-5, d.sampleStart());
        assertEquals(PerftestDuration.END, d.advance(-5 + 2 * S), "the sample's end is the run's end");
        assertEquals(-5 + 2 * S, d.sampleEnd());
    }

    @Test
    void aLateReadMovesOneStateAndRestartsTheNextDeadlineFromIt() {
        PerftestDuration d = new PerftestDuration(3, 1);
        d.start(0);
        assertEquals(PerftestDuration.SAMPLE, d.advance(10 * S), "late by 9 s: SAMPLE, as a late alarm would");
        assertEquals(10 * S, d.sampleStart());
        assertEquals(PerftestDuration.STOP_SAMPLE, d.advance(11 * S));
        assertEquals(11 * S - 10 * S, d.sampleEnd() - d.sampleStart(), "the sample spans duration - 2 margin");
    }

    @Test
    void restartsForAnotherRun() {
        PerftestDuration d = new PerftestDuration(3, 1);
        d.start(0);
        d.advance(S);
        d.advance(2 * S);
        d.advance(3 * S);
        assertTrue(d.ended());
        d.start(4 * S);
        assertEquals(PerftestDuration.START, d.state());
        assertEquals(0, d.sampleStart());
    }

    @Test
    void theDurationMustExceedTwiceTheMargin() {
        assertThrows(IllegalArgumentException.class, () -> new PerftestDuration(4, 2));
        assertThrows(IllegalArgumentException.class, () -> new PerftestDuration(4, -1));
    }
}

package io.jrdma.tools.perf;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ReportTest {
    @Test
    void rowsLineUpUnderTheirColumns() {
        String row = Report.bwRow(65536, 5000, 1234.5, 1100.25, 0.0176);
        assertEquals(" 65536      5000           1234.50            1100.25              0.017600", row);
        assertEquals(Report.BW_COLUMNS.indexOf("BW average"), row.indexOf("1100.25"));
        String lat = Report.latRow(2, 1000, new LatencyStats(1000, 1, 2, 3, 4, 5, 6, 7));
        assertEquals(Report.LAT_COLUMNS.indexOf("t_avg"), lat.indexOf("4.00"));
        assertEquals(Report.LAT_COLUMNS.indexOf("99.9%"), lat.indexOf("7.00"));
    }

    @Test
    void latencyStatistics() {
        long[] ns = new long[100];
        for (int i = 0; i < ns.length; i++) {
            ns[i] = (100 - i) * 1000L; // 100 µs down to 1 µs
        }
        LatencyStats s = LatencyStats.of(ns, 100, 1);
        assertEquals(1.0, s.min());
        assertEquals(100.0, s.max());
        assertEquals(50.5, s.typical());
        assertEquals(50.5, s.avg(), 1e-9);
        assertEquals(99.0, s.p99());
        assertEquals(100.0, s.p999());
        assertEquals(25.0, LatencyStats.of(new long[] {50_000}, 1, 2).avg(), 1e-9);
    }

    @Test
    void bandwidthInMebibytesPerSecond() {
        BwMeter m = new BwMeter(16);
        m.add(0, 0);
        for (int i = 1; i <= 10; i++) {
            m.add(i * 100_000_000L, i * 1600L); // 1600 x 65536 B per 0.1 s = 1000 MB/s
        }
        assertEquals(1000.0, m.averageMBps(65536), 1e-6);
        assertEquals(1000.0, m.peakMBps(65536), 1e-6);
        assertEquals(0.016, m.msgRateMpps(), 1e-9);
    }

    @Test
    void patternPrefixesAgreeAndMismatchesAreNamed() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment big = a.allocate(1000);
            MemorySegment small = a.allocate(13);
            Pattern.fill(big, 42);
            Pattern.fill(small, 42);
            assertNull(Pattern.compare(big.asSlice(0, 13), small, "x"));
            small.set(ValueLayout.JAVA_BYTE, 5, (byte) ~small.get(ValueLayout.JAVA_BYTE, 5));
            String m = Pattern.compare(small, big.asSlice(0, 13), "what");
            assertTrue(m.startsWith("what: byte 5 is 0x"), m);
        }
    }
}

package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;


import org.junit.jupiter.api.Test;

/** The block medians: in the order taken, each block's own median, the samples past the last block left out. */
class BlocksTest {
    private static String printed(long[] rtt, int n, int blocks) throws Exception {
        return BenchProcesses.printedBy(() -> Blocks.print("x", rtt, n, blocks, 2.0));
    }

    @Test
    void eachBlockPrintsItsOwnMedianInTheOrderTaken() throws Exception {
        // a level change part-way: 3 blocks of 3 (unsorted inside), a tenth sample past the last block
        long[] rtt = {300, 100, 200, 4000, 6000, 5000, 900, 700, 800, 1_000_000};
        assertEquals("BLOCKS x us=0.100,2.500,0.400", printed(rtt, 10, 3));
        assertEquals(1_000_000, rtt[9], "the samples are not reordered");
        assertEquals(300, rtt[0]);
    }

    @Test
    void noBlocksPrintNothingAndTooFewSamplesAreRefused() throws Exception {
        assertEquals("", printed(new long[] {1, 2}, 2, 0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> printed(new long[] {1, 2}, 2, 3));
        assertTrue(e.getMessage().contains("blocks=3"), e.getMessage());
    }
}

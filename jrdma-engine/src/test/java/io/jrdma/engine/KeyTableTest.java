package io.jrdma.engine;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Memory keys: random, never 0, unique among live keys, not reused within the quarantine. */
class KeyTableTest {
    @Test
    void freedKeysAreNotReusedSoonAndKeysLookRandom() {
        KeyTable t = new KeyTable();
        ArrayDeque<Integer> recent = new ArrayDeque<>();
        Set<Integer> live = new HashSet<>();
        int highBitsSet = 0;
        for (int i = 0; i < 20_000; i++) {
            int k = t.newKey();
            assertNotEquals(0, k);
            assertFalse(recent.contains(k), "key reused within the quarantine");
            assertTrue(live.add(k));
            highBitsSet += Integer.bitCount(k >>> 8);
            Mr fake = new Mr(null, java.lang.foreign.Arena.global().allocate(8), k, 0);
            t.add(fake);
            if (live.size() > 64) {
                int victim = live.iterator().next();
                t.remove(t.lookup(victim));
                live.remove(victim);
                recent.addLast(victim);
                if (recent.size() > KeyTable.QUARANTINE) {
                    recent.removeFirst();
                }
            }
        }
        double mean = highBitsSet / 20_000.0;
        assertTrue(mean > 11 && mean < 13, "the upper 24 bits are uniformly random: mean popcount " + mean);
    }
}

package io.jrdma.engine.core;

import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Memory keys: index << 8 | key byte (as rxe), never 0, unique among live keys, not reused within the
 * quarantine; a stale key byte of a live index is not found.
 */
class KeyTableTest {
    @Test
    void freedKeysAreNotReusedSoonAndAReusedIndexTakesTheNextKeyByte() {
        KeyTable t = new KeyTable();
        ArrayDeque<Integer> recent = new ArrayDeque<>();
        Set<Integer> live = new HashSet<>();
        java.util.Map<Integer, Integer> lastByteOfIndex = new java.util.HashMap<>();
        int reusedIndices = 0;
        for (int i = 0; i < 20_000; i++) {
            int k = t.newKey();
            assertNotEquals(0, k);
            assertNotEquals(0, k >>> 8, "index 0 is never used");
            assertFalse(recent.contains(k), "key reused within the quarantine");
            assertTrue(live.add(k));
            Integer before = lastByteOfIndex.get(k >>> 8);
            if (before != null) {
                reusedIndices++;
                org.junit.jupiter.api.Assertions.assertEquals((before + 1) & 0xFF, k & 0xFF,
                        "a reused index takes the key byte after its last one");
                org.junit.jupiter.api.Assertions.assertNull(t.lookup(k >>> 8 << 8 | before),
                        "the stale key of a reused index is not found");
            }
            Mr fake = region(k);
            t.add(fake);
            if (live.size() > 64) {
                int victim = live.iterator().next();
                t.remove(t.lookup(victim));
                live.remove(victim);
                lastByteOfIndex.put(victim >>> 8, victim & 0xFF);
                recent.addLast(victim);
                if (recent.size() > KeyTable.QUARANTINE) {
                    recent.removeFirst();
                }
            }
        }
        assertTrue(reusedIndices > 10_000, "freed indices are reused: " + reusedIndices);
        assertTrue(t.size() <= 65);
    }

    @Test
    void aKeyWhoseByteChangedInPlaceIsFoundOnlyByItsNewByte() {
        KeyTable t = new KeyTable();
        Mr m = region(t.newKey());
        t.add(m);
        int old = m.key;
        m.key = io.jrdma.verbs.MemoryWindow.incRkey(old); // a fast registration or a bind gives a new key byte
        org.junit.jupiter.api.Assertions.assertNull(t.lookup(old));
        org.junit.jupiter.api.Assertions.assertSame(m, t.lookup(m.key));
        t.remove(m);
        org.junit.jupiter.api.Assertions.assertNull(t.lookup(m.key));
        int next = t.newKey();
        assertNotEquals(m.key, next);
    }

    private static Mr region(int key) {
        return new Mr(null, java.lang.foreign.Arena.global().allocate(8), key, 0);
    }

    @Test
    void agreesWithAMapThroughGrowthAndIndexReuse() {
        KeyTable t = new KeyTable();
        java.util.Map<Integer, Mr> model = new java.util.HashMap<>();
        java.util.SplittableRandom r = new java.util.SplittableRandom(42);
        for (int step = 0; step < 50_000; step++) {
            if (model.size() < 2_000 && (model.isEmpty() || r.nextInt(3) != 0)) {
                Mr m = region(t.newKey());
                t.add(m);
                model.put(m.key, m);
            } else {
                Mr victim = model.values().iterator().next();
                t.remove(victim);
                model.remove(victim.key);
                org.junit.jupiter.api.Assertions.assertNull(t.lookup(victim.key), "removed at step " + step);
            }
            if (step % 997 == 0) {
                for (Mr m : model.values()) {
                    org.junit.jupiter.api.Assertions.assertSame(m, t.lookup(m.key));
                }
                org.junit.jupiter.api.Assertions.assertEquals(model.size(), t.size());
            }
        }
        for (Mr m : java.util.List.copyOf(model.values())) {
            t.remove(m);
        }
        org.junit.jupiter.api.Assertions.assertEquals(0, t.size());
    }

    @Test
    void aReaderAlwaysFindsALiveKeyWhileOthersComeAndGo() throws Exception {
        KeyTable t = new KeyTable();
        Mr pinned = region(t.newKey());
        t.add(pinned);
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicLong misses = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicLong reads = new java.util.concurrent.atomic.AtomicLong();
        Thread reader = Thread.ofPlatform().start(() -> {
            while (!stop.get()) {
                if (t.lookup(pinned.key) != pinned) {
                    misses.incrementAndGet();
                }
                reads.incrementAndGet();
            }
        });
        try {
            ArrayDeque<Mr> live = new ArrayDeque<>();
            for (int i = 0; i < 200_000; i++) {
                Mr m = region(t.newKey());
                t.add(m);
                live.add(m);
                if (live.size() > 500) {
                    t.remove(live.removeFirst());
                }
            }
        } finally {
            stop.set(true);
            reader.join(10_000);
        }
        assertTrue(reads.get() > 0);
        org.junit.jupiter.api.Assertions.assertEquals(0, misses.get(), "lookups of a live key that failed");
    }

    @Test
    void thePermutationIsABijectionWithItsInverse() {
        long[] rounds = {0x1234_5678_9ABC_DEF0L, -1L, 42L, 0x0F0F_0F0F_0F0F_0F0FL};
        boolean[] seen = new boolean[1 << 24];
        for (int x = 0; x < 1 << 24; x++) {
            int y = KeyTable.permute(x, rounds);
            org.junit.jupiter.api.Assertions.assertEquals(0, y >>> 24, "24 bits");
            assertFalse(seen[y], "two indices give " + y);
            seen[y] = true;
            if ((x & 0xFFF) == 0) {
                org.junit.jupiter.api.Assertions.assertEquals(x, KeyTable.inverse(y, rounds));
            }
        }
    }

    @Test
    void rkeysDifferFromLkeysAndAnLkeyIsNotFoundAsAnRkey() {
        KeyTable t = new KeyTable();
        assertTrue(t.scrambled());
        int equal = 0;
        for (int n = 0; n < 1_000; n++) {
            Mr m = region(t.newKey());
            t.add(m);
            equal += m.lkey() == m.rkey() ? 1 : 0;
            org.junit.jupiter.api.Assertions.assertSame(m, t.lookupLocal(m.lkey()));
            org.junit.jupiter.api.Assertions.assertSame(m, t.lookup(m.rkey()));
            if (m.lkey() != m.rkey()) {
                assertNotSameEntry(m, t.lookup(m.lkey()), "an lkey used as an rkey");
                assertNotSameEntry(m, t.lookupLocal(m.rkey()), "an rkey used as an lkey");
            }
            org.junit.jupiter.api.Assertions.assertSame(m, t.lookupAny(m.lkey()));
            org.junit.jupiter.api.Assertions.assertSame(m, t.lookupAny(m.rkey()));
        }
        assertTrue(equal <= 1, equal + " of 1,000 regions have lkey = rkey");
    }

    private static void assertNotSameEntry(Mr m, Mr found, String what) {
        org.junit.jupiter.api.Assertions.assertNotSame(m, found, what + " finds the region");
    }

    @Test
    void keysDifferBetweenTablesAndDoNotShowTheirIndex() {
        KeyTable a = new KeyTable();
        KeyTable b = new KeyTable();
        int sameUpper = 0;
        int consecutive = 0;
        int previous = -1;
        for (int n = 0; n < 1_000; n++) {
            int ka = a.newKey();
            int kb = b.newKey();
            sameUpper += (ka >>> 8) == (kb >>> 8) ? 1 : 0;
            consecutive += previous >= 0 && (ka >>> 8) == (previous >>> 8) + 1 ? 1 : 0;
            previous = ka;
        }
        assertTrue(sameUpper <= 2, sameUpper + " of 1,000 keys share their upper 24 bits between two contexts");
        assertTrue(consecutive <= 2, consecutive + " of 1,000 successive keys have consecutive upper bits");
    }

    @Test
    void everyKeyBitIsBalanced() {
        KeyTable t = new KeyTable();
        int[] ones = new int[32];
        int n = 20_000;
        for (int i = 0; i < n; i++) {
            int k = t.newKey();
            for (int bit = 0; bit < 32; bit++) {
                ones[bit] += (k >>> bit) & 1;
            }
        }
        for (int bit = 0; bit < 32; bit++) {
            double f = ones[bit] / (double) n;
            // 20,000 fair coins: 0.5 +- 0.0035 (one sigma); 0.47..0.53 is over 8 sigma
            assertTrue(f > 0.47 && f < 0.53, "bit " + bit + " is set in " + f + " of the keys");
        }
    }

    @Test
    void randomKeysFindNothingAmongAThousandLiveOnes() {
        KeyTable t = new KeyTable();
        for (int n = 0; n < 1_000; n++) {
            t.add(region(t.newKey()));
        }
        java.util.SplittableRandom r = new java.util.SplittableRandom(7);
        int hits = 0;
        for (int n = 0; n < 1_000_000; n++) {
            int k = r.nextInt();
            hits += t.lookup(k) != null ? 1 : 0;
            hits += t.lookupLocal(k) != null ? 1 : 0;
        }
        // expected 2e6 * 1000 / 2^32 = 0.47
        assertTrue(hits <= 4, hits + " of 2,000,000 guesses found a live key");
    }

    @Test
    void aPlainTableKeepsRxesLayout() {
        KeyTable t = new KeyTable();
        t.plain();
        assertFalse(t.scrambled());
        for (int n = 1; n <= 100; n++) {
            Mr m = region(t.newKey());
            t.add(m);
            org.junit.jupiter.api.Assertions.assertEquals(n, m.rkey() >>> 8, "index << 8 | key byte");
            org.junit.jupiter.api.Assertions.assertEquals(m.rkey(), m.lkey());
        }
        org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, t::plain);
    }
}

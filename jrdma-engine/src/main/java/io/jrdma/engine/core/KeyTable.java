package io.jrdma.engine.core;

import io.jrdma.verbs.RdmaException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Memory keys: 32 random bits each (never 0), unique among live keys and not equal to any of
 * the last {@value #QUARANTINE} freed keys, so a stale rkey held by a peer does not reach a new
 * region soon.
 * <p>
 * The table is an open-addressing array (linear probing) of regions, written in place by one
 * writer at a time (registration and deregistration, control path, under this object's lock)
 * and read without locks or allocation by the engine and posting threads. Every slot write is a
 * release store of a whole, immutable-keyed {@link Mr} (or of the tombstone a removal leaves);
 * readers load slots with acquire, so a reader that finds a region sees it fully built. When
 * live entries and tombstones reach half the array, the writer builds a new array and
 * publishes it through a volatile field; readers still walking the old one see a consistent
 * (if momentarily older) table. Adding or removing a key is O(1) amortized, so tearing down N
 * regions is O(N) rather than the O(N²) a copy-on-write map costs.
 */
public final class KeyTable {
    static final int QUARANTINE = 4096;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final Object TOMBSTONE = new Object();
    private final SplittableRandom random = new SplittableRandom(new SecureRandom().nextLong());
    private final int[] recentlyFreed = new int[QUARANTINE];
    private int freedNext;
    private volatile Object[] table = new Object[32];
    private int size;
    /** Live entries plus tombstones: what keeps probes short. */
    private int used;

    private static int hash(int k) {
        int h = k * 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    /** @return the region with this key, or null */
    public Mr lookup(int key) {
        Object[] t = table;
        int mask = t.length - 1;
        for (int i = hash(key) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
            Object o = SLOT.getAcquire(t, i);
            if (o == null) {
                return null;
            }
            if (o != TOMBSTONE && ((Mr) o).key == key) {
                return (Mr) o;
            }
        }
        return null;
    }

    synchronized int newKey() {
        for (int attempt = 0; attempt < 1000; attempt++) {
            int k = random.nextInt();
            if (k != 0 && lookup(k) == null && !recentlyFreedContains(k)) {
                return k;
            }
        }
        throw new RdmaException(RdmaException.Errno.ENOMEM, "no free memory key");
    }

    private boolean recentlyFreedContains(int k) {
        for (int f : recentlyFreed) {
            if (f == k) {
                return true;
            }
        }
        return false;
    }

    /** @return how many regions are registered */
    public synchronized int size() {
        return size;
    }

    public synchronized void add(Mr mr) {
        if ((used + 1) * 2 > table.length) {
            rebuild(Math.max(32, Integer.highestOneBit(Math.max(1, size + 1)) * 4));
        }
        Object[] t = table;
        int mask = t.length - 1;
        for (int i = hash(mr.key) & mask; ; i = (i + 1) & mask) {
            Object o = t[i];
            if (o == null || o == TOMBSTONE) {
                if (o == null) {
                    used++;
                }
                size++;
                SLOT.setRelease(t, i, mr);
                return;
            }
        }
    }

    public synchronized void remove(Mr mr) {
        Object[] t = table;
        int mask = t.length - 1;
        for (int i = hash(mr.key) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
            Object o = t[i];
            if (o == null) {
                return;
            }
            if (o == mr) {
                SLOT.setRelease(t, i, TOMBSTONE);
                size--;
                recentlyFreed[freedNext] = mr.key;
                freedNext = (freedNext + 1) % QUARANTINE;
                if (used > 16 && size * 8 < used) {
                    rebuild(Math.max(32, Integer.highestOneBit(Math.max(1, size)) * 4)); // mostly tombstones
                }
                return;
            }
        }
    }

    /** Writer: copies the live entries into a fresh array and publishes it. */
    private void rebuild(int capacity) {
        Object[] old = table;
        Object[] t = new Object[capacity];
        int mask = capacity - 1;
        for (Object o : old) {
            if (o != null && o != TOMBSTONE) {
                int i = hash(((Mr) o).key) & mask;
                while (t[i] != null) {
                    i = (i + 1) & mask;
                }
                t[i] = o;
            }
        }
        used = size;
        table = t; // volatile: publishes the filled array
    }
}

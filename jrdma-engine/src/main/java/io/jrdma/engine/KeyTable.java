package io.jrdma.engine;

import io.jrdma.engine.util.IntMap;
import io.jrdma.verbs.RdmaException;

import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Memory keys: 32 random bits each (never 0), unique among live keys and not equal to any of
 * the last {@value #QUARANTINE} freed keys, so a stale rkey held by a peer does not reach a new
 * region soon. The map is copy-on-write: registration (control path, any thread) publishes a
 * new map with a release store; lookups (engine and posting threads) read it with an acquire
 * load and never allocate or lock.
 */
final class KeyTable {
    static final int QUARANTINE = 4096;
    private final SplittableRandom random = new SplittableRandom(new SecureRandom().nextLong());
    private final int[] recentlyFreed = new int[QUARANTINE];
    private int freedNext;
    private volatile IntMap<Mr> map = new IntMap<>(16);

    /** @return the region with this key, or null (acquire: pairs with the volatile write in add/remove) */
    Mr lookup(int key) {
        return map.get(key);
    }

    synchronized int newKey() {
        IntMap<Mr> m = map;
        for (int attempt = 0; attempt < 1000; attempt++) {
            int k = random.nextInt();
            if (k != 0 && !m.containsKey(k) && !recentlyFreedContains(k)) {
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

    synchronized void add(Mr mr) {
        IntMap<Mr> copy = copy(map);
        copy.put(mr.key, mr);
        map = copy;
    }

    synchronized void remove(Mr mr) {
        IntMap<Mr> copy = copy(map);
        if (copy.remove(mr.key) != null) {
            recentlyFreed[freedNext] = mr.key;
            freedNext = (freedNext + 1) % QUARANTINE;
        }
        map = copy;
    }

    private static IntMap<Mr> copy(IntMap<Mr> m) {
        IntMap<Mr> c = new IntMap<>(m.size() + 1);
        m.forEachValue(v -> c.put(v.key, v));
        return c;
    }
}

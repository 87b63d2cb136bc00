package io.jrdma.engine.core;

import io.jrdma.verbs.RdmaException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Memory keys, shaped as rxe's: {@code index << 8 | key}, where the low 8 bits (the "key" part,
 * IBA 10.6.7.1) change each time the index is reused, a memory window is bound again
 * ({@code MemoryWindow.incRkey}) or a fast-registration region registered again; a key whose
 * index is live but whose key byte is old is not found. Table index 0 is never used, and no key is 0.
 * <p>
 * <b>Keys a peer cannot guess.</b> The upper 24 bits of a key are not the table index itself but
 * the index through a keyed permutation of 24-bit values (a four-round Feistel network on 12-bit
 * halves) whose round keys are a per-context secret drawn from {@link SecureRandom} when the context
 * opens; rkeys and lkeys use two independent permutations, so a region's rkey differs from its lkey
 * (IBA allows it; rxe and siw make them equal) and an lkey, which never crosses the wire, does not
 * work as an rkey. A peer that holds some rkeys of a context learns nothing usable about the others:
 * another live key is one 24-bit value out of 2^24 times one key byte out of 256. The key bytes come
 * from a {@link SplittableRandom} seeded from {@link SecureRandom}, so registration makes no
 * SecureRandom call; lookups compute the inverse permutation (eight multiplications, no memory).
 * A fast-registration region keeps lkey = rkey, as rxe: a REG_MR names one new key for both.
 * The shared-memory transport turns this off ({@link #plain}): its peers index its published table
 * by {@code rkey >>> 8} and can read every published key anyway.
 * <p>
 * A lookup (engine and posting threads, per packet) is the inverse permutation, one array load and
 * one compare: the slot of the index, then the entry's current key against the whole key. Writers
 * (registration, deregistration, allocation of windows: control path, under this object's lock)
 * store whole entries with release; readers load slots with acquire, so a reader that finds an entry
 * sees it fully built. When the table is full it is copied into one twice the size and published
 * through a volatile field. A freed index goes to the back of a queue and is given out again only
 * when {@value #REUSE_DELAY} others wait before it, with the next key byte: a key comes back only
 * after {@value #QUARANTINE} frees, so a stale rkey held by a peer does not reach a new region soon.
 */
public final class KeyTable {
    /** The largest index: keys have 24 bits of it. */
    static final int MAX_INDEX = (1 << 24) - 1;
    /** Freed indices that wait before one is reused. */
    static final int REUSE_DELAY = 16;
    /** Frees before a key can come back: each index cycles through 256 key bytes, {@link #REUSE_DELAY} apart. */
    static final int QUARANTINE = REUSE_DELAY * 256;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Mr[].class);
    /** Feistel rounds of the key permutations. */
    private static final int ROUNDS = 4;
    private final SplittableRandom random;
    /** The round keys of the rkey and lkey permutations: the context's secret. */
    private final long[] remoteRounds = new long[ROUNDS];
    private final long[] localRounds = new long[ROUNDS];
    /** False for {@link #plain} tables: the key's upper 24 bits are the index. */
    private boolean scrambled = true;
    private volatile Mr[] table = new Mr[64];
    /** Per index: the key byte it had last (the next use takes the one after). */
    private byte[] lastKeyByte = new byte[64];
    /** Per index: reserved by {@link #newKey} or holding an entry. */
    private boolean[] taken = new boolean[64];
    /** Freed indices, oldest first (a ring). */
    private int[] freed = new int[64];
    private int freedHead;
    private int freedCount;
    /** The next never-used index. */
    private int fresh = 1;
    private int size;

    /** A table with a fresh secret drawn from {@link SecureRandom}. */
    public KeyTable() {
        SecureRandom strong = new SecureRandom();
        for (int n = 0; n < ROUNDS; n++) {
            remoteRounds[n] = strong.nextLong();
            localRounds[n] = strong.nextLong();
        }
        random = new SplittableRandom(strong.nextLong());
    }

    /**
     * Makes keys plain {@code index << 8 | key byte} with lkey = rkey (rxe's own layout), for a transport whose
     * peers find entries by {@code rkey >>> 8}. Only before the first key.
     *
     * @throws IllegalStateException when a key was already given out
     */
    public synchronized void plain() {
        if (fresh != 1) {
            throw new IllegalStateException("the key layout is chosen before the first key");
        }
        scrambled = false;
    }

    /** @return true when keys carry permuted indices and lkeys differ from rkeys */
    public boolean scrambled() {
        return scrambled;
    }

    /**
     * A remote key's entry (an rkey or STag from a packet, or a window's key).
     *
     * @return the live region or window whose rkey is exactly this key (index and key byte), or null
     */
    public Mr lookup(int key) {
        Mr[] t = table;
        int i = scrambled ? inverse(key >>> 8, remoteRounds) : key >>> 8;
        if (i >= t.length) {
            return null;
        }
        Mr m = (Mr) SLOT.getAcquire(t, i);
        return m != null && m.key == key ? m : null;
    }

    /**
     * A local key's entry (an lkey of a scatter/gather element): regions only, never a window.
     *
     * @return the live region whose lkey is exactly this key, or null
     */
    public Mr lookupLocal(int lkey) {
        Mr[] t = table;
        int i = scrambled ? inverse(lkey >>> 8, localRounds) : lkey >>> 8;
        Mr m = i < t.length ? (Mr) SLOT.getAcquire(t, i) : null;
        if (m != null && m.kind == Mr.REGION && m.lkey() == lkey) {
            return m;
        }
        m = lookup(lkey); // a fast-registration region: the REG_MR key is its lkey and its rkey, as rxe
        return m != null && m.kind == Mr.FAST_REG ? m : null;
    }

    /** @return the entry whose rkey, or else whose lkey, is exactly {@code key} (LOCAL_INV takes either), or null */
    public Mr lookupAny(int key) {
        Mr m = lookup(key);
        return m != null ? m : lookupLocal(key);
    }

    /** @return the table index a key of an entry of this table names (its rkey's) */
    private int indexOf(int rkey) {
        return scrambled ? inverse(rkey >>> 8, remoteRounds) : rkey >>> 8;
    }

    /** The 24-bit keyed permutation: Feistel rounds on 12-bit halves. */
    static int permute(int v, long[] rounds) {
        int l = (v >>> 12) & 0xFFF;
        int r = v & 0xFFF;
        for (long k : rounds) {
            int t = r;
            r = l ^ round(k, r);
            l = t;
        }
        return l << 12 | r;
    }

    /** The inverse of {@link #permute}. */
    static int inverse(int v, long[] rounds) {
        int l = (v >>> 12) & 0xFFF;
        int r = v & 0xFFF;
        for (int n = rounds.length - 1; n >= 0; n--) {
            int t = l;
            l = r ^ round(rounds[n], l);
            r = t;
        }
        return l << 12 | r;
    }

    /** A round function: a 12-bit value of the secret round key and the half, mixed by two multiplications. */
    private static int round(long k, int half) {
        long h = (half + k) * 0x9E3779B97F4A7C15L;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        return (int) (h >>> 52);
    }

    /**
     * Reserves an index and returns its next key (a random key byte on first use). The caller
     * stores its entry with {@link #add}.
     *
     * @throws RdmaException ENOMEM when all 16,777,215 indices are live
     */
    synchronized int newKey() {
        int index;
        if (freedCount > REUSE_DELAY || fresh > MAX_INDEX && freedCount > 0) {
            index = freed[freedHead];
            freedHead = (freedHead + 1) % freed.length;
            freedCount--;
        } else if (fresh <= MAX_INDEX) {
            index = fresh++;
            while (scrambled && (permute(index, remoteRounds) == 0 || permute(index, localRounds) == 0)
                    && fresh <= MAX_INDEX) {
                index = fresh++; // no key with upper bits 0: with a key byte of 0 it would be key 0
            }
            if (index >= taken.length) {
                grow(Math.min(MAX_INDEX + 1, taken.length * 2));
            }
            lastKeyByte[index] = (byte) random.nextInt();
        } else {
            throw new RdmaException(RdmaException.Errno.ENOMEM, "no free memory key: " + MAX_INDEX
                    + " regions and windows are registered; deregister some");
        }
        taken[index] = true;
        return (scrambled ? permute(index, remoteRounds) : index) << 8 | ((lastKeyByte[index] + 1) & 0xFF);
    }

    private void grow(int capacity) {
        lastKeyByte = java.util.Arrays.copyOf(lastKeyByte, capacity);
        taken = java.util.Arrays.copyOf(taken, capacity);
        Mr[] t = new Mr[capacity];
        Mr[] old = table;
        for (int i = 0; i < old.length; i++) {
            t[i] = (Mr) SLOT.getAcquire(old, i);
        }
        table = t; // volatile: publishes the filled array
    }

    /** @return how many regions and windows are registered */
    public synchronized int size() {
        return size;
    }

    /** Stores {@code mr} under the index of its key (reserved by {@link #newKey}). */
    public synchronized void add(Mr mr) {
        int i = indexOf(mr.key);
        if (i == 0 || i >= taken.length || !taken[i] || table[i] != null) {
            throw new IllegalStateException("key 0x" + Integer.toHexString(mr.key) + " was not reserved by newKey");
        }
        // a fast-registration region's lkey is its rkey, as rxe (a REG_MR names one key for both)
        mr.lkeyIndex = (scrambled && mr.kind == Mr.REGION ? permute(i, localRounds) : mr.key >>> 8) << 8;
        size++;
        SLOT.setRelease(table, i, mr);
    }

    /** Frees the index of {@code mr}'s key; its key stops working at once. Removing an entry twice does nothing. */
    public synchronized void remove(Mr mr) {
        int i = indexOf(mr.key);
        Mr[] t = table;
        if (i >= t.length || t[i] != mr) {
            return;
        }
        SLOT.setRelease(t, i, null);
        size--;
        taken[i] = false;
        lastKeyByte[i] = (byte) mr.key; // the key byte it had last, a fast registration's or a window's included
        if (freedCount == freed.length) {
            int[] f = new int[freed.length * 2];
            for (int n = 0; n < freedCount; n++) {
                f[n] = freed[(freedHead + n) % freed.length];
            }
            freed = f;
            freedHead = 0;
        }
        freed[(freedHead + freedCount) % freed.length] = i;
        freedCount++;
    }
}

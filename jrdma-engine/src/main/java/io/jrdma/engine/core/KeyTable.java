package io.jrdma.engine.core;

import io.jrdma.verbs.RdmaException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;
import java.util.SplittableRandom;

/**
 * Memory keys, as rxe makes them: {@code index << 8 | key}. The upper 24 bits index this table,
 * the low 8 bits (the "key" part, IBA 10.6.7.1) change each time the index is reused, a memory
 * window is bound again ({@code MemoryWindow.incRkey}) or a fast-registration region registered
 * again; a key whose index is live but whose key byte is old is not found. Index 0 is never
 * used, so no key is 0.
 * <p>
 * A lookup (engine and posting threads, per packet) is one array load and one compare: the slot
 * of the index, then the entry's current key against the whole key. Writers (registration,
 * deregistration, allocation of windows: control path, under this object's lock) store whole
 * entries with release; readers load slots with acquire, so a reader that finds an entry sees
 * it fully built. When the table is full it is copied into one twice the size and published
 * through a volatile field. A freed index goes to the back of a queue and is given out again
 * only when {@value #REUSE_DELAY} others wait before it, with the next key byte: a key comes
 * back only after {@value #QUARANTINE} frees, so a stale rkey held by a peer does not reach a
 * new region soon.
 */
public final class KeyTable {
    /** The largest index: keys have 24 bits of it. */
    static final int MAX_INDEX = (1 << 24) - 1;
    /** Freed indices that wait before one is reused. */
    static final int REUSE_DELAY = 16;
    /** Frees before a key can come back: each index cycles through 256 key bytes, {@link #REUSE_DELAY} apart. */
    static final int QUARANTINE = REUSE_DELAY * 256;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Mr[].class);
    private final SplittableRandom random = new SplittableRandom(new SecureRandom().nextLong());
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

    /** @return the live region or window with exactly this key (index and key byte), or null */
    public Mr lookup(int key) {
        Mr[] t = table;
        int i = key >>> 8;
        if (i >= t.length) {
            return null;
        }
        Mr m = (Mr) SLOT.getAcquire(t, i);
        return m != null && m.key == key ? m : null;
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
            if (index >= taken.length) {
                grow(Math.min(MAX_INDEX + 1, taken.length * 2));
            }
            lastKeyByte[index] = (byte) random.nextInt();
        } else {
            throw new RdmaException(RdmaException.Errno.ENOMEM, "no free memory key: " + MAX_INDEX
                    + " regions and windows are registered; deregister some");
        }
        taken[index] = true;
        return index << 8 | ((lastKeyByte[index] + 1) & 0xFF);
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
        int i = mr.key >>> 8;
        if (i == 0 || i >= taken.length || !taken[i] || table[i] != null) {
            throw new IllegalStateException("key 0x" + Integer.toHexString(mr.key) + " was not reserved by newKey");
        }
        size++;
        SLOT.setRelease(table, i, mr);
    }

    /** Frees the index of {@code mr}'s key; its key stops working at once. Removing an entry twice does nothing. */
    public synchronized void remove(Mr mr) {
        int i = mr.key >>> 8;
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

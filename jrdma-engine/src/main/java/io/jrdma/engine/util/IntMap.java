package io.jrdma.engine.util;

/**
 * An int-keyed open-addressing map (linear probing, backward-shift deletion) whose reads do
 * not allocate. Used for the key and QP tables, owned by the engine thread.
 */
public final class IntMap<V> {
    private int[] keys;
    private Object[] values;
    private int size;

    public IntMap(int initialCapacity) {
        int cap = Integer.highestOneBit(Math.max(4, initialCapacity) * 2 - 1) << 1;
        keys = new int[cap];
        values = new Object[cap];
    }

    private static int hash(int k) {
        int h = k * 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    @SuppressWarnings("unchecked")
    public V get(int key) {
        Object[] vs = values;
        int[] ks = keys;
        int mask = ks.length - 1;
        for (int i = hash(key) & mask; ; i = (i + 1) & mask) {
            Object v = vs[i];
            if (v == null) {
                return null;
            }
            if (ks[i] == key) {
                return (V) v;
            }
        }
    }

    public boolean containsKey(int key) {
        return get(key) != null;
    }

    public void put(int key, V value) {
        if (value == null) {
            throw new IllegalArgumentException("null value");
        }
        if ((size + 1) * 2 > keys.length) {
            rehash(keys.length * 2);
        }
        int mask = keys.length - 1;
        for (int i = hash(key) & mask; ; i = (i + 1) & mask) {
            if (values[i] == null) {
                keys[i] = key;
                values[i] = value;
                size++;
                return;
            }
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
        }
    }

    @SuppressWarnings("unchecked")
    public V remove(int key) {
        int mask = keys.length - 1;
        int i = hash(key) & mask;
        while (values[i] != null && keys[i] != key) {
            i = (i + 1) & mask;
        }
        Object old = values[i];
        if (old == null) {
            return null;
        }
        values[i] = null;
        size--;
        // backward shift: re-place the entries of the cluster that follows
        for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
            int k = keys[j];
            Object v = values[j];
            values[j] = null;
            size--;
            put(k, (V) v);
        }
        return (V) old;
    }

    public int size() {
        return size;
    }

    @SuppressWarnings("unchecked")
    public void forEachValue(java.util.function.Consumer<V> c) {
        for (Object v : values.clone()) {
            if (v != null) {
                c.accept((V) v);
            }
        }
    }

    private void rehash(int cap) {
        int[] oldK = keys;
        Object[] oldV = values;
        keys = new int[cap];
        values = new Object[cap];
        size = 0;
        for (int i = 0; i < oldK.length; i++) {
            if (oldV[i] != null) {
                put(oldK[i], cast(oldV[i]));
            }
        }
    }

    @SuppressWarnings("unchecked")
    private V cast(Object o) {
        return (V) o;
    }

    @Override
    public String toString() {
        return "IntMap{size=" + size + ", capacity=" + keys.length + '}';
    }
}

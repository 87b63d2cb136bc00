package io.jrdma.engine.core;

import io.jrdma.verbs.MemoryWindow;
import io.jrdma.verbs.MwType;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

/**
 * A memory window ({@code ibv_mw}, rxe_mw.c). Its side of the key table is an {@link Mr} entry of kind
 * {@link Mr#MW_TYPE_1} or {@link Mr#MW_TYPE_2}, which the responders find by rkey like any region: a
 * bind (engine thread, in send-queue order: {@link LocalOps}) points the entry at a range of a region,
 * with the window's access and the bind's key byte; an invalidation or an unbind makes it refuse
 * everything. The application-visible {@link #rkey()} is the key of the last bind posted (type 1: set when
 * {@code bindMw} posts, as {@code ibv_bind_mw} sets {@code mw->rkey}) or completed (type 2).
 */
public final class Mw implements MemoryWindow {
    final Pd pd;
    final MwType type;
    /** the key table's entry; its fields belong to the engine thread */
    public final Mr entry;
    private volatile int rkey;
    private boolean closed;

    Mw(Pd pd, MwType type, int key) {
        this.pd = pd;
        this.type = type;
        this.entry = new Mr(pd, type == MwType.TYPE_1 ? Mr.MW_TYPE_1 : Mr.MW_TYPE_2, key, 0);
        this.rkey = key;
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MwType type() {
        return type;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    /** Posting thread (type 1) or engine thread (type 2, when the bind executes): the window's new key. */
    void rkey(int key) {
        rkey = key;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                throw new RdmaException(Errno.EINVAL, "the memory window is already closed");
            }
            closed = true;
        }
        pd.context.control(entry::unbind); // the engine thread owns the entry and its region's window count
        pd.context.engine.transport.deregistering(entry); // e.g. shm withdraws the key from its peers, as a region's
        pd.context.keys.remove(entry);
        pd.release(this);
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "MemoryWindow{" + type + ", rkey=0x" + Integer.toHexString(rkey) + '}';
    }
}

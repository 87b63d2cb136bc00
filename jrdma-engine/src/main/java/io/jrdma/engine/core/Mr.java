package io.jrdma.engine.core;

import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;

import java.lang.foreign.MemorySegment;

/**
 * An entry of the key table: a registered memory region (the segment, its virtual address range,
 * an rkey and an lkey of one table index: {@link KeyTable}), a fast-registration region ({@link Pd#allocMr}: no memory
 * until a REG_MR maps some) or a memory window's side of the table ({@link Mw}: the range of a
 * region it opens, with the window's key and access). Every access checks {@link #permits}.
 * <p>
 * A registered region's fields never change. Those of a fast-registration region or a window
 * change only on the engine thread (REG_MR, BIND_MW, LOCAL_INV, a peer's SEND_WITH_INV), which
 * makes every check that depends on them.
 */
public final class Mr implements MemoryRegion {
    /** An ordinary registered region. */
    public static final int REGION = 0;
    /** A fast-registration region ({@code ib_alloc_mr}). */
    public static final int FAST_REG = 1;
    /** A type 1 memory window. */
    public static final int MW_TYPE_1 = 2;
    /** A type 2 memory window. */
    public static final int MW_TYPE_2 = 3;

    public final Pd pd;
    /** {@link #REGION}, {@link #FAST_REG}, {@link #MW_TYPE_1} or {@link #MW_TYPE_2} */
    public final int kind;
    /** the memory: a window's is its region's, so that offsets are {@code va - address} for both */
    public MemorySegment segment;
    public long address;
    public long length;
    /** the current rkey (index and key byte); a fast registration or a bind changes the key byte */
    public int key;
    /** the upper 24 bits of the lkey, set when the key table stores the entry; the key byte is {@link #key}'s */
    int lkeyIndex;
    public int access;
    /** the range accesses may touch: the region's, or a window's part of its region */
    public long lo;
    public long span;
    /** a type 2 window: the QP it is bound to, the only one that may use it; -1 otherwise */
    public int boundQpn = -1;
    /** a window: the region it is bound to, or null */
    public Mr parent;
    /** a region: the memory windows bound to it (engine thread writes; close reads) */
    public volatile int windows;
    /** a fast-registration region: the largest segment a REG_MR may map */
    public final long maxLength;
    /**
     * Set by the engine thread when a peer's SEND_WITH_INV invalidates the key (only with
     * {@code Access.REMOTE_INVALIDATE}); from then on every access is refused. Plain: the engine,
     * which makes every remote check and the last local one (the gather or scatter), wrote it.
     */
    public boolean invalidated;
    /** soft-iWARP zero-copy views of this region, made by the engine thread on first need ({@link RegionViews}) */
    public RegionViews views;
    private volatile boolean closed;

    public Mr(Pd pd, MemorySegment segment, int key, int access) {
        this.pd = pd;
        this.kind = REGION;
        this.segment = segment;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.lo = address;
        this.span = length;
        this.key = key;
        this.access = access;
        this.maxLength = length;
    }

    /** A fast-registration region ({@code maxLength > 0}) or a window's entry, invalid (free) until mapped or bound. */
    Mr(Pd pd, int kind, int key, long maxLength) {
        this.pd = pd;
        this.kind = kind;
        this.segment = MemorySegment.NULL;
        this.key = key;
        this.maxLength = maxLength;
        this.invalidated = true;
    }

    /**
     * The check every access makes before touching memory (rxe_mr.c {@code mr_check_range}
     * and the key/PD/access checks of {@code lookup_mr}): same PD, all {@code needed} access
     * bits, and [va, va + len) inside the region, overflow-safe.
     */
    public boolean permits(Pd requester, int needed, long va, long len) {
        return requester == pd && !invalidated && (access & needed) == needed && (needed != 0 || kind < MW_TYPE_1)
                && len >= 0 && va >= lo && va - lo <= span - len;
    }

    /**
     * The check of a peer's access through this key on {@code qp}: {@link #permits} with the QP's PD, and a
     * type 2 window only through the QP it is bound to (IBA 10.6.7.2.2; rxe_check_mw's QP test).
     */
    public boolean permitsRemote(Qp qp, int needed, long va, long len) {
        // a window whose region was deregistered in a race with its bind grants nothing
        return (boundQpn < 0 || boundQpn == qp.qpn) && (parent == null || !parent.closed)
                && permits(qp.pd, needed, va, len);
    }

    /**
     * Why {@link #permitsRemote} refused (error path only): the drop reason counted.
     *
     * @param mr the entry the key named, or null
     */
    public static Counter refusal(Mr mr, Qp qp, int needed, long va, long len) {
        if (mr == null || mr.pd != qp.pd || mr.invalidated || mr.boundQpn >= 0 && mr.boundQpn != qp.qpn
                || mr.parent != null && mr.parent.closed) {
            return Counter.RCVD_BAD_KEY;
        }
        if ((mr.access & needed) != needed) {
            return Counter.RCVD_NO_ACCESS;
        }
        return Counter.RCVD_OUT_OF_BOUNDS;
    }

    /** @return true for a memory window's entry */
    public boolean isWindow() {
        return kind >= MW_TYPE_1;
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public int lkey() {
        return lkeyIndex | (key & 0xFF);
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        refuseIfWindows();
        // closed before the withdrawal, so that a publication racing it (a REG_MR or a window's bind on the engine
        // thread) sees it under the transport's lock and publishes nothing; then the windows once more, as a bind
        // that passed its look at closed before this store has counted itself by now or is refused by it
        closed = true;
        if (windows > 0) {
            closed = false;
            refuseIfWindows();
        }
        pd.context.engine.transport.deregistering(this); // e.g. shm withdraws the key from its peers
        pd.context.keys.remove(this);
        pd.release(this);
    }

    private void refuseIfWindows() {
        int n = windows;
        if (n > 0) {
            // rxe_dereg_mr refuses too ("mr has mw's bound"), with EINVAL
            throw new io.jrdma.verbs.RdmaException(io.jrdma.verbs.RdmaException.Errno.EINVAL, "the region has " + n
                    + " memory windows bound to it; close the windows or bind them elsewhere first (as rxe's dereg_mr)");
        }
    }

    /**
     * Engine thread: a peer's SEND_WITH_INV names this key. As rxe and siw, the region must belong
     * to the receiving QP's PD; it must also have been registered with {@code REMOTE_INVALIDATE}
     * (jrdma's stand-in for a fast-registration region). Invalidating an invalid key again is allowed
     * (siw_invalidate_stag: "an STag may already be in invalid state").
     *
     * @return true when the key is now invalid
     */
    public boolean invalidateFor(Pd receiver) {
        return invalidateFor(receiver, -1);
    }

    /**
     * Engine thread: {@link #invalidateFor(Pd)} as a RoCE responder asks it, knowing the receiving QP: a
     * fast-registration region of the QP's PD with no window bound to it, or a type 2 window bound to that QP,
     * is invalidated too (rxe's invalidate_rkey); a type 1 window cannot be (IBA 10.6.7.2.1).
     *
     * @param receiver the receiving QP's PD
     * @param qpn      the receiving QP, or -1 when windows cannot be named (iWARP)
     * @return true when the key is now invalid
     */
    public boolean invalidateFor(Pd receiver, int qpn) {
        if (receiver != pd || closed) {
            return false;
        }
        switch (kind) {
            case REGION -> {
                if ((access & io.jrdma.verbs.Access.REMOTE_INVALIDATE) == 0 || windows > 0) {
                    // with windows bound, as a fast-registration region: they would still reach its memory (their
                    // access checks their region's close, not its invalidation); found in review
                    return false;
                }
                invalidated = true;
            }
            case FAST_REG -> {
                if (windows > 0) {
                    return false; // as a LOCAL_INV: not while windows are bound to it (rxe_invalidate_mr)
                }
                invalidated = true;
            }
            case MW_TYPE_2 -> {
                if (qpn < 0 || boundQpn != qpn) {
                    return false;
                }
                unbind();
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /** Engine thread: a window's entry stops granting access and lets its region go. */
    void unbind() {
        if (parent != null) {
            parent.windows--;
            parent = null;
        }
        invalidated = true;
        boundQpn = -1;
        span = 0;
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "MemoryRegion{addr=0x" + Long.toHexString(address) + ", length=" + length + ", key=0x"
                + Integer.toHexString(key) + ", access=" + io.jrdma.verbs.Access.toString(access) + '}';
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.WcStatus;

import java.lang.foreign.MemorySegment;

/** Scatter/gather-list checks and copies that both transports' engines share (rxe's copy_data, siw's siw_check_sgl_tx). */
public final class Sgl {
    private Sgl() {
    }

    /**
     * Local protection checks of a send WQE's SGEs before anything is sent: each non-empty SGE's
     * lkey must name a region of the QP's PD that covers it (with LOCAL_WRITE for a READ or
     * atomic, whose data lands there). Records the regions, or LOC_PROT_ERR in the WQE.
     */
    public static void validate(KeyTable keys, Qp qp, Wqe w) {
        w.validated = true;
        if (w.inline) {
            return;
        }
        int needed = w.isReadOrAtomic() ? Access.LOCAL_WRITE : 0;
        for (int i = 0; i < w.numSge; i++) {
            int len = w.sgeLength[i];
            if (len == 0) {
                continue;
            }
            Mr mr = keys.lookupLocal(w.sgeLkey[i]);
            if (mr == null || !mr.permits(qp.pd, needed, w.sgeAddr[i], len)) {
                w.localError = WcStatus.LOC_PROT_ERR.ordinal();
                return;
            }
            w.sgeMr[i] = mr;
        }
    }

    /**
     * Copies {@code len} bytes of an incoming SEND, {@code off} bytes into its message, into a
     * receive WQE's scatter list, checking each lkey first.
     *
     * @return false on a protection error or when the list is too short (nothing past it is touched)
     */
    public static boolean scatter(KeyTable keys, Qp qp, RecvWqe r, long off, MemorySegment src, long srcOff, int len) {
        long skip = off;
        int left = len;
        for (int i = 0; i < r.numSge && left > 0; i++) {
            int sl = r.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = (int) Math.min(sl - skip, left);
            Mr mr = keys.lookupLocal(r.sgeLkey[i]);
            long va = r.sgeAddr[i] + skip;
            // the SRQ's PD for an SRQ receive; a region whose memory was freed while registered is refused, as
            // region() refuses it for a gather (before, the copy threw out of the engine's cycle)
            if (mr == null || !mr.permits(qp.recvPd, Access.LOCAL_WRITE, va, n) || !mr.segment.scope().isAlive()) {
                return false;
            }
            MemorySegment.copy(src, srcOff, mr.segment, va - mr.address, n);
            srcOff += n;
            left -= n;
            skip = 0;
        }
        return left == 0;
    }

    /**
     * Copies {@code len} bytes of the WQE's gather list, starting {@code off} bytes in, to {@code dst}, each SGE's key
     * resolved again as it is read ({@link #region}).
     *
     * @return false when an SGE's region is gone (nothing is read from it, and nothing past it): the WQE completes
     *         with LOC_PROT_ERR
     */
    public static boolean gather(KeyTable keys, Qp qp, Wqe w, long off, int len, MemorySegment dst, long dstOff) {
        if (len == 0) {
            return true;
        }
        if (w.inline) {
            MemorySegment.copy(w.inlineArea, off, dst, dstOff, len);
            return true;
        }
        return walk(keys, qp, w, off, len, dst, dstOff, OUT);
    }

    /**
     * Copies {@code len} bytes from {@code src} into the WQE's scatter list at {@code off} (READ and atomic results),
     * each SGE's key resolved again as it is written ({@link #region}).
     *
     * @return false when an SGE's region is gone (nothing is written to it, nor past it): the WQE completes with
     *         LOC_PROT_ERR
     */
    public static boolean scatter(KeyTable keys, Qp qp, Wqe w, long off, MemorySegment src, long srcOff, int len) {
        return walk(keys, qp, w, off, len, src, srcOff, IN);
    }

    /**
     * @return true when every SGE of {@code w} that bytes {@code [off, off + len)} of its message fall in still names
     *         its region ({@link #region}); the regions found are recorded in {@code w.sgeMr}
     */
    public static boolean covers(KeyTable keys, Qp qp, Wqe w, long off, long len) {
        return walk(keys, qp, w, off, len, null, 0, CHECK);
    }

    /**
     * {@link #gather} from the regions {@code w.sgeMr} records, with no lookup: for a caller that checked them in the
     * same step ({@link #covers}, {@link #region}), with nothing between. A region's memory freed by another thread
     * meanwhile throws IllegalStateException (the application's race; the next step's check finds it gone).
     */
    public static void gatherCovered(Wqe w, long off, int len, MemorySegment dst, long dstOff) {
        if (len == 0) {
            return;
        }
        if (w.inline) {
            MemorySegment.copy(w.inlineArea, off, dst, dstOff, len);
            return;
        }
        walk(null, null, w, off, len, dst, dstOff, OUT);
    }

    /** {@link #scatter} into the regions {@code w.sgeMr} records, with no lookup: as {@link #gatherCovered}. */
    public static void scatterCovered(Wqe w, long off, MemorySegment src, long srcOff, int len) {
        walk(null, null, w, off, len, src, srcOff, IN);
    }

    /**
     * The region SGE {@code i} of {@code w} names now, for bytes {@code [va, va + len)} of it, or null when it is gone:
     * {@link #validate} checked the key when the request started, but a request in flight outlives that check (a READ
     * waits for its response, a long message is sent over many duty cycles), and meanwhile the application may
     * deregister the region, invalidate it (LOCAL_INV) or register it again onto other memory (REG_MR), or free its
     * memory. As rxe looks the lkey up at each copy, the key is resolved again here and its region checked as at
     * validation, with its memory still alive. The region validation recorded still answers to the key while it is
     * open and its key unchanged (what the table would return for it), which spares the table's lookup on every
     * packet; else the table is asked. The region found is recorded for the zero-copy paths that keep it.
     */
    public static Mr region(KeyTable keys, Qp qp, Wqe w, int i, long va, long len) {
        int lkey = w.sgeLkey[i];
        Mr mr = w.sgeMr[i];
        if (mr == null || (mr.kind == Mr.FAST_REG ? mr.key : mr.lkey()) != lkey || mr.isClosed()) {
            mr = keys.lookupLocal(lkey);
        }
        int needed = w.isReadOrAtomic() ? Access.LOCAL_WRITE : 0;
        if (mr == null || !mr.permits(qp.pd, needed, va, len) || !mr.segment.scope().isAlive()) {
            return null;
        }
        w.sgeMr[i] = mr;
        return mr;
    }

    /** {@link #walk}'s modes: only check the regions, copy out of them, copy into them. */
    private static final int CHECK = 0;
    private static final int OUT = 1;
    private static final int IN = 2;

    /**
     * Walks the SGEs that bytes {@code [off, off + len)} of the message fall in, checking each ({@link #region};
     * {@code keys} null: the regions recorded, unchecked) and copying to or from {@code other} by {@code mode}.
     *
     * @return false when a region is gone: nothing of it, nor past it, was touched
     */
    private static boolean walk(KeyTable keys, Qp qp, Wqe w, long off, long len, MemorySegment other, long otherOff,
            int mode) {
        long skip = off;
        long left = len;
        for (int i = 0; i < w.numSge && left > 0; i++) {
            int sl = w.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = (int) Math.min(sl - skip, left);
            long va = w.sgeAddr[i] + skip;
            Mr mr = keys == null ? w.sgeMr[i] : region(keys, qp, w, i, va, n);
            if (mr == null) {
                return false;
            }
            if (mode != CHECK) {
                try {
                    if (mode == IN) {
                        MemorySegment.copy(other, otherOff, mr.segment, va - mr.address, n);
                    } else {
                        MemorySegment.copy(mr.segment, va - mr.address, other, otherOff, n);
                    }
                } catch (IllegalStateException e) { // its memory was freed (its arena closed) after the check
                    if (keys == null) {
                        throw e; // a covered copy: the caller's next step finds the region gone
                    }
                    return false;
                }
                otherOff += n;
            }
            left -= n;
            skip = 0;
        }
        return true;
    }
}

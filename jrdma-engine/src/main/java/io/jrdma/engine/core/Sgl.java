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
            if (mr == null || !mr.permits(qp.recvPd, Access.LOCAL_WRITE, va, n)) { // the SRQ's PD for an SRQ receive
                return false;
            }
            MemorySegment.copy(src, srcOff, mr.segment, va - mr.address, n);
            srcOff += n;
            left -= n;
            skip = 0;
        }
        return left == 0;
    }

    /** Copies {@code len} bytes of the WQE's gather list, starting {@code off} bytes in, to {@code dst}. */
    public static void gather(Wqe w, long off, int len, MemorySegment dst, long dstOff) {
        if (len == 0) {
            return;
        }
        if (w.inline) {
            MemorySegment.copy(w.inlineArea, off, dst, dstOff, len);
            return;
        }
        copy(w, off, dst, dstOff, len, false);
    }

    /** Copies {@code len} bytes from {@code src} into the WQE's scatter list at {@code off} (READ and atomic results). */
    public static void scatter(Wqe w, long off, MemorySegment src, long srcOff, int len) {
        copy(w, off, src, srcOff, len, true);
    }

    /** Walks the SGEs from byte {@code off} of the message, copying to or from {@code other}. */
    private static void copy(Wqe w, long off, MemorySegment other, long otherOff, int len, boolean intoWqe) {
        long skip = off;
        int left = len;
        for (int i = 0; i < w.numSge && left > 0; i++) {
            int sl = w.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = (int) Math.min(sl - skip, left);
            Mr mr = w.sgeMr[i];
            long at = w.sgeAddr[i] - mr.address + skip;
            if (intoWqe) {
                MemorySegment.copy(other, otherOff, mr.segment, at, n);
            } else {
                MemorySegment.copy(mr.segment, at, other, otherOff, n);
            }
            otherOff += n;
            left -= n;
            skip = 0;
        }
    }
}

package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Counters;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.core.RecvWqe;
import io.jrdma.engine.core.RegionViews;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.core.Wqe;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.iwarp.AtomicRequest;
import io.jrdma.wire.iwarp.AtomicResponse;
import io.jrdma.wire.iwarp.Crc32c;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.ImmediateData;
import io.jrdma.wire.iwarp.IwarpError;
import io.jrdma.wire.iwarp.Rdmap;
import io.jrdma.wire.iwarp.ReadRequest;
import io.jrdma.wire.iwarp.Terminate;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import static io.jrdma.engine.iwarp.IwarpEngine.*;

/**
 * The receiver of the iWARP transport (siw's {@code siw_qp_rx.c}): reassembles FPDUs from a QP's
 * TCP byte stream, checks MPA CRC, DDP and RDMAP headers, places tagged (WRITE, READ Response) and
 * untagged (SEND, READ Request, atomics, TERMINATE) messages after checking every access with
 * {@link Mr#permits}, directly into the target when zero-copy receive is on, and completes
 * receives. It answers READ/atomic requests by queueing them for the {@link IwarpTransmitter} and
 * reports protocol errors with a TERMINATE through it. Engine thread only; allocates nothing.
 */
final class IwarpReceiver {
    private final IwarpEngine iwarp;
    private final Engine engine;
    private final Counters counters;
    private final Crc32c crc32c = new Crc32c();
    private final MemorySegment scratch = Arena.ofAuto().allocate(8, 8);
    IwarpTransmitter tx;

    IwarpReceiver(IwarpEngine iwarp) {
        this.iwarp = iwarp;
        this.engine = iwarp.engine;
        this.counters = iwarp.engine.counters;
    }

    int read(IwarpQp qp, IwarpStream s) {
        if (s.dp) {
            return readDirect(qp, s);
        }
        int n;
        try {
            // large FPDUs and direct placement: read little beyond the next header, so that its payload can go
            // straight to its target. A copying receive always reads as much as the buffer takes (a 1 KiB read
            // after every buffer that ended on an FPDU boundary was one system call more each time)
            int limit = iwarp.zeroCopyRx && s.rxLarge && s.rxStart == s.rxEnd
                    ? Math.min(s.rxEnd + RX_PEEK, s.rx.capacity()) : s.rx.capacity();
            s.rx.limit(limit).position(s.rxEnd);
            n = s.channel.read(s.rx);
        } catch (IOException e) {
            n = -1;
        }
        if (n < 0) {
            // the complete FPDUs already buffered come first (more than a cycle's budget of them: the end is seen
            // again next cycle, the channel answering -1 again); only a partial FPDU left is a truncated one
            int fpdus = process(qp, s);
            if (fpdus < RX_FPDU_BUDGET || s.rxStopped) {
                streamEnded(qp, s);
            }
            return 1 + fpdus;
        }
        if (n == 0 && s.rxStart == s.rxEnd) {
            return 0;
        }
        s.rxEnd += n;
        return n + process(qp, s);
    }

    /** Processes the complete FPDUs in the stream's buffer; starts direct placement of a large partial one. */
    private int process(IwarpQp qp, IwarpStream s) {
        int fpdus = 0;
        while (!s.rxStopped && fpdus < RX_FPDU_BUDGET) {
            int avail = s.rxEnd - s.rxStart;
            int total = Fpdu.scan(s.rxSeg, s.rxStart, avail, RX_MAX_ULPDU);
            if (total < 0) {
                IwarpError e = IwarpError.fromResult(total);
                counters.increment(Counter.RCVD_MALFORMED);
                tx.terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
                break;
            }
            if (total == 0) {
                if (iwarp.zeroCopyRx && startDirect(qp, s)) {
                    fpdus++;
                }
                break;
            }
            counters.increment(Counter.RCVD_PKTS);
            counters.add(Counter.RCVD_BYTES, total);
            counters.increment(qp.stats, QpCounter.RCVD_PKTS);
            counters.add(qp.stats, QpCounter.RCVD_BYTES, total);
            s.rxLarge = total > ZC_RX_MIN;
            onFpdu(qp, s, s.rxStart, total);
            s.rxStart += total;
            fpdus++;
        }
        if (s.rxStart == s.rxEnd) {
            s.rxStart = 0;
            s.rxEnd = 0;
        } else if (s.rx.capacity() - s.rxEnd < Fpdu.length(RX_MAX_ULPDU)) {
            int keep = s.rxEnd - s.rxStart;
            MemorySegment.copy(s.rxSeg, s.rxStart, s.rxSeg, 0, keep);
            s.rxStart = 0;
            s.rxEnd = keep;
        }
        return fpdus;
    }

    // ------------------------------------------------------------------ direct placement (zero copy, siw_rx_data)

    /**
     * The FPDU at the head of the stream's buffer is incomplete and large: if it is a WRITE, a READ
     * Response or a plain SEND that passes every check the buffered path would make, its payload
     * bytes already here are placed, the CRC is started over length field, header and those bytes,
     * and the rest of the payload will be read straight into the target ({@link #readDirect}).
     * Anything else (a failing check included) waits in the buffer, as before, to be handled whole.
     *
     * @return true if direct placement started (the buffer is then empty)
     */
    private boolean startDirect(IwarpQp qp, IwarpStream s) {
        MemorySegment seg = s.rxSeg;
        int off = s.rxStart;
        int avail = s.rxEnd - off;
        int ddp = off + Fpdu.ULPDU_OFFSET;
        if (s.rxStopped || avail < Fpdu.ULPDU_OFFSET + Ddp.UNTAGGED_HEADER_LENGTH) {
            return false;
        }
        int ulen = Fpdu.ulpduLength(seg, off);
        int hdr = Ddp.tagged(seg, ddp) ? Ddp.TAGGED_HEADER_LENGTH : Ddp.UNTAGGED_HEADER_LENGTH;
        int len = ulen - hdr;
        int here = avail - Fpdu.ULPDU_OFFSET - hdr;
        if (len - here < ZC_RX_MIN || Rdmap.check(seg, ddp, ulen) != hdr) {
            return false;
        }
        QpState st = qp.state;
        if (st != QpState.RTS && st != QpState.SQD) {
            return false;
        }
        int opcode = Rdmap.opcode(seg, ddp);
        int payload = ddp + hdr;
        switch (opcode) {
            case Rdmap.WRITE -> {
                long to = Ddp.taggedOffset(seg, ddp);
                Mr mr = engine.context.keys.lookup(Ddp.stag(seg, ddp));
                if (taggedError(mr, qp, Access.REMOTE_WRITE, to, len) >= 0 || RegionViews.of(mr) == null) {
                    return false;
                }
                MemorySegment.copy(seg, payload, mr.segment, to - mr.address, here);
                s.dpStag = mr.key;
                s.dpVa = to;
            }
            case Rdmap.READ_RESPONSE -> {
                Wqe w = orqHead(qp, s);
                long o = s.readRespOffset;
                boolean last = Ddp.last(seg, ddp);
                if (w == null || w.opcode != WrOpcode.RDMA_READ || Ddp.stag(seg, ddp) != sinkStag(w)
                        || Ddp.taggedOffset(seg, ddp) != sinkTo(w) + o || o + len > w.length
                        || (last && o + len != w.length)
                        || !Sgl.covers(engine.context.keys, qp, w, o, len) || !viewable(w.sgeMr, w.numSge)
                        || !Sgl.scatter(engine.context.keys, qp, w, o, seg, payload, here)) {
                    return false; // a sink region gone since validation: onReadResponse fails the READ
                }
                s.dpWqe = w;
            }
            case Rdmap.SEND, Rdmap.SEND_SE -> {
                if (Ddp.msn(seg, ddp) != s.rxMsnSend
                        || Ddp.messageOffset(seg, ddp) != (s.recv == null ? 0 : s.recvPlaced)) {
                    return false;
                }
                RecvWqe r = s.recv;
                if (r == null) {
                    r = qp.peekRecv(); // a look: taken below only if the segment goes direct
                    if (r == null) {
                        return false;
                    }
                }
                long placed = s.recv == null ? 0 : s.recvPlaced;
                if (placed + len > r.capacity || !recvWritable(qp, r, placed, len)) {
                    return false;
                }
                if (s.recv == null) {
                    r = qp.takeRecv(); // the one looked at (from an SRQ: its copy)
                    s.recv = r;
                    s.recvPlaced = 0;
                }
                Sgl.scatter(engine.context.keys, qp, r, placed, seg, payload, here);
            }
            default -> {
                return false;
            }
        }
        if (s.crc) {
            s.dpCrc.reset();
            s.rx.limit(payload + here).position(off);
            s.dpCrc.update(s.rx);
        }
        s.dp = true;
        s.rxLarge = true;
        s.dpOpcode = opcode;
        s.dpLast = Ddp.last(seg, ddp);
        s.dpLength = len;
        s.dpPlaced = here;
        s.dpTrailer = Fpdu.padLength(ulen) + Fpdu.CRC_LENGTH;
        s.dpFpduLength = Fpdu.crcOffset(ulen) + Fpdu.CRC_LENGTH;
        s.rxStart = 0;
        s.rxEnd = 0;
        return true;
    }

    /** @return true if every region of the list can have views (zero copy needs them) */
    private static boolean viewable(Mr[] mrs, int n) {
        for (int i = 0; i < n; i++) {
            if (mrs[i] != null && RegionViews.of(mrs[i]) == null) {
                return false;
            }
        }
        return true;
    }

    /** The checks {@link Sgl#scatter} makes, without copying: bytes {@code [off, off + len)} of the receive's list may be written. */
    private boolean recvWritable(IwarpQp qp, RecvWqe r, long off, long len) {
        long skip = off;
        long left = len;
        for (int i = 0; i < r.numSge && left > 0; i++) {
            int sl = r.sgeLength[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            long n = Math.min(sl - skip, left);
            Mr mr = engine.context.keys.lookupLocal(r.sgeLkey[i]);
            if (mr == null || !mr.permits(qp.recvPd, Access.LOCAL_WRITE, r.sgeAddr[i] + skip, n)
                    || RegionViews.of(mr) == null) {
                return false;
            }
            left -= n;
            skip = 0;
        }
        return left == 0;
    }

    /**
     * Reads the payload of the FPDU being placed directly: the next piece of its target (one SGE's
     * worth at most) straight from the socket, with the bytes after the payload (the FPDU's pad and
     * CRC, the next FPDU's header) into the stream's buffer in the same system call when the piece is
     * the last and the stream has a descriptor ({@code readv}; else the next {@code read} brings them);
     * then the CRC and the completion, as {@link #onFpdu} would have done.
     */
    private int readDirect(IwarpQp qp, IwarpStream s) {
        int left = s.dpLength - s.dpPlaced;
        int n;
        int got = 0;
        if (left == 0) { // the payload is in: its trailer, and a peek at the next FPDU, go to the buffer
            try {
                s.rx.limit(Math.min(s.rxEnd + RX_PEEK, s.rx.capacity())).position(s.rxEnd);
                n = s.channel.read(s.rx);
            } catch (IOException e) {
                n = -1;
            }
        } else {
            long at = s.dpPlaced;
            Mr mr;
            long va;
            long piece;
            // each piece's target is checked again, as the buffered path checks each FPDU's: between two reads the
            // application may have invalidated its key or registered it onto other memory (LOCAL_INV, REG_MR)
            switch (s.dpOpcode) {
                case Rdmap.WRITE -> {
                    va = s.dpVa + at;
                    piece = left;
                    mr = engine.context.keys.lookup(s.dpStag);
                    int code = taggedError(mr, qp, Access.REMOTE_WRITE, va, piece);
                    if (code >= 0 || RegionViews.of(mr) == null) {
                        s.dp = false;
                        refused(mr, qp, Access.REMOTE_WRITE, va, piece);
                        tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED,
                                code >= 0 ? code : Terminate.DDP_TAGGED_INVALID_STAG, -1, false);
                        return 1;
                    }
                }
                case Rdmap.READ_RESPONSE -> {
                    Wqe w = s.dpWqe;
                    int i = sgeAt(w.sgeLength, w.numSge, s.readRespOffset + at);
                    long skip = sgeSkip;
                    va = w.sgeAddr[i] + skip;
                    piece = Math.min(left, w.sgeLength[i] - skip);
                    mr = Sgl.region(engine.context.keys, qp, w, i, va, piece);
                    if (mr == null || RegionViews.of(mr) == null) {
                        s.dp = false;
                        s.dpWqe = null;
                        sinkGone(qp, s, w, -1);
                        return 1;
                    }
                }
                default -> {
                    RecvWqe r = s.recv;
                    int i = sgeAt(r.sgeLength, r.numSge, s.recvPlaced + at);
                    va = r.sgeAddr[i] + sgeSkip;
                    piece = Math.min(left, r.sgeLength[i] - sgeSkip);
                    mr = engine.context.keys.lookupLocal(r.sgeLkey[i]);
                    if (mr == null || !mr.permits(qp.recvPd, Access.LOCAL_WRITE, va, piece) || RegionViews.of(mr) == null) {
                        s.dp = false;
                        completeRecv(qp, s, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                        tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_CATASTROPHIC, 0, -1, false);
                        return 1;
                    }
                }
            }
            RegionViews rv = RegionViews.of(mr); // of the mapping just checked
            ByteBuffer view = rv.acquireForRead(va, (int) piece);
            int start = view.position();
            if (s.fd >= 0) {
                // one readv: the rest of the piece into the region and, when it ends the payload, the trailer,
                // the next FPDU's header and a little more into the buffer (RX_PEEK: its payload goes direct too)
                NativeTcp.Vec v = s.rxVec;
                v.clear();
                v.add(rv.base() + start, piece, rv.segment()); // kept alive during the call
                if (piece == left) {
                    v.add(s.rxSeg.address() + s.rxEnd, Math.min(s.rx.capacity() - s.rxEnd, RX_PEEK), null);
                }
                long r = v.readv(s.fd);
                iwarp.vectorReads++;
                n = r > 0 ? (int) r : r == 0 ? -1 : 0; // 0: the peer closed; -errno: EAGAIN/EINTR, or a reset
                if (r < 0 && r != -NativeTcp.EAGAIN && r != -NativeTcp.EINTR) {
                    n = -1;
                }
                if (n > 0) {
                    view.position(start + (int) Math.min(n, piece));
                }
            } else {
                try {
                    // the payload only: a scattering read (view + buffer) would allocate, as NIO's gathering
                    // write; the trailer and the next header come with the next read into the buffer
                    n = s.channel.read(view);
                } catch (IOException e) {
                    n = -1;
                }
            }
            if (n > 0) {
                got = view.position() - start;
                if (s.crc && got > 0) {
                    view.limit(start + got).position(start);
                    s.dpCrc.update(view);
                }
                s.dpPlaced += got;
            }
        }
        if (n < 0) {
            streamEnded(qp, s);
            return 1;
        }
        if (n == 0) {
            return 0;
        }
        s.rxEnd += n - got;
        if (s.dpPlaced < s.dpLength || s.rxEnd - s.rxStart < s.dpTrailer) {
            return n;
        }
        finishDirect(qp, s);
        return n + 1 + process(qp, s);
    }

    /** {@link #sgeAt}'s second result: the offset inside the SGE found (engine thread only). */
    private long sgeSkip;

    /** @return the SGE holding byte {@code off} of a list (and its offset there in {@link #sgeSkip}) */
    private int sgeAt(int[] lengths, int n, long off) {
        long skip = off;
        for (int i = 0; i < n; i++) {
            if (skip < lengths[i]) {
                sgeSkip = skip;
                return i;
            }
            skip -= lengths[i];
        }
        throw new IllegalStateException("offset " + off + " beyond the scatter list"); // checked before placement
    }

    /** The payload of a directly placed FPDU is in and its trailer at the head of the buffer: CRC, then completion. */
    private void finishDirect(IwarpQp qp, IwarpStream s) {
        s.dp = false;
        int pad = s.dpTrailer - Fpdu.CRC_LENGTH;
        if (s.crc) {
            if (pad > 0) { // the pad bytes as received (siw may send stale ones; the CRC covers what was sent)
                s.rx.limit(s.rxStart + pad).position(s.rxStart);
                s.dpCrc.update(s.rx);
            }
            if (Crc32c.read(s.rxSeg, s.rxStart + pad) != (int) s.dpCrc.getValue()) {
                counters.increment(Counter.RCVD_MPA_CRC_ERR);
                IwarpError e = IwarpError.CRC_MISMATCH;
                tx.terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
                return;
            }
        }
        s.rxStart += s.dpTrailer;
        counters.increment(Counter.RCVD_PKTS);
        counters.add(Counter.RCVD_BYTES, s.dpFpduLength);
        counters.increment(qp.stats, QpCounter.RCVD_PKTS);
        counters.add(qp.stats, QpCounter.RCVD_BYTES, s.dpFpduLength);
        iwarp.zeroCopyPlaced++;
        int len = s.dpLength;
        switch (s.dpOpcode) {
            case Rdmap.WRITE -> writePlaced(s, len, s.dpLast);
            case Rdmap.READ_RESPONSE -> {
                Wqe w = s.dpWqe;
                s.dpWqe = null;
                readResponsePlaced(qp, s, w, len, s.dpLast);
            }
            default -> sendPlaced(qp, s, -1, -1, s.dpOpcode, 0, false, len, s.dpLast); // a plain SEND
        }
    }

    /**
     * The peer closed or reset the connection, and the complete FPDUs it sent before are processed: a partial FPDU
     * left behind is a truncated one.
     */
    private void streamEnded(IwarpQp qp, IwarpStream s) {
        if ((s.rxEnd != s.rxStart || s.dp) && !s.rxStopped) {
            IwarpError e = IwarpError.FPDU_TRUNCATED;
            counters.increment(Counter.RCVD_MALFORMED);
            tx.terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
            return;
        }
        s.rxStopped = true;
        if (qp.state != QpState.ERROR && qp.state != QpState.RESET) {
            engine.enterError(qp); // siw: the LLP went away, the QP goes to ERROR and flushes
        }
    }

    private void onFpdu(IwarpQp qp, IwarpStream s, int off, int total) {
        MemorySegment seg = s.rxSeg;
        int ulen = Fpdu.ulpduLength(seg, off);
        if (s.crc) {
            int at = Fpdu.crcOffset(ulen);
            if (Crc32c.read(seg, off + at) != crc32c.compute(s.rx, off, at)) {
                counters.increment(Counter.RCVD_MPA_CRC_ERR);
                IwarpError e = IwarpError.CRC_MISMATCH;
                tx.terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(), -1, false);
                return;
            }
        }
        int ddp = off + Fpdu.ULPDU_OFFSET;
        int hdr = Rdmap.check(seg, ddp, ulen);
        if (hdr < 0) {
            IwarpError e = IwarpError.fromResult(hdr);
            counters.increment(Counter.RCVD_MALFORMED);
            tx.terminate(qp, s, e.terminateLayer(), e.terminateErrorType(), e.terminateErrorCode(),
                    ulen >= Ddp.UNTAGGED_HEADER_LENGTH || (ulen >= Ddp.TAGGED_HEADER_LENGTH && Ddp.tagged(seg, ddp))
                            ? off : -1, false);
            return;
        }
        QpState st = qp.state;
        if (st != QpState.RTS && st != QpState.SQD) {
            counters.increment(Counter.RCVD_BAD_STATE);
            return;
        }
        int opcode = Rdmap.opcode(seg, ddp);
        int payload = off + Fpdu.ULPDU_OFFSET + hdr;
        int len = ulen - hdr;
        boolean last = Ddp.last(seg, ddp);
        if (opcode >= Rdmap.IMMEDIATE_DATA && !s.extensions) {
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false); // RFC 7306 was not negotiated
            return;
        }
        switch (opcode) {
            case Rdmap.WRITE -> onWrite(qp, s, off, ddp, payload, len, last);
            case Rdmap.READ_REQUEST -> onReadRequest(qp, s, off, ddp, last, len);
            case Rdmap.READ_RESPONSE -> onReadResponse(qp, s, off, ddp, payload, len, last);
            case Rdmap.SEND, Rdmap.SEND_SE, Rdmap.SEND_INVALIDATE, Rdmap.SEND_SE_INVALIDATE,
                 Rdmap.IMMEDIATE_DATA, Rdmap.IMMEDIATE_DATA_SE -> onSend(qp, s, off, ddp, opcode, payload, len, last);
            case Rdmap.TERMINATE -> onTerminate(qp, s, ddp);
            case Rdmap.ATOMIC_REQUEST -> onAtomicRequest(qp, s, off, ddp, len);
            case Rdmap.ATOMIC_RESPONSE -> onAtomicResponse(qp, s, off, ddp);
            default -> tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
        }
    }

    /** RFC 5041 §7: a tagged buffer check failed; the code for it (siw's siw_tagged_error), or -1 if it passed. */
    /** A remote access refused (error path): counted by its reason, as soft-RoCE's responder counts them. */
    private void refused(Mr mr, IwarpQp qp, int needed, long va, long len) {
        counters.increment((qp.accessFlags & needed) != needed ? Counter.RCVD_NO_ACCESS
                : Mr.refusal(mr, qp, needed, va, len));
    }

    private static int taggedError(Mr mr, IwarpQp qp, int needed, long va, long len) {
        if (mr == null || mr.invalidated) { // as siw tests stag_valid first: an invalidated key keeps its access bits
            return Terminate.DDP_TAGGED_INVALID_STAG;
        }
        if (mr.pd != qp.pd) {
            return Terminate.DDP_TAGGED_STAG_NOT_ASSOCIATED;
        }
        if ((mr.access & needed) != needed || (qp.accessFlags & needed) != needed) {
            return Terminate.DDP_TAGGED_INVALID_STAG; // RFC 5041 has no access-rights code; siw reports an invalid STag
        }
        if (!mr.permits(qp.pd, needed, va, len)) {
            return Terminate.DDP_TAGGED_BASE_BOUNDS;
        }
        return -1;
    }

    private void onWrite(IwarpQp qp, IwarpStream s, int off, int ddp, int payload, int len, boolean last) {
        if (len > 0) {
            int stag = Ddp.stag(s.rxSeg, ddp);
            long to = Ddp.taggedOffset(s.rxSeg, ddp);
            Mr mr = engine.context.keys.lookup(stag);
            int code = taggedError(mr, qp, Access.REMOTE_WRITE, to, len);
            if (code >= 0) {
                refused(mr, qp, Access.REMOTE_WRITE, to, len);
                tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, code, off, false);
                return;
            }
            MemorySegment.copy(s.rxSeg, payload, mr.segment, to - mr.address, len);
        }
        writePlaced(s, len, last);
    }

    private static void writePlaced(IwarpStream s, int len, boolean last) {
        s.writeBytes += len;
        if (last) {
            s.lastWriteLength = s.writeBytes;
            s.writeBytes = 0;
        }
    }

    private void onReadRequest(IwarpQp qp, IwarpStream s, int off, int ddp, boolean last, int len) {
        MemorySegment seg = s.rxSeg;
        if (Ddp.msn(seg, ddp) != s.rxMsnRead) {
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, off, false);
            return;
        }
        if (Ddp.messageOffset(seg, ddp) != 0 || !last || len != 0) {
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MO, off, false);
            return;
        }
        int rr = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        long size = Integer.toUnsignedLong(ReadRequest.messageSize(seg, rr));
        long srcTo = ReadRequest.sourceTaggedOffset(seg, rr);
        Mr mr = null;
        if (size > 0) {
            mr = engine.context.keys.lookup(ReadRequest.sourceStag(seg, rr));
            int code = mr == null || mr.invalidated ? Terminate.RDMAP_INVALID_STAG
                    : mr.pd != qp.pd ? Terminate.RDMAP_STAG_NOT_ASSOCIATED
                    : (mr.access & Access.REMOTE_READ) == 0 || (qp.accessFlags & Access.REMOTE_READ) == 0
                            ? Terminate.RDMAP_ACCESS_RIGHTS
                    : !mr.permits(qp.pd, Access.REMOTE_READ, srcTo, size) ? Terminate.RDMAP_BASE_BOUNDS : -1;
            if (code >= 0) { // RFC 5040 §7.1: a READ's source is checked by RDMAP, reported with the request
                refused(mr, qp, Access.REMOTE_READ, srcTo, size);
                tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, code, off, true);
                return;
            }
        }
        if (s.irqCount == s.irqCapacity) { // more READs than our IRD: siw terminates the stream
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_CATASTROPHIC_STREAM, off, true);
            return;
        }
        s.rxMsnRead++;
        int i = (s.irqHead + s.irqCount) % s.irqCapacity;
        s.irqAtomic[i] = false;
        s.irqMr[i] = mr;
        s.irqStag[i] = ReadRequest.sourceStag(seg, rr);
        s.irqVa[i] = srcTo;
        s.irqLength[i] = size;
        s.irqSent[i] = 0;
        s.irqSinkStag[i] = ReadRequest.sinkStag(seg, rr);
        s.irqSinkTo[i] = ReadRequest.sinkTaggedOffset(seg, rr);
        s.irqCount++;
        engine.schedule(qp);
    }

    private void onAtomicRequest(IwarpQp qp, IwarpStream s, int off, int ddp, int len) {
        MemorySegment seg = s.rxSeg;
        if (Ddp.msn(seg, ddp) != s.rxMsnRead || len != 0) {
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, off, false);
            return;
        }
        int a = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        long va = AtomicRequest.remoteTaggedOffset(seg, a);
        Mr mr = engine.context.keys.lookup(AtomicRequest.remoteStag(seg, a));
        int code = mr == null || mr.invalidated ? Terminate.RDMAP_INVALID_STAG
                : mr.pd != qp.pd ? Terminate.RDMAP_STAG_NOT_ASSOCIATED
                : (mr.access & Access.REMOTE_ATOMIC) == 0 || (qp.accessFlags & Access.REMOTE_ATOMIC) == 0
                        ? Terminate.RDMAP_ACCESS_RIGHTS
                : (va & 7) != 0 || !mr.permits(qp.pd, Access.REMOTE_ATOMIC, va, 8) ? Terminate.RDMAP_BASE_BOUNDS : -1;
        int op = AtomicRequest.atomicOpcode(seg, a);
        if (code < 0 && op != AtomicRequest.FETCH_ADD && op != AtomicRequest.COMPARE_SWAP) {
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
            return;
        }
        if (code >= 0) {
            refused(mr, qp, Access.REMOTE_ATOMIC, va, 8);
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, code, off, false);
            return;
        }
        if (s.irqCount == s.irqCapacity) {
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_CATASTROPHIC_STREAM, off, false);
            return;
        }
        long at = va - mr.address;
        long original = op == AtomicRequest.COMPARE_SWAP
                ? (long) ATOMIC_LONG.compareAndExchange(mr.segment, at, AtomicRequest.compareData(seg, a),
                        AtomicRequest.addOrSwapData(seg, a))
                : (long) ATOMIC_LONG.getAndAdd(mr.segment, at, AtomicRequest.addOrSwapData(seg, a));
        s.rxMsnRead++;
        int i = (s.irqHead + s.irqCount) % s.irqCapacity;
        s.irqAtomic[i] = true;
        s.irqMr[i] = null;
        s.irqOrig[i] = original;
        s.irqRequestId[i] = AtomicRequest.requestId(seg, a);
        s.irqCount++;
        engine.schedule(qp);
    }

    /** @return the requester's oldest READ/atomic WQE waiting for its response, or null (the ORQ head) */
    private static Wqe orqHead(IwarpQp qp, IwarpStream s) {
        long i = Math.max(s.orqIndex, qp.sqConsumer);
        for (; i < qp.reqIndex; i++) {
            Wqe w = qp.sq[(int) (i & qp.sqMask)];
            if (w.isReadOrAtomic() && w.started && !w.responded && w.localError < 0) {
                if (s.orqIndex != i) {
                    s.orqIndex = i;
                    s.readRespOffset = 0;
                }
                return w;
            }
        }
        return null;
    }

    private void onReadResponse(IwarpQp qp, IwarpStream s, int off, int ddp, int payload, int len, boolean last) {
        Wqe w = orqHead(qp, s);
        if (w == null || w.opcode != WrOpcode.RDMA_READ) {
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
            return;
        }
        int stag = Ddp.stag(s.rxSeg, ddp);
        long to = Ddp.taggedOffset(s.rxSeg, ddp);
        long o = s.readRespOffset;
        // as siw: the response must match the request exactly (sink STag, next offset, length)
        int code = stag != sinkStag(w) ? Terminate.DDP_TAGGED_INVALID_STAG
                : to != sinkTo(w) + o || o + len > w.length || (last && o + len != w.length)
                        ? Terminate.DDP_TAGGED_BASE_BOUNDS : -1;
        if (code >= 0) {
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, code, off, false);
            return;
        }
        if (len > 0 && !Sgl.scatter(engine.context.keys, qp, w, o, s.rxSeg, payload, len)) {
            sinkGone(qp, s, w, off);
            return;
        }
        readResponsePlaced(qp, s, w, len, last);
    }

    private void readResponsePlaced(IwarpQp qp, IwarpStream s, Wqe w, int len, boolean last) {
        s.readRespOffset += len;
        if (last) {
            respond(qp, s, w);
        }
    }

    private void onAtomicResponse(IwarpQp qp, IwarpStream s, int off, int ddp) {
        Wqe w = orqHead(qp, s);
        int a = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        if (w == null || !w.opcode.isAtomic() || Ddp.msn(s.rxSeg, ddp) != s.rxMsnAtomicResp
                || AtomicResponse.originalRequestId(s.rxSeg, a) != w.npkts) {
            tx.terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                    Terminate.RDMAP_UNEXPECTED_OPCODE, off, false);
            return;
        }
        s.rxMsnAtomicResp++;
        scratch.set(NATIVE_LONG, 0, AtomicResponse.originalValue(s.rxSeg, a)); // host order, as the responder's memory
        if (!Sgl.scatter(engine.context.keys, qp, w, 0, scratch, 0, 8)) {
            sinkGone(qp, s, w, off);
            return;
        }
        respond(qp, s, w);
    }

    /**
     * A READ Response or Atomic Response arrived for {@code w}, and the region it lands in is gone since validation
     * ({@link Sgl#region}: deregistered, invalidated, registered again elsewhere, its memory freed); nothing of it was
     * written there. As siw: the WQE completes with LOC_PROT_ERR, in order (everything before it has been answered or
     * taken by TCP, since the peer answered it), the QP enters ERROR, and the peer gets a TERMINATE (DDP tagged
     * buffer, invalid STag: the sink's).
     */
    private void sinkGone(IwarpQp qp, IwarpStream s, Wqe w, int off) {
        w.localError = WcStatus.LOC_PROT_ERR.ordinal();
        tx.retire(qp, s);
        tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_TAGGED, Terminate.DDP_TAGGED_INVALID_STAG, off,
                false);
    }

    private void respond(IwarpQp qp, IwarpStream s, Wqe w) {
        w.responded = true;
        qp.rdAtomicInFlight--;
        s.orqIndex = -1;
        s.readRespOffset = 0;
        tx.retire(qp, s);
        engine.schedule(qp); // ORD room: the requester may go on
    }

    static int sinkStag(Wqe w) {
        return w.numSge > 0 ? w.sgeLkey[0] : 0;
    }

    static long sinkTo(Wqe w) {
        return w.numSge > 0 ? w.sgeAddr[0] : 0;
    }

    private void onSend(IwarpQp qp, IwarpStream s, int off, int ddp, int opcode, int payload, int len, boolean last) {
        MemorySegment seg = s.rxSeg;
        if (Ddp.msn(seg, ddp) != s.rxMsnSend) {
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_INVALID_MSN_RANGE, off, false);
            return;
        }
        boolean imm = opcode == Rdmap.IMMEDIATE_DATA || opcode == Rdmap.IMMEDIATE_DATA_SE;
        long immValue = imm ? ImmediateData.value(seg, ddp + Ddp.UNTAGGED_HEADER_LENGTH) : 0;
        boolean afterWrite = imm && (immValue >>> 32) == IMM_AFTER_WRITE;
        if (Ddp.messageOffset(seg, ddp) != (s.recv == null ? 0 : s.recvPlaced) || (afterWrite && (len != 0 || !last))) {
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED, Terminate.DDP_UNTAGGED_INVALID_MO,
                    off, false);
            return;
        }
        if (s.recv == null) {
            RecvWqe taken = qp.takeRecv(); // the QP's own queue or its SRQ
            if (taken == null) {
                // iWARP has no RNR: a SEND without a posted receive ends the stream (siw: DDP, no buffer)
                tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                        Terminate.DDP_UNTAGGED_INVALID_MSN_NO_BUFFER, off, false);
                return;
            }
            s.recv = taken;
            s.recvPlaced = 0;
        }
        RecvWqe r = s.recv;
        if (s.recvPlaced + len > r.capacity) {
            completeRecv(qp, s, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0);
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_UNTAGGED,
                    Terminate.DDP_UNTAGGED_MESSAGE_TOO_LONG, off, false);
            return;
        }
        if (len > 0 && !Sgl.scatter(engine.context.keys, qp, r, s.recvPlaced, seg, payload, len)) {
            completeRecv(qp, s, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
            tx.terminate(qp, s, Terminate.LAYER_DDP, Terminate.DDP_ETYPE_CATASTROPHIC, 0, off, false);
            return;
        }
        sendPlaced(qp, s, off, ddp, opcode, immValue, afterWrite, len, last);
    }

    /** A SEND segment is placed: counts it and, when it was the last, completes the receive. */
    private void sendPlaced(IwarpQp qp, IwarpStream s, int off, int ddp, int opcode, long immValue, boolean afterWrite,
            int len, boolean last) {
        s.recvPlaced += len;
        if (!last) {
            return;
        }
        int flags = Rdmap.solicitedEvent(opcode) ? WorkCompletion.SOLICITED : 0;
        if (opcode == Rdmap.SEND_INVALIDATE || opcode == Rdmap.SEND_SE_INVALIDATE) {
            // RFC 5040 §6.10: invalidate the STag at the data sink once the message is placed. It must be
            // a region of this QP's PD registered with REMOTE_INVALIDATE (Mr.invalidateFor).
            int stag = Rdmap.invalidateStag(s.rxSeg, ddp);
            Mr target = engine.context.keys.lookup(stag);
            if (target == null || !target.invalidateFor(qp.pd)) {
                completeRecv(qp, s, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0);
                tx.terminate(qp, s, Terminate.LAYER_RDMAP, target == null
                                ? Terminate.RDMAP_ETYPE_REMOTE_PROTECTION : Terminate.RDMAP_ETYPE_REMOTE_OPERATION,
                        target == null ? Terminate.RDMAP_INVALID_STAG : Terminate.RDMAP_STAG_CANNOT_INVALIDATE, off,
                        false);
                return;
            }
            immValue = Integer.toUnsignedLong(stag); // ibv_wc.invalidated_rkey shares the immediate's place
            flags |= WorkCompletion.WITH_INV;
        }
        s.rxMsnSend++;
        if (afterWrite) {
            completeRecv(qp, s, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) s.lastWriteLength, (int) immValue,
                    flags | WorkCompletion.WITH_IMM);
        } else {
            completeRecv(qp, s, WcStatus.SUCCESS, WcOpcode.RECV, (int) s.recvPlaced, (int) immValue,
                    flags | (opcode == Rdmap.IMMEDIATE_DATA || opcode == Rdmap.IMMEDIATE_DATA_SE
                            ? WorkCompletion.WITH_IMM : 0));
        }
    }

    private void completeRecv(IwarpQp qp, IwarpStream s, WcStatus st, WcOpcode op, int len, int imm, int flags) {
        long wrId = s.recv.wrId;
        s.recv = null;
        s.recvPlaced = 0;
        // the slot is free before the completion is visible: a poster that reposts on seeing it finds room
        qp.recvDone();
        qp.recvCq.push(wrId, st, op, len, imm, flags, qp.qpn, qp.destQpn);
        counters.increment(Counter.RDMA_RECVS);
    }

    /** A TERMINATE from the peer: the oldest request still open fails with the matching status, the QP enters ERROR. */
    private void onTerminate(IwarpQp qp, IwarpStream s, int ddp) {
        counters.increment(Counter.RCVD_TERMINATES);
        int t = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        int layer = Terminate.layer(s.rxSeg, t);
        int etype = Terminate.errorType(s.rxSeg, t);
        WcStatus st = layer == Terminate.LAYER_RDMAP && etype == Terminate.RDMAP_ETYPE_REMOTE_PROTECTION
                || layer == Terminate.LAYER_DDP && etype == Terminate.DDP_ETYPE_TAGGED ? WcStatus.REM_ACCESS_ERR
                : layer == Terminate.LAYER_DDP && etype == Terminate.DDP_ETYPE_UNTAGGED ? WcStatus.REM_INV_REQ_ERR
                : WcStatus.REM_OP_ERR;
        s.rxStopped = true;
        s.rxMsnTerm++;
        if (qp.sqConsumer != qp.reqIndex) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            if (w.localError < 0 && (w.isReadOrAtomic() ? !w.responded : !IwarpTransmitter.sent(qp, s, qp.sqConsumer))) {
                w.localError = st.ordinal(); // completed in order by retire, then the QP enters ERROR
            }
        }
        tx.retire(qp, s);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        }
    }
}

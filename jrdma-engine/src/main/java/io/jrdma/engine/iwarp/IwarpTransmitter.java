package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Counters;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.LocalOps;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.core.RegionViews;
import io.jrdma.engine.core.Sgl;
import io.jrdma.engine.core.Wqe;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AsyncEvent;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.iwarp.AtomicRequest;
import io.jrdma.wire.iwarp.AtomicResponse;
import io.jrdma.wire.iwarp.Crc32c;
import io.jrdma.wire.iwarp.Ddp;
import io.jrdma.wire.iwarp.Fpdu;
import io.jrdma.wire.iwarp.ImmediateData;
import io.jrdma.wire.iwarp.Rdmap;
import io.jrdma.wire.iwarp.ReadRequest;
import io.jrdma.wire.iwarp.Terminate;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

import static io.jrdma.engine.iwarp.IwarpEngine.*;

/**
 * The transmitter of the iWARP transport (siw's {@code siw_qp_tx.c}): turns READ/atomic responses
 * and send-queue WQEs into DDP segments and FPDUs sized to the MSS, from the stream's buffer or
 * straight from the regions (zero-copy transmit, one writev per flush), retires what TCP has
 * taken, and sends TERMINATE messages. Engine thread only; allocates nothing.
 */
final class IwarpTransmitter {
    /**
     * While the send queue has something to send, at most this many IRQ FPDUs (READ/atomic responses) in a row before
     * it sends its next message (siw's {@code SIW_IRQ_MAXBURST_SQ_ACTIVE}): a peer keeping READs outstanding does not
     * starve it.
     */
    static final int IRQ_MAXBURST_SQ_ACTIVE = 4;
    private final IwarpEngine iwarp;
    private final Engine engine;
    private final Counters counters;
    private final Crc32c crc32c = new Crc32c();
    private final CRC32C txCrc = new CRC32C();

    IwarpTransmitter(IwarpEngine iwarp) {
        this.iwarp = iwarp;
        this.engine = iwarp.engine;
        this.counters = iwarp.engine.counters;
    }

    /**
     * Queues a TERMINATE (RFC 5040 §4.8) reporting the FPDU at {@code failedFpdu} (its DDP header, and
     * the READ Request header when {@code withRdmapHeader}; -1 = none) and moves the QP to ERROR: the
     * receiver stops, the TERMINATE is written, then the stream is closed.
     */
    void terminate(IwarpQp qp, IwarpStream s, int layer, int etype, int code, int failedFpdu, boolean withRdmapHeader) {
        s.rxStopped = true;
        if (s.terminateQueued || s.closed) {
            return;
        }
        s.terminateQueued = true;
        counters.increment(Counter.SENT_TERMINATES);
        MemorySegment tx = s.txSeg;
        int f = s.txEnd; // TX_RESERVE bytes are always free here
        int ddp = f + Fpdu.ULPDU_OFFSET;
        Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.TERMINATE), 0, Rdmap.QN_TERMINATE, s.txMsnTerm++, 0);
        int t = ddp + Ddp.UNTAGGED_HEADER_LENGTH;
        int ulen = Ddp.UNTAGGED_HEADER_LENGTH + Terminate.CONTROL_LENGTH;
        int hdrCtl = 0;
        if (failedFpdu >= 0) {
            MemorySegment rx = s.rxSeg;
            int fddp = failedFpdu + Fpdu.ULPDU_OFFSET;
            int ddpLen = Ddp.tagged(rx, fddp) ? Ddp.TAGGED_HEADER_LENGTH : Ddp.UNTAGGED_HEADER_LENGTH;
            boolean r = withRdmapHeader && !Ddp.tagged(rx, fddp);
            hdrCtl = Terminate.FLAG_M | Terminate.FLAG_D | (r ? Terminate.FLAG_R : 0);
            Terminate.segmentLength(tx, t, Fpdu.ulpduLength(rx, failedFpdu)); // RFC 5040: the DDP segment's length
            int copy = ddpLen + (r ? Terminate.RDMAP_HEADER_LENGTH : 0);
            MemorySegment.copy(rx, fddp, tx, t + Terminate.DDP_HEADER_OFFSET, copy);
            ulen += Terminate.DDP_HEADER_OFFSET - Terminate.CONTROL_LENGTH + copy;
        }
        Terminate.write(tx, t, layer, etype, code, hdrCtl);
        Fpdu.writeHeader(tx, f, ulen);
        queue(s, f, ulen); // a gather entry is always free for it (transmit leaves one)
        sent(qp, ulen);
        if (qp.state != QpState.ERROR) {
            // the QP itself learns why it stopped (IBA 11.6.3's affiliated errors, by the TERMINATE's layer and type)
            engine.context.events.raise(layer == Terminate.LAYER_RDMAP && etype == Terminate.RDMAP_ETYPE_REMOTE_PROTECTION
                    || layer == Terminate.LAYER_DDP && etype == Terminate.DDP_ETYPE_TAGGED ? AsyncEvent.Type.QP_ACCESS_ERR
                    : layer == Terminate.LAYER_DDP && etype == Terminate.DDP_ETYPE_UNTAGGED ? AsyncEvent.Type.QP_REQ_ERR
                    : AsyncEvent.Type.QP_FATAL, qp);
            engine.enterError(qp);
        } else {
            engine.schedule(qp);
        }
    }

    // ------------------------------------------------------------------ transmitter (siw_qp_tx.c)

    /** Sends READ/atomic responses, then send-queue WQEs, as FPDUs; completes what TCP has taken. */
    int transmit(Qp q, int budget) {
        IwarpQp qp = (IwarpQp) q;
        IwarpStream s = qp.iw;
        QpState st = qp.state;
        if (s == null || s.closed || (st != QpState.RTS && st != QpState.SQD)) {
            return 0;
        }
        try {
            return transmit(qp, s, st, budget);
        } catch (IllegalStateException e) {
            // a region's memory was freed while a WQE or READ Response was being sent from it
            regionGone(qp, s, null);
            return 1;
        }
    }

    private int transmit(IwarpQp qp, IwarpStream s, QpState st, int budget) {
        int n = 0;
        boolean writable = flushTx(qp, s);
        boolean sqIdle = false; // the send queue had nothing to send in this call
        while (writable && n < budget) {
            // room for one more FPDU (copied: its length; zero-copy: three gather entries), a TERMINATE's kept apart
            if (IwarpStream.TX_BUFFER - IwarpStream.TX_RESERVE - s.txEnd < Fpdu.length(s.txMulpdu) + 64
                    || s.iovTail > IwarpStream.IOV - 4) {
                writable = flushTx(qp, s); // all of it gone: the buffer and the gather list start over
                if (!writable) {
                    break;
                }
            }
            // the IRQ and the send queue take turns only between messages: a message's FPDUs are never intersected by
            // another message's of the same kind (tagged or untagged), which siw's receiver refuses. The IRQ goes first,
            // but gives the send queue one message after IRQ_MAXBURST_SQ_ACTIVE FPDUs
            boolean sqMid = qp.reqOffset > 0;
            if (s.irqCount > 0 && !sqMid
                    && (!s.irqAtomic[s.irqHead] && s.irqSent[s.irqHead] > 0 || s.irqBurst < IRQ_MAXBURST_SQ_ACTIVE || sqIdle)) {
                if (!response(qp, s)) {
                    break;
                }
                s.irqBurst++;
            } else if (request(qp, s, st == QpState.SQD)) {
                s.irqBurst = 0;
            } else if (s.irqCount > 0 && !sqIdle) {
                sqIdle = true;
                continue;
            } else {
                break;
            }
            n++;
        }
        if (writable) {
            flushTx(qp, s);
        }
        retire(qp, s);
        return n;
    }

    /** Writes queued FPDUs to the socket. @return true when all of them went (the socket takes more) */
    boolean flushTx(IwarpQp qp, IwarpStream s) {
        if (!s.txPending()) {
            return true;
        }
        Mr gone = goneRegion(s);
        if (gone != null) {
            regionGone(qp, s, gone);
            return false;
        }
        try {
            if (s.fd >= 0 && s.iovTail - s.iovHead > 1) {
                return writev(qp, s);
            }
            // one entry (the copying path's FPDUs are one staged slice): SocketChannel's write, which
            // measured faster than writev for it. Without a descriptor, one write per entry: NIO's gathering
            // write allocates for every buffer that carries a memory session, which region views always do
            // (docs/iwarp-design.md, "Zero copy")
            ByteBuffer b;
            do {
                b = s.iov[s.iovHead];
                s.txTaken += s.channel.write(b);
            } while (!b.hasRemaining() && !s.taken());
        } catch (IOException e) {
            return writeFailed(qp, s);
        } catch (IllegalStateException e) { // a region's memory was freed after the check above
            regionGone(qp, s, goneRegion(s));
            return false;
        }
        if (s.taken()) {
            return true;
        }
        counters.increment(Counter.SEND_ERR); // the socket is full: the rest waits for the next cycle
        return false;
    }

    /**
     * The pending gather list in {@code writev} calls (as many entries as the iovec holds and
     * {@link NativeTcp#KEEP} regions), until all is written or the socket is full. A short count
     * leaves the entries' positions exactly where the socket stopped.
     */
    private boolean writev(IwarpQp qp, IwarpStream s) throws IOException {
        NativeTcp.Vec v = s.txVec;
        long txBase = s.txSeg.address();
        while (true) {
            v.clear();
            long want = 0;
            for (int i = s.iovHead; i < s.iovTail; i++) {
                ByteBuffer b = s.iov[i];
                RegionViews rv = s.iovViews[i];
                // a view's position is in the memory it was made of, which its region may no longer map (RegionViews)
                long at = rv == null ? txBase : rv.base();
                if (!v.add(at + b.position(), b.remaining(), rv == null ? null : rv.segment())) {
                    break;
                }
                want += b.remaining();
            }
            long n = v.writev(s.fd); // keeps the regions alive during the call (NativeTcp)
            iwarp.vectorWrites++;
            if (n < 0) {
                if (n == -NativeTcp.EINTR) {
                    continue;
                }
                if (n == -NativeTcp.EAGAIN) {
                    counters.increment(Counter.SEND_ERR); // the socket is full: the rest waits for the next cycle
                    return false;
                }
                return writeFailed(qp, s);
            }
            boolean all = n == want; // else a short count: the socket is full
            s.txTaken += n;
            for (int i = s.iovHead; n > 0; i++) {
                ByteBuffer b = s.iov[i];
                int k = (int) Math.min(n, b.remaining());
                b.position(b.position() + k);
                n -= k;
            }
            if (s.taken()) {
                return true;
            }
            if (!all) {
                counters.increment(Counter.SEND_ERR); // the rest waits for the next cycle
                return false;
            }
            // the vector was full (entries or regions to keep): the next call takes the rest
        }
    }

    /** The peer is gone (a write failed): nothing more will leave. */
    private boolean writeFailed(IwarpQp qp, IwarpStream s) {
        s.dropTx();
        s.rxStopped = true;
        iwarp.closeStream(s);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        }
        return false;
    }

    /**
     * @return a region a pending payload lies in that was deregistered, or whose payload's memory (the view's, which
     *         a fast registration since may have replaced in the region) was freed, or null
     */
    private static Mr goneRegion(IwarpStream s) {
        for (int i = s.iovHead; i < s.iovTail; i++) {
            RegionViews rv = s.iovViews[i];
            if (rv != null) {
                Mr mr = rv.mr();
                if (mr.isClosed() || !rv.segment().scope().isAlive()) {
                    return mr;
                }
            }
        }
        return null;
    }

    /**
     * A payload still to be written lies in a region that was deregistered or freed since its FPDU
     * was queued: its bytes are not read. The FPDU's header may be on the wire already, so the
     * stream cannot go on: what is pending is dropped and the connection closed; the WQE that named
     * the region completes with LOC_PROT_ERR, those before it (their last bytes may be among the
     * dropped ones) with WR_FLUSH_ERR, and the QP enters ERROR, which flushes the rest. A READ
     * Response from such a region (the peer's READ) just ends the stream.
     */
    private void regionGone(IwarpQp qp, IwarpStream s, Mr mr) {
        counters.increment(Counter.ENGINE_ERRORS);
        s.dropTx();
        s.rxStopped = true;
        iwarp.closeStream(s);
        long owner = -1;
        long end = Math.min(qp.reqIndex + 1, qp.sqProducerAcquire()); // the WQE being sent counts
        for (long i = qp.sqConsumer; i < end && owner < 0; i++) {
            Wqe w = qp.sq[(int) (i & qp.sqMask)];
            for (int k = 0; k < w.numSge && !w.inline && w.started; k++) {
                Mr m = w.sgeMr[k];
                if (m != null && (m == mr || mr == null && (m.isClosed() || !m.segment.scope().isAlive()))
                        && !w.isReadOrAtomic()) {
                    owner = i;
                    break;
                }
            }
        }
        while (owner >= 0 && qp.sqConsumer <= owner) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            WcStatus st = qp.sqConsumer == owner ? WcStatus.LOC_PROT_ERR : WcStatus.WR_FLUSH_ERR;
            if (w.isReadOrAtomic() && w.started && !w.responded) {
                qp.rdAtomicInFlight--;
            }
            w.started = false;
            qp.sqConsumerRelease(qp.sqConsumer + 1); // acquire partner: Qp.postSend's full check
            qp.sendCq.push(w.wrId, st, WcOpcode.of(w.opcode), 0, 0, 0, qp.qpn, 0);
        }
        qp.reqIndex = Math.max(qp.reqIndex, qp.sqConsumer);
        if (qp.state != QpState.ERROR) {
            engine.enterError(qp);
        }
    }

    /** Seals the FPDU built whole at {@code f} (pad, CRC or zeros) and queues it for the socket. */
    /** Counts an FPDU of {@code ulen} ULPDU bytes sent for {@code qp}: device and QP packets and framed bytes. */
    private void sent(IwarpQp qp, int ulen) {
        int bytes = Fpdu.crcOffset(ulen) + Fpdu.CRC_LENGTH;
        counters.increment(Counter.SENT_PKTS);
        counters.add(Counter.SENT_BYTES, bytes);
        counters.increment(qp.stats, QpCounter.SENT_PKTS);
        counters.add(qp.stats, QpCounter.SENT_BYTES, bytes);
    }

    private void queue(IwarpStream s, int f, int ulen) {
        int at = Fpdu.crcOffset(ulen);
        Fpdu.writeTrailer(s.txSeg, f, ulen, Fpdu.CRC_OFF);
        if (s.crc) {
            Crc32c.write(s.txSeg, f + at, crc32c.compute(s.tx, f, at));
        }
        int end = f + at + Fpdu.CRC_LENGTH;
        s.stage(f, end);
        s.txEnd = end;
    }

    /**
     * Zero copy: queues the FPDU whose header ({@code hdr} bytes of DDP/RDMAP header after the length
     * field) is built at {@code f} with its {@code len}-byte payload taken from region {@code mr} at
     * {@code va}: three gather entries, the staged length field and header, a view of the region, the
     * staged pad and CRC (computed here over the header and the region's bytes). The payload's bytes
     * leave the region only into the socket.
     *
     * @return false if the region has no view to spare (the caller copies the payload instead)
     */
    private boolean queueFromRegion(IwarpStream s, int f, int hdr, Mr mr, long va, int len) {
        RegionViews views = RegionViews.of(mr);
        ByteBuffer view = views == null ? null : views.acquire(va, len);
        if (view == null) {
            return false;
        }
        int ulen = hdr + len;
        Fpdu.writeHeader(s.txSeg, f, ulen);
        int t = f + Fpdu.ULPDU_OFFSET + hdr; // the trailer is staged right after the header
        int pad = Fpdu.padLength(ulen);
        for (int i = 0; i < pad; i++) {
            s.txSeg.set(ValueLayout.JAVA_BYTE, t + i, (byte) 0);
        }
        int crc = Fpdu.CRC_OFF;
        if (s.crc) {
            txCrc.reset();
            s.tx.limit(t).position(f);
            txCrc.update(s.tx);
            int p = view.position();
            txCrc.update(view);
            view.position(p);
            txCrc.update(ZEROS, 0, pad);
            crc = (int) txCrc.getValue();
        }
        Crc32c.write(s.txSeg, t + pad, crc);
        s.stage(f, t);
        s.stageView(view, views);
        int end = t + pad + Fpdu.CRC_LENGTH;
        s.stage(t, end);
        s.txEnd = end;
        iwarp.zeroCopySent++;
        return true;
    }

    /**
     * Queues an FPDU of a send WQE whose header is built at {@code f}: its payload (bytes {@code off..off+len}
     * of the message) from the region when it is large and lies in one SGE, else copied behind the header.
     */
    private boolean queueWqe(IwarpQp qp, IwarpStream s, Wqe w, int f, int hdr, long off, int len) {
        if (iwarp.zeroCopy && len >= ZC_TX_MIN && !w.inline) {
            long skip = off;
            for (int i = 0; i < w.numSge; i++) {
                int sl = w.sgeLength[i];
                if (skip < sl) {
                    Mr mr = skip + len <= sl ? Sgl.region(engine.context.keys, qp, w, i, w.sgeAddr[i] + skip, len) : null;
                    if (mr != null && queueFromRegion(s, f, hdr, mr, w.sgeAddr[i] + skip, len)) {
                        return true;
                    }
                    break;
                }
                skip -= sl;
            }
        }
        if (!Sgl.gather(engine.context.keys, qp, w, off, len, s.txSeg, f + Fpdu.ULPDU_OFFSET + hdr)) {
            return false;
        }
        Fpdu.writeHeader(s.txSeg, f, hdr + len);
        queue(s, f, hdr + len);
        return true;
    }

    /**
     * The WQE being sent names a region that is gone since its validation ({@link Sgl#region}: deregistered,
     * invalidated, registered again elsewhere, its memory freed), and this FPDU is not queued. As a WQE that failed its
     * validation: the send queue stops here, and {@link #retire} completes the WQEs before it as TCP takes their bytes,
     * then this one with LOC_PROT_ERR (as siw's transmitter fails it), and moves the QP to ERROR.
     *
     * @return false: nothing more is sent
     */
    private static boolean sourceGone(IwarpQp qp, IwarpStream s, Wqe w) {
        w.localError = WcStatus.LOC_PROT_ERR.ordinal();
        s.sqHalted = true;
        qp.reqIndex++;
        return false;
    }

    /**
     * One FPDU of the IRQ head: a READ Response segment (tagged, to the sink STag/TO) or an Atomic Response.
     *
     * @return false when the READ's source is gone ({@link #sourceError}): a TERMINATE is queued instead
     */
    private boolean response(IwarpQp qp, IwarpStream s) {
        int i = s.irqHead;
        MemorySegment tx = s.txSeg;
        int f = s.txEnd;
        int ddp = f + Fpdu.ULPDU_OFFSET;
        int ulen;
        boolean done;
        boolean zc = false;
        if (s.irqAtomic[i]) {
            Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.ATOMIC_RESPONSE), 0, Rdmap.QN_ATOMIC_RESPONSE,
                    s.txMsnAtomicResp++, 0);
            AtomicResponse.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH, s.irqRequestId[i], s.irqOrig[i]);
            ulen = Ddp.UNTAGGED_HEADER_LENGTH + AtomicResponse.LENGTH;
            done = true;
        } else {
            long sent = s.irqSent[i];
            int max = s.txMulpdu - Ddp.TAGGED_HEADER_LENGTH;
            int len = (int) Math.min(max, s.irqLength[i] - sent);
            done = sent + len == s.irqLength[i];
            Mr mr = s.irqMr[i];
            int code = len > 0 ? sourceError(qp, mr, s.irqStag[i], s.irqVa[i] + sent, len) : -1;
            if (code >= 0) {
                terminate(qp, s, Terminate.LAYER_RDMAP, Terminate.RDMAP_ETYPE_REMOTE_PROTECTION, code, -1, false);
                return false;
            }
            Ddp.writeTagged(tx, ddp, done, Rdmap.controlByte(Rdmap.READ_RESPONSE), s.irqSinkStag[i],
                    s.irqSinkTo[i] + sent);
            zc = iwarp.zeroCopy && len >= ZC_TX_MIN
                    && queueFromRegion(s, f, Ddp.TAGGED_HEADER_LENGTH, mr, s.irqVa[i] + sent, len);
            if (len > 0 && !zc) {
                MemorySegment.copy(mr.segment, s.irqVa[i] - mr.address + sent, tx, ddp + Ddp.TAGGED_HEADER_LENGTH, len);
            }
            s.irqSent[i] = sent + len;
            ulen = Ddp.TAGGED_HEADER_LENGTH + len;
        }
        if (!zc) {
            Fpdu.writeHeader(tx, f, ulen);
            queue(s, f, ulen);
        }
        sent(qp, ulen);
        if (done) {
            s.irqMr[i] = null;
            s.irqHead = (i + 1) % s.irqCapacity;
            s.irqCount--;
        }
        return true;
    }

    /**
     * The source of a READ checked again as each response FPDU is built (as siw checks the STag when the response is
     * sent): since the request the application may have deregistered the region, invalidated its key (LOCAL_INV) or
     * registered it onto other memory (REG_MR), or freed its memory. The key must still name the region, valid, with
     * REMOTE_READ, over bytes {@code [va, va + len)} of the memory it maps now.
     *
     * @return -1 when it may be read, else the RDMAP remote-protection code of the TERMINATE (counted as refused)
     */
    private int sourceError(IwarpQp qp, Mr mr, int stag, long va, int len) {
        int code = mr.key != stag || mr.isClosed() || mr.invalidated || !mr.segment.scope().isAlive()
                ? Terminate.RDMAP_INVALID_STAG
                : (mr.access & Access.REMOTE_READ) == 0 ? Terminate.RDMAP_ACCESS_RIGHTS
                : !mr.permits(qp.pd, Access.REMOTE_READ, va, len) ? Terminate.RDMAP_BASE_BOUNDS : -1;
        if (code >= 0) {
            counters.increment(code == Terminate.RDMAP_INVALID_STAG ? Counter.RCVD_BAD_KEY
                    : code == Terminate.RDMAP_ACCESS_RIGHTS ? Counter.RCVD_NO_ACCESS : Counter.RCVD_OUT_OF_BOUNDS);
        }
        return code;
    }

    /** One FPDU of the send queue's current WQE. @return false when there is nothing (more) to send now */
    private boolean request(IwarpQp qp, IwarpStream s, boolean draining) {
        if (s.sqHalted) {
            return false;
        }
        long producer = qp.sqProducerAcquire(); // release partner: Qp.postSend
        if (qp.reqIndex == producer) {
            return false;
        }
        Wqe w = qp.sq[(int) (qp.reqIndex & qp.sqMask)];
        if (!w.started) {
            if (draining) {
                return false;
            }
            if (!w.validated) {
                Sgl.validate(engine.context.keys, qp, w);
            }
            if (w.localError >= 0) { // completed in order by retire, which then moves the QP to ERROR
                w.started = true;
                s.sqHalted = true;
                qp.reqIndex++;
                return false;
            }
            if (w.isLocalOp()) {
                // REG_MR, LOCAL_INV (siw_fastreg_mr, siw_invalidate_stag) in send-queue order; fenced, after all before it
                if ((w.flags & SendFlags.FENCE) != 0 && qp.sqConsumer != qp.reqIndex) {
                    return false;
                }
                w.localError = LocalOps.execute(qp, w);
                w.started = true;
                if (w.localError >= 0) {
                    s.sqHalted = true;
                    qp.reqIndex++;
                    return false;
                }
                s.sqTxEnd[(int) (qp.reqIndex & qp.sqMask)] = s.txQueued; // done once all before it left
                qp.reqIndex++;
                qp.reqOffset = 0;
                return true;
            }
            if ((w.flags & SendFlags.FENCE) != 0 && qp.rdAtomicInFlight > 0) {
                return false;
            }
            if (w.isReadOrAtomic() && qp.rdAtomicInFlight >= Math.max(1, qp.maxRdAtomic)) {
                return false; // ORD: as many READ/atomics outstanding as the peer's IRD allows
            }
            w.started = true;
            w.responded = false;
            qp.reqOffset = 0;
            if (w.isReadOrAtomic()) {
                qp.rdAtomicInFlight++;
            }
        }
        MemorySegment tx = s.txSeg;
        int f = s.txEnd;
        int ddp = f + Fpdu.ULPDU_OFFSET;
        int ulen;
        boolean last;
        boolean queued = false;
        long off = qp.reqOffset;
        switch (w.opcode) {
            case RDMA_READ -> {
                Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.READ_REQUEST), 0, Rdmap.QN_READ_REQUEST,
                        s.txMsnRead++, 0);
                ReadRequest.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH, IwarpReceiver.sinkStag(w), IwarpReceiver.sinkTo(w), (int) w.length,
                        w.rkey, w.remoteAddr);
                ulen = Ddp.UNTAGGED_HEADER_LENGTH + ReadRequest.LENGTH;
                last = true;
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                boolean cas = w.opcode == WrOpcode.ATOMIC_CMP_AND_SWP;
                Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(Rdmap.ATOMIC_REQUEST), 0, Rdmap.QN_READ_REQUEST,
                        s.txMsnRead++, 0);
                w.npkts = ++s.atomicRequestId; // matched against the response's Original Request Identifier
                AtomicRequest.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH,
                        cas ? AtomicRequest.COMPARE_SWAP : AtomicRequest.FETCH_ADD, w.npkts, w.rkey, w.remoteAddr,
                        cas ? w.swap : w.compareAdd, cas ? -1L : 0, cas ? w.compareAdd : 0, cas ? -1L : 0);
                ulen = Ddp.UNTAGGED_HEADER_LENGTH + AtomicRequest.LENGTH;
                last = true;
            }
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> {
                int len = (int) Math.min(s.txMulpdu - Ddp.TAGGED_HEADER_LENGTH, w.length - off);
                last = off + len == w.length;
                Ddp.writeTagged(tx, ddp, last, Rdmap.controlByte(Rdmap.WRITE), w.rkey, w.remoteAddr + off);
                if (!queueWqe(qp, s, w, f, Ddp.TAGGED_HEADER_LENGTH, off, len)) {
                    return sourceGone(qp, s, w);
                }
                queued = true;
                ulen = Ddp.TAGGED_HEADER_LENGTH + len;
                qp.reqOffset = off + len;
                if (last && w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM) {
                    // the immediate value follows as a message of its own (docs/iwarp-design.md)
                    sent(qp, ulen);
                    f = s.txEnd;
                    queued = false;
                    ddp = f + Fpdu.ULPDU_OFFSET;
                    boolean se = (w.flags & SendFlags.SOLICITED) != 0;
                    Ddp.writeUntagged(tx, ddp, true, Rdmap.controlByte(se ? Rdmap.IMMEDIATE_DATA_SE
                            : Rdmap.IMMEDIATE_DATA), 0, Rdmap.QN_SEND, s.txMsnSend++, 0);
                    ImmediateData.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH,
                            (IMM_AFTER_WRITE << 32) | Integer.toUnsignedLong(w.imm));
                    ulen = Ddp.UNTAGGED_HEADER_LENGTH + ImmediateData.LENGTH;
                }
            }
            default -> { // SEND, SEND_WITH_IMM, SEND_WITH_INV: untagged, QN 0, one MSN per message, MO = byte offset
                boolean imm = w.opcode == WrOpcode.SEND_WITH_IMM;
                boolean inv = w.opcode == WrOpcode.SEND_WITH_INV;
                int hdr = Ddp.UNTAGGED_HEADER_LENGTH + (imm ? ImmediateData.LENGTH : 0);
                int len = (int) Math.min(s.txMulpdu - hdr, w.length - off);
                last = off + len == w.length;
                boolean se = last && (w.flags & SendFlags.SOLICITED) != 0;
                int op = imm ? (se ? Rdmap.IMMEDIATE_DATA_SE : Rdmap.IMMEDIATE_DATA)
                        : inv ? (se ? Rdmap.SEND_SE_INVALIDATE : Rdmap.SEND_INVALIDATE)
                        : (se ? Rdmap.SEND_SE : Rdmap.SEND);
                // the Invalidate STag rides in every segment's RsvdULP word (RFC 5040 §4.4)
                Ddp.writeUntagged(tx, ddp, last, Rdmap.controlByte(op), inv ? w.imm : 0, Rdmap.QN_SEND, s.txMsnSend,
                        (int) off);
                if (imm) {
                    ImmediateData.write(tx, ddp + Ddp.UNTAGGED_HEADER_LENGTH, Integer.toUnsignedLong(w.imm));
                }
                if (!queueWqe(qp, s, w, f, hdr, off, len)) {
                    return sourceGone(qp, s, w);
                }
                queued = true;
                ulen = hdr + len;
                qp.reqOffset = off + len;
                if (last) {
                    s.txMsnSend++;
                }
            }
        }
        if (!queued) {
            Fpdu.writeHeader(tx, f, ulen);
            queue(s, f, ulen);
        }
        sent(qp, ulen);
        if (last) {
            s.sqTxEnd[(int) (qp.reqIndex & qp.sqMask)] = s.txQueued; // it completes once TCP took this far
            qp.reqIndex++;
            qp.reqOffset = 0;
        }
        return true;
    }

    /** @return true once the socket has taken every FPDU of the queued WQE at send-queue index {@code i} */
    static boolean sent(IwarpQp qp, IwarpStream s, long i) {
        return s.txTaken - s.sqTxEnd[(int) (i & qp.sqMask)] >= 0;
    }

    /**
     * Retires send-queue WQEs in posting order: a SEND/WRITE once all its FPDUs have left for TCP,
     * a READ/atomic once its response is in, a failed one with its error (the QP then enters ERROR).
     */
    void retire(IwarpQp qp, IwarpStream s) {
        if (s.closed) {
            return; // queued bytes were dropped (the peer or a region is gone): the flush completes what is left
        }
        while (qp.sqConsumer != qp.reqIndex) {
            Wqe w = qp.sq[(int) (qp.sqConsumer & qp.sqMask)];
            WcStatus st = WcStatus.SUCCESS;
            if (w.localError >= 0) {
                st = WcStatus.of(w.localError);
            } else if (w.isReadOrAtomic() ? !w.responded : !sent(qp, s, qp.sqConsumer)) {
                return; // no response yet, or its last FPDU is still in our buffer rather than TCP's
            }
            if (w.isReadOrAtomic() && w.started && !w.responded) {
                qp.rdAtomicInFlight--;
            }
            boolean complete = w.signaled || st != WcStatus.SUCCESS;
            long wrId = w.wrId;
            WrOpcode op = w.opcode;
            int len = op.isAtomic() ? 8 : (int) w.length;
            if (st == WcStatus.SUCCESS && (op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM
                    || op == WrOpcode.SEND_WITH_INV)) {
                counters.increment(Counter.RDMA_SENDS);
            }
            w.started = false;
            qp.sqConsumerRelease(qp.sqConsumer + 1); // acquire partner: Qp.postSend's full check
            if (complete) {
                qp.sendCq.push(wrId, st, WcOpcode.of(op), len, 0, 0, qp.qpn, 0);
            }
            if (st != WcStatus.SUCCESS) {
                qp.reqIndex = Math.max(qp.reqIndex, qp.sqConsumer);
                if (qp.state != QpState.ERROR) {
                    engine.enterError(qp);
                }
                return;
            }
        }
    }
}

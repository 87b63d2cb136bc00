package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Mr;
import io.jrdma.engine.core.RecvWqe;
import io.jrdma.engine.core.RegionViews;
import io.jrdma.engine.core.Wqe;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.wire.iwarp.Fpdu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.zip.CRC32C;

/**
 * The iWARP state of one connected QP (siw's {@code siw_rx_stream}, {@code siw_iwarp_tx}, ORQ and
 * IRQ): its non-blocking TCP stream, the receive buffer in which FPDUs are reassembled across TCP
 * segments, the transmit buffer that holds FPDUs the socket has not taken yet (partial writes),
 * the MSN of each untagged queue both ways, the placement state of the message being received,
 * and the inbound READ/atomic requests waiting for their responses. Engine thread only;
 * everything is allocated once, when the connection manager attaches the stream.
 */
final class IwarpStream {
    /** Room for two of the largest FPDUs: after compaction a whole FPDU always fits behind a partial one. */
    static final int RX_BUFFER_MIN = 2 * Fpdu.length(Fpdu.MAX_ULPDU_LENGTH) + 64;
    /**
     * The receive buffer: {@code -Djrdma.iwarp.rxBuffer=BYTES} (read when a stream is attached), at least
     * {@link #RX_BUFFER_MIN}; one read takes at most this much from the socket.
     */
    static final String RX_BUFFER_PROPERTY = "jrdma.iwarp.rxBuffer";
    static final int RX_BUFFER = RX_BUFFER_MIN;
    static final int TX_BUFFER = 256 * 1024;
    /** Kept free at the end of the transmit buffer for a TERMINATE, whatever is queued. */
    static final int TX_RESERVE = 256;
    /** Entries of the gather list: staged bytes and region views, in wire order (one kept for a TERMINATE). */
    static final int IOV = 64;

    final SocketChannel channel;
    /**
     * The socket's descriptor when the engine writes with one {@code writev} per flush and reads
     * payloads with {@code readv} ({@link NativeTcp}); -1: the single-buffer SocketChannel calls.
     */
    final int fd;
    /** writev's iovec array (one entry per gather entry) and readv's (payload piece, then the buffer); null without fd */
    final NativeTcp.Vec txVec;
    final NativeTcp.Vec rxVec;
    /** MPA CRC negotiated (RFC 5044 §7.1: the C bit of the Reply decides). */
    final boolean crc;
    /** The largest ULPDU we send: the FPDU fits the path's TCP MSS (siw: 1448-byte FPDU, 1442-byte ULPDU). */
    final int txMulpdu;
    /** Both sides are jrdma and agreed on immediate data and atomics (docs/iwarp-design.md). */
    final boolean extensions;

    final ByteBuffer rx = ByteBuffer.allocateDirect(Math.max(RX_BUFFER_MIN, Integer.getInteger(RX_BUFFER_PROPERTY, RX_BUFFER)));
    final MemorySegment rxSeg = MemorySegment.ofBuffer(rx);
    int rxStart;
    int rxEnd;
    final ByteBuffer tx = ByteBuffer.allocateDirect(TX_BUFFER);
    final MemorySegment txSeg = MemorySegment.ofBuffer(tx);
    int txEnd;
    /**
     * What the socket has still to take, in wire order: slices of {@link #tx} (FPDUs built there,
     * or the headers and CRC trailers of zero-copy FPDUs) and views of regions (their payloads).
     * Entries {@code iovHead..iovTail-1} are pending; {@code IwarpEngine.flushTx} writes them with one
     * {@code writev} (or, without a descriptor, one {@code write} per entry).
     */
    final ByteBuffer[] iov = new ByteBuffer[IOV];
    /** per entry: the pool its region view goes back to, or null for a slice of {@link #tx} */
    final RegionViews[] iovViews = new RegionViews[IOV];
    /** per entry: a duplicate of {@link #tx} for its staged slice (made once) */
    final ByteBuffer[] txSlices = new ByteBuffer[IOV];
    int iovHead;
    int iovTail;
    /** bytes ever queued on the gather list, and ever taken by the socket */
    long txQueued;
    long txTaken;
    /**
     * per send-queue slot: {@link #txQueued} after the WQE's last FPDU was queued. A SEND or WRITE
     * completes once {@link #txTaken} reaches it, whatever is queued behind it (set by {@code IwarpEngine.attach}).
     */
    long[] sqTxEnd;

    // ---- receive side (siw_qp_rx.c): next expected MSN per untagged queue (RFC 5041: MSNs start at 1)
    int rxMsnSend = 1;
    int rxMsnRead = 1;
    int rxMsnTerm = 1;
    int rxMsnAtomicResp = 1;
    /** the receive WQE the SEND being received lands in, or null between messages */
    RecvWqe recv;
    long recvPlaced;
    /** the WRITE message being received: its bytes so far, and the length of the last complete one */
    boolean inWrite;
    long writeBytes;
    long lastWriteLength;
    /** the requester's oldest READ/atomic WQE still waiting for its response (ORQ head), -1 = find it */
    long orqIndex = -1;
    long readRespOffset;
    /** no more bytes are processed: a TERMINATE was sent or received, or the stream ended */
    boolean rxStopped;
    /** the FPDUs seen last were large: with direct placement, reads into {@link #rx} stop early, so the next payload goes straight to its target */
    boolean rxLarge;

    // ---- direct placement (siw_rx_data): the payload of the FPDU whose header was parsed is read into its target
    /** an FPDU's payload is being read straight into its region */
    boolean dp;
    int dpOpcode;
    boolean dpLast;
    /** its payload length, and how much of it is placed */
    int dpLength;
    int dpPlaced;
    /** pad + CRC bytes after the payload */
    int dpTrailer;
    /** the whole FPDU's length, as counted in rcvd_bytes */
    int dpFpduLength;
    /** WRITE: its STag and the address of its first payload byte (checked again for each piece); READ Response: the WQE it answers */
    int dpStag;
    long dpVa;
    Wqe dpWqe;
    /** CRC32c of the FPDU so far (length field, header, placed payload) */
    final CRC32C dpCrc = new CRC32C();

    // ---- transmit side (siw_qp_tx.c)
    int txMsnSend = 1;
    int txMsnRead = 1;
    int txMsnTerm = 1;
    int txMsnAtomicResp = 1;
    int atomicRequestId;
    /** the requester found a local error: nothing after the failing WQE is sent */
    boolean sqHalted;
    boolean terminateQueued;
    boolean closed;
    /** in ERROR with bytes still to write: the stream is closed at {@link #closeBy} (System.nanoTime) whatever is left */
    boolean lingering;
    long closeBy;

    // ---- IRQ: inbound READ and atomic requests, answered in order (responder resources, our IRD)
    final int irqCapacity;
    final boolean[] irqAtomic;
    final Mr[] irqMr;
    /** a READ's source STag, as the request named it: its region is checked again for every response FPDU */
    final int[] irqStag;
    final long[] irqVa;
    final long[] irqLength;
    final long[] irqSent;
    final int[] irqSinkStag;
    final long[] irqSinkTo;
    final long[] irqOrig;
    final int[] irqRequestId;
    int irqHead;
    int irqCount;
    /** IRQ FPDUs sent in a row since the send queue last sent one ({@code IwarpTransmitter.IRQ_MAXBURST_SQ_ACTIVE}) */
    int irqBurst;

    IwarpStream(SocketChannel channel, boolean crc, int txMulpdu, boolean extensions, int ird, boolean vectored) {
        this.channel = channel;
        this.fd = vectored ? NativeTcp.fd(channel) : -1;
        this.txVec = fd >= 0 ? new NativeTcp.Vec(IOV) : null;
        this.rxVec = fd >= 0 ? new NativeTcp.Vec(2) : null;
        this.crc = crc;
        this.txMulpdu = txMulpdu;
        this.extensions = extensions;
        irqCapacity = Math.max(1, ird);
        irqAtomic = new boolean[irqCapacity];
        irqMr = new Mr[irqCapacity];
        irqStag = new int[irqCapacity];
        irqVa = new long[irqCapacity];
        irqLength = new long[irqCapacity];
        irqSent = new long[irqCapacity];
        irqSinkStag = new int[irqCapacity];
        irqSinkTo = new long[irqCapacity];
        irqOrig = new long[irqCapacity];
        irqRequestId = new int[irqCapacity];
        for (int i = 0; i < IOV; i++) {
            txSlices[i] = tx.duplicate();
        }
    }

    boolean txPending() {
        return iovTail != iovHead;
    }

    /** Queues bytes {@code [from, to)} of {@link #tx} (built there) behind what is pending. */
    void stage(int from, int to) {
        if (to == from) {
            return;
        }
        int last = iovTail - 1;
        if (last >= iovHead && iovViews[last] == null && iov[last].limit() == from) {
            iov[last].limit(to); // contiguous with the previous staged slice: one entry
            txQueued += to - from;
            return;
        }
        txQueued += to - from;
        ByteBuffer b = txSlices[iovTail];
        b.clear().position(from).limit(to);
        iov[iovTail] = b;
        iovViews[iovTail] = null;
        iovTail++;
    }

    /** Queues a region view (a zero-copy payload) behind what is pending. */
    void stageView(ByteBuffer view, RegionViews pool) {
        txQueued += view.remaining();
        iov[iovTail] = view;
        iovViews[iovTail] = pool;
        iovTail++;
    }

    /** Drops the entries the socket has taken; gives their views back. @return true when nothing is pending */
    boolean taken() {
        while (iovHead < iovTail && !iov[iovHead].hasRemaining()) {
            if (iovViews[iovHead] != null) {
                iovViews[iovHead].release(iov[iovHead]);
                iovViews[iovHead] = null;
            }
            iov[iovHead] = null;
            iovHead++;
        }
        if (iovHead == iovTail) {
            iovHead = 0;
            iovTail = 0;
            txEnd = 0;
            return true;
        }
        return false;
    }

    /** Drops everything pending (the connection is gone). */
    void dropTx() {
        for (int i = iovHead; i < iovTail; i++) {
            iov[i].position(iov[i].limit());
        }
        taken();
    }
}

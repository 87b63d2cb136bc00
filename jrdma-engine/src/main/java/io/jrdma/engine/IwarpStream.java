package io.jrdma.engine;

import io.jrdma.wire.iwarp.Fpdu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

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
    static final int RX_BUFFER = 2 * Fpdu.length(Fpdu.MAX_ULPDU_LENGTH) + 64;
    static final int TX_BUFFER = 256 * 1024;
    /** Kept free at the end of the transmit buffer for a TERMINATE, whatever is queued. */
    static final int TX_RESERVE = 256;

    final SocketChannel channel;
    /** MPA CRC negotiated (RFC 5044 §7.1: the C bit of the Reply decides). */
    final boolean crc;
    /** The largest ULPDU we send: the FPDU fits the path's TCP MSS (siw: 1448-byte FPDU, 1442-byte ULPDU). */
    final int txMulpdu;
    /** Both sides are jrdma and agreed on immediate data and atomics (docs/iwarp-design.md). */
    final boolean extensions;

    final ByteBuffer rx = ByteBuffer.allocateDirect(RX_BUFFER);
    final MemorySegment rxSeg = MemorySegment.ofBuffer(rx);
    int rxStart;
    int rxEnd;
    final ByteBuffer tx = ByteBuffer.allocateDirect(TX_BUFFER);
    final MemorySegment txSeg = MemorySegment.ofBuffer(tx);
    int txStart;
    int txEnd;

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

    // ---- IRQ: inbound READ and atomic requests, answered in order (responder resources, our IRD)
    final int irqCapacity;
    final boolean[] irqAtomic;
    final Mr[] irqMr;
    final long[] irqVa;
    final long[] irqLength;
    final long[] irqSent;
    final int[] irqSinkStag;
    final long[] irqSinkTo;
    final long[] irqOrig;
    final int[] irqRequestId;
    int irqHead;
    int irqCount;

    IwarpStream(SocketChannel channel, boolean crc, int txMulpdu, boolean extensions, int ird) {
        this.channel = channel;
        this.crc = crc;
        this.txMulpdu = txMulpdu;
        this.extensions = extensions;
        irqCapacity = Math.max(1, ird);
        irqAtomic = new boolean[irqCapacity];
        irqMr = new Mr[irqCapacity];
        irqVa = new long[irqCapacity];
        irqLength = new long[irqCapacity];
        irqSent = new long[irqCapacity];
        irqSinkStag = new int[irqCapacity];
        irqSinkTo = new long[irqCapacity];
        irqOrig = new long[irqCapacity];
        irqRequestId = new int[irqCapacity];
    }

    boolean txPending() {
        return txEnd != txStart;
    }
}

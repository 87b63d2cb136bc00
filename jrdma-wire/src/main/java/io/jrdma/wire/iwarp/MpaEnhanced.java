package io.jrdma.wire.iwarp;

import static io.jrdma.wire.internal.Layouts.BE16;

import java.lang.foreign.MemorySegment;

/**
 * RFC 6581 enhanced connection establishment block: the first 4 bytes of the private data
 * of an MPA revision 2 Request or Reply. Offsets are relative to the start of the private
 * data ({@code frame + 20}).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |P|S|            IRD            |W|R|            ORD            |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>IRD / ORD: inbound / outbound RDMA Read queue depths, 14 bits. P = peer-to-peer mode
 * (the sender will, or the Reply's sender expects to, exchange a ready-to-receive "RTR"
 * message before ordinary traffic); S, W, R = the RTR kinds the sender supports (Request)
 * or picked (Reply): zero-length SEND, zero-length RDMA WRITE, zero-length RDMA READ.
 * Source: RFC 6581; Linux siw {@code iwarp.h} ({@code struct mpa_v2_data},
 * {@code enum mpa_v2_ctrl}: {@code MPA_V2_PEER_TO_PEER 0x8000},
 * {@code MPA_V2_ZERO_LENGTH_RTR 0x4000} in the IRD word, {@code MPA_V2_RDMA_WRITE_RTR 0x8000},
 * {@code MPA_V2_RDMA_READ_RTR 0x4000} in the ORD word, {@code MPA_IRD_ORD_MASK 0x3fff}).
 * In the captures rping sends IRD = ORD = 1, perftest -R 0/0 on its handshake connection
 * and 128/128 on the data connection of READ tests, none with P set.
 */
public final class MpaEnhanced {
    private MpaEnhanced() {
    }

    /** Length of the block. */
    public static final int LENGTH = 4;
    /** Mask of the IRD and ORD values. */
    public static final int IRD_ORD_MASK = 0x3FFF;
    /** IRD word: peer-to-peer mode. */
    public static final int PEER_TO_PEER = 0x8000;
    /** IRD word: zero-length SEND as RTR. */
    public static final int RTR_SEND = 0x4000;
    /** ORD word: zero-length RDMA WRITE as RTR. */
    public static final int RTR_WRITE = 0x8000;
    /** ORD word: zero-length RDMA READ as RTR. */
    public static final int RTR_READ = 0x4000;

    /** The IRD word (flags and IRD). */
    public static int irdWord(MemorySegment s, long off) {
        return s.get(BE16, off) & 0xFFFF;
    }

    /** The ORD word (flags and ORD). */
    public static int ordWord(MemorySegment s, long off) {
        return s.get(BE16, off + 2) & 0xFFFF;
    }

    /** IRD, 14 bits. */
    public static int ird(MemorySegment s, long off) {
        return irdWord(s, off) & IRD_ORD_MASK;
    }

    /** ORD, 14 bits. */
    public static int ord(MemorySegment s, long off) {
        return ordWord(s, off) & IRD_ORD_MASK;
    }

    /** P: peer-to-peer mode. */
    public static boolean peerToPeer(MemorySegment s, long off) {
        return (irdWord(s, off) & PEER_TO_PEER) != 0;
    }

    /** S: zero-length SEND RTR. */
    public static boolean rtrSend(MemorySegment s, long off) {
        return (irdWord(s, off) & RTR_SEND) != 0;
    }

    /** W: zero-length RDMA WRITE RTR. */
    public static boolean rtrWrite(MemorySegment s, long off) {
        return (ordWord(s, off) & RTR_WRITE) != 0;
    }

    /** R: zero-length RDMA READ RTR. */
    public static boolean rtrRead(MemorySegment s, long off) {
        return (ordWord(s, off) & RTR_READ) != 0;
    }

    /** Writes the block from its parts; IRD and ORD are masked to 14 bits. */
    public static void write(MemorySegment s, long off, int ird, int ord, boolean peerToPeer,
            boolean rtrSend, boolean rtrWrite, boolean rtrRead) {
        int irdWord = (ird & IRD_ORD_MASK) | (peerToPeer ? PEER_TO_PEER : 0)
                | (rtrSend ? RTR_SEND : 0);
        int ordWord = (ord & IRD_ORD_MASK) | (rtrWrite ? RTR_WRITE : 0) | (rtrRead ? RTR_READ : 0);
        s.set(BE16, off, (short) irdWord);
        s.set(BE16, off + 2, (short) ordWord);
    }
}

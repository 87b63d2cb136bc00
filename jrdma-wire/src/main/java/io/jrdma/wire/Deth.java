package io.jrdma.wire;

import static io.jrdma.wire.internal.Layouts.BE32;

import java.lang.foreign.MemorySegment;

/**
 * Datagram Extended Transport Header (DETH), 8 bytes, carried by every UD packet right after
 * the BTH.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                             Q_Key                             |  bytes 0-3
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |    Reserved   |                   Source QP                   |  bytes 4-7
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 *
 * <p>Q_Key: the GSI (QP1) uses {@link #GSI_QKEY}; RDMA-CM UD QPs use {@link #RDMA_UDP_QKEY}.
 * Source: IBA Vol 1 §9.3 (DETH); Linux {@code rxe_hdr.h} ({@code struct rxe_deth { __be32 qkey;
 * __be32 sqp; }}, {@code DETH_SQP_MASK 0x00ffffff}, {@code GSI_QKEY 0x80010000});
 * {@code RDMA_UDP_QKEY} from {@code rdma_cma.h}; jrdma spec D3.
 */
public final class Deth {
    private Deth() {
    }

    /** Header length in bytes. */
    public static final int LENGTH = 8;
    /** Mask of the 24-bit source QP. */
    public static final int SQP_MASK = 0x00FF_FFFF;
    /** Q_Key of the general services interface (QP1). */
    public static final int GSI_QKEY = 0x8001_0000;
    /** Q_Key used by RDMA-CM for UD port spaces. */
    public static final int RDMA_UDP_QKEY = 0x0123_4567;

    /** Queue key. */
    public static int qkey(MemorySegment s, long off) {
        return s.get(BE32, off);
    }

    /** Source QP number, 24 bits. */
    public static int srcQp(MemorySegment s, long off) {
        return s.get(BE32, off + 4) & SQP_MASK;
    }

    /** Writes all 8 bytes (the reserved byte is zero). */
    public static void write(MemorySegment s, long off, int qkey, int srcQp) {
        s.set(BE32, off, qkey);
        s.set(BE32, off + 4, srcQp & SQP_MASK);
    }
}

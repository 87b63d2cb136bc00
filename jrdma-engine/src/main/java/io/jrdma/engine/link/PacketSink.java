package io.jrdma.engine.link;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/** Receives packets from a {@link Link}; the buffer is valid only during the call. */
@FunctionalInterface
public interface PacketSink {
    /**
     * @param buf  a direct buffer holding the UDP payload (the RoCE packet) at index 0
     * @param seg  the same memory as a segment
     * @param len  the packet's length
     * @param src  where it came from
     * @param dst  the local endpoint it arrived at
     */
    void onPacket(ByteBuffer buf, MemorySegment seg, int len, Endpoint src, Endpoint dst);
}

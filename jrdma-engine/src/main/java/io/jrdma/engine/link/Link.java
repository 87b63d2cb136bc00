package io.jrdma.engine.link;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * A datagram link under the engine: UDP sockets in production, an in-memory network in tests.
 * Both calls are made only by the engine thread and must not allocate in steady state.
 */
public interface Link extends AutoCloseable {
    /** @return the local endpoints, one per local address (GID); index = {@link Endpoint#linkIndex()} */
    List<Endpoint> localEndpoints();

    /** Receives up to {@code limit} packets, handing each to {@code sink}; @return how many */
    int poll(PacketSink sink, int limit);

    /**
     * Sends {@code buf[0, len)} from {@code local} to {@code remote}.
     *
     * @return false when the link could not take it now (buffers full): try again later
     */
    boolean send(ByteBuffer buf, int len, Endpoint local, Endpoint remote);

    /**
     * Engine thread (control path): a QP starts ({@code +1}) or stops ({@code -1}) using local
     * endpoint {@code linkIndex}. A link may poll unused endpoints less often: packets to them can
     * only be for QPs that do not exist.
     */
    default void use(int linkIndex, int delta) {
    }

    @Override
    void close();
}

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

    /** As {@link #send(ByteBuffer, int, Endpoint, Endpoint)}, with the buffer's memory as a segment (no lookup). */
    default boolean send(ByteBuffer buf, java.lang.foreign.MemorySegment seg, int len, Endpoint local, Endpoint remote) {
        return send(buf, len, local, remote);
    }

    /**
     * As {@link #send(ByteBuffer, java.lang.foreign.MemorySegment, int, Endpoint, Endpoint)}; {@code jrdmaPeer}
     * says the receiver is jrdma (negotiated), so a batching link may hold the packet for a
     * {@code sendmmsg} and let the kernel cut it from a UDP GSO message (two jrdma ends compute the
     * ICRC with the IPv4 Identification as 0, so the IDs the kernel gives the segments do not
     * matter); toward other peers each packet leaves at once with its own send.
     */
    default boolean send(ByteBuffer buf, java.lang.foreign.MemorySegment seg, int len, Endpoint local, Endpoint remote,
            boolean jrdmaPeer) {
        return send(buf, seg, len, local, remote);
    }

    /**
     * How many sent packets this link may hold, by reference, until {@link #flush} (batched
     * transmit: several packets per system call); 0 when {@link #send} is done with the buffer on
     * return. A caller of a holding link must not write a buffer it sent until the link flushed it:
     * the engine builds each packet in the next of {@code heldPackets() + 1} buffers.
     */
    default int heldPackets() {
        return 0;
    }

    /** Sends what {@link #send} held (as many as the kernel takes now; the rest on a later call). */
    default void flush() {
    }

    /**
     * Engine thread (control path): a QP starts ({@code +1}) or stops ({@code -1}) using local
     * endpoint {@code linkIndex}. A link may poll unused endpoints less often: packets to them can
     * only be for QPs that do not exist.
     */
    default void use(int linkIndex, int delta) {
    }

    /**
     * Engine thread (control path): a QP starts sending from local endpoint {@code local} to
     * {@code remote}. A link may give the pair a path of its own (a connected socket).
     *
     * @return the endpoint the QP's packets leave from, to pass to {@link #send} and to cover
     *         with the ICRC: {@code local} itself, or a path with the same address and another
     *         UDP source port (RoCEv2 leaves the source port free; receivers match on 4791)
     */
    default Endpoint attach(Endpoint local, Endpoint remote) {
        use(local.linkIndex(), 1);
        return local;
    }

    /**
     * As {@link #attach(Endpoint, Endpoint)}, for packets whose IP header carries {@code hopLimit} (TTL) and
     * {@code trafficClass} (TOS), as an address handle's attributes ask (rxe writes its address vector's
     * into each packet it sends); undone by {@link #detach}. A link without IP headers (this default) ignores them.
     *
     * @param hopLimit     1..255
     * @param trafficClass 0..255
     * @return the endpoint to pass to {@link #send}
     */
    default Endpoint attach(Endpoint local, Endpoint remote, int hopLimit, int trafficClass) {
        return attach(local, remote);
    }

    /**
     * Engine thread (control path): from now on the link reports each received packet's IP hop limit (TTL) and
     * traffic class (TOS) through {@link #receivedHopLimit()} and {@link #receivedTrafficClass()} (a UD receive's
     * GRH holds them). Off until asked: reporting costs each packet a little.
     */
    default void reportIpHeaders() {
    }

    /** @return the hop limit (TTL) of the packet being handed to the sink, during {@link PacketSink#onPacket}; -1 unknown */
    default int receivedHopLimit() {
        return -1;
    }

    /** @return the traffic class (TOS) of the packet being handed to the sink, during {@link PacketSink#onPacket}; -1 unknown */
    default int receivedTrafficClass() {
        return -1;
    }

    /** Engine thread (control path): undoes one {@link #attach}, given what it returned. */
    default void detach(Endpoint local, Endpoint path) {
        use(local.linkIndex(), -1);
    }

    /** @return false when the local endpoint {@code linkIndex} has been removed (its address left the interface) */
    default boolean isOpen(int linkIndex) {
        return true;
    }

    @Override
    void close();
}

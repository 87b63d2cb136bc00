package io.jrdma.rdmacore;

import io.jrdma.verbs.CompletionChannel;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.RdmaException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A completion channel of an rdma-core device ({@code ibv_create_comp_channel}). {@link #await} blocks in
 * {@code poll(2)} on the channel's file descriptor (no spinning thread), then reads the event with
 * {@code ibv_get_cq_event} and acknowledges it at once with {@code ibv_ack_cq_events}. One thread awaits
 * a channel at a time.
 */
final class RdmaCoreChannel implements CompletionChannel {
    private final RdmaCoreContext context;
    final MemorySegment channel;
    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment state = IbvVerbs.callState(arena);
    private final MemorySegment pollfd = arena.allocate(Structs.POLLFD);
    private final MemorySegment cqOut = arena.allocate(ADDRESS);
    private final MemorySegment ctxOut = arena.allocate(ADDRESS);
    private boolean closed;

    RdmaCoreChannel(RdmaCoreContext context, MemorySegment channel) {
        this.context = context;
        this.channel = channel.reinterpret(Structs.IBV_COMP_CHANNEL.byteSize());
        this.fd = this.channel.get(JAVA_INT, Structs.CHANNEL_FD);
    }

    /** {@return the channel's file descriptor, which poll(2) and epoll can wait on} */
    int fd() {
        return fd;
    }

    /**
     * Waits for the next CQ event: {@code poll(2)} on the channel's fd for at most {@code timeout}, then
     * {@code ibv_get_cq_event} and {@code ibv_ack_cq_events(cq, 1)}.
     *
     * @return the CQ that fired, or null when the timeout passed first
     * @throws RdmaException EINVAL when closed; the errno of poll or ibv_get_cq_event
     */
    @Override
    public synchronized CompletionQueue await(Duration timeout) {
        if (closed) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the completion channel is closed");
        }
        long ms = Math.max(0, (timeout.toNanos() + 999_999) / 1_000_000L);
        try {
            if (!context.verbs().pollIn(state, pollfd, fd, ms)) {
                return null;
            }
        } catch (LibIbverbs.NativeCallException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
        int rc = context.verbs().getCqEvent(state, channel, cqOut, ctxOut);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_get_cq_event failed (errno " + rc + ")");
        }
        MemorySegment cq = cqOut.get(ADDRESS, 0);
        context.verbs().ackCqEvents(state, cq, 1);
        RdmaCoreCq owner = context.cqOf(cq.address());
        if (owner == null) {
            throw new RdmaException(RdmaException.Errno.EIO, "ibv_get_cq_event named a CQ (0x"
                    + Long.toHexString(cq.address()) + ") that is no CQ of this context");
        }
        return owner;
    }

    /**
     * Destroys the channel ({@code ibv_destroy_comp_channel}); a second close does nothing.
     *
     * @throws RdmaException EBUSY while a CQ uses it: close the CQ first
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        int rc = context.verbs().destroyCompChannel(channel);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_destroy_comp_channel failed (errno " + rc + ")"
                    + (rc == 16 ? ": a CQ uses it; close the CQ first" : ""));
        }
        closed = true;
        context.forget(this);
        arena.close();
    }
}

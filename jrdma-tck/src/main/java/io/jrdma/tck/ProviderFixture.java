package io.jrdma.tck;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ThreadingMode;

import java.net.InetAddress;
import java.util.Optional;

/**
 * What a provider tells the TCK: which device to open for two peers in one JVM, on which
 * address they meet, and how each side's context runs. The TCK opens two contexts of
 * {@link #device()}: a passive <em>server</em> (it listens and accepts in a separate thread)
 * and an active <em>client</em> (it connects and posts from the test thread).
 *
 * <p>The typical pair is a {@link ThreadingMode#DEDICATED} server and an
 * {@link ThreadingMode#INVOKER} client, which the defaults give; override
 * {@link #clientOptions()} for a fixture with both sides dedicated. When a side runs in
 * INVOKER mode the TCK drives it with {@code progress()} from the test thread whenever it waits.
 */
public abstract class ProviderFixture {
    /** For providers. */
    protected ProviderFixture() {
    }

    /** {@return the device both peers open (one context each)} */
    public abstract Device device();

    /** {@return the local address the server listens on and the client connects to} */
    public InetAddress address() {
        return InetAddress.getLoopbackAddress();
    }

    /** {@return options of the passive side: a dedicated engine thread by default} */
    public DeviceOptions serverOptions() {
        return DeviceOptions.defaults().withThreadingMode(ThreadingMode.DEDICATED);
    }

    /** {@return options of the active side: INVOKER mode (driven by the test thread) by default} */
    public DeviceOptions clientOptions() {
        return DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER);
    }

    /**
     * Optional hook: the private data a rejected {@code connect} received with its rejection.
     * The verbs API carries rejections as {@link RdmaException} with ECONNREFUSED only; a
     * provider whose exception carries the data can expose it here so the TCK checks it.
     *
     * @param rejection the exception the client's {@code connect} threw
     * @return the rejection's private data, or empty when the provider does not expose it
     */
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return Optional.empty();
    }

    /**
     * Whether the completion of an RDMA WRITE means its data is in the remote memory. True for the
     * InfiniBand transport, where the completion follows the responder's acknowledgement. False for
     * iWARP, where a WRITE (like a SEND) completes once handed to TCP (RFC 5040 §5, as Linux siw):
     * the TCK then waits, with its usual deadline, for the data to appear before checking it.
     *
     * @return true when a WRITE's completion implies remote placement
     */
    public boolean writeCompletionMeansPlaced() {
        return true;
    }

    /**
     * Whether a request the peer refuses (bad rkey, bounds, no or too small a receive, peer gone)
     * completes with the remote error status itself. True for the InfiniBand transport (NAKs,
     * retry and RNR counters). False for iWARP: a SEND or WRITE has already completed once handed
     * to TCP, the peer's TERMINATE (or the closed connection) then moves the QP to ERROR and the
     * requests behind it are flushed; only READs and atomics, which wait for a response, fail
     * themselves. The TCK checks that behaviour instead where it applies.
     *
     * @return true when remote errors complete the failing SEND/WRITE with their status
     */
    public boolean remoteErrorsFailTheRequest() {
        return true;
    }

    /** {@return true when a SEND without a posted receive is retried (IB RNR); iWARP has no RNR} */
    public boolean hasRnrRetry() {
        return true;
    }

    /**
     * The longest private data with which the connection manager still learns the peer's QPN. The
     * InfiniBand CM always carries it. iWARP has no QPNs on the wire: jrdma peers exchange theirs in
     * a trailer after the application's private data, which is left out when it would take the
     * MPA private data past the 256 bytes Linux siw accepts.
     *
     * @return a private data length, at most {@link io.jrdma.verbs.ConnParam#MAX_PRIVATE_DATA}
     */
    public int maxPrivateDataWithPeerQpn() {
        return io.jrdma.verbs.ConnParam.MAX_PRIVATE_DATA;
    }

    /**
     * The GID by which a peer reaches {@code ctx}, a context of {@link #device()}: by default the
     * fixture's {@link #address()} (soft-RoCE, soft-iWARP: a GID is an IP address). The shared-memory
     * provider's GID names a process and its control segment instead: each context's GID 0.
     *
     * @param ctx a context of the device
     * @return the GID, which is in {@code ctx}'s GID table
     */
    public Gid gid(DeviceContext ctx) {
        return Gid.of(address());
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{server=" + serverOptions().threadingMode() + ", client="
                + clientOptions().threadingMode() + '}';
    }
}

package io.jrdma.engine.tck;

import io.jrdma.tck.ProviderFixture;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.Transport;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;

/**
 * The TCK fixture for soft-iWARP (provider siw) on the loopback device: a dedicated-thread server and a client
 * in {@link #clientMode}, connected over TCP by MPA.
 */
final class SoftIwarpFixture extends ProviderFixture {
    /** Dedicated server, INVOKER client: the typical pair. */
    static final SoftIwarpFixture TYPICAL = new SoftIwarpFixture(ThreadingMode.INVOKER);
    /** Both sides with a dedicated engine thread. */
    static final SoftIwarpFixture BOTH_DEDICATED = new SoftIwarpFixture(ThreadingMode.DEDICATED);

    private final ThreadingMode clientMode;

    private SoftIwarpFixture(ThreadingMode clientMode) {
        this.clientMode = clientMode;
    }

    @Override
    public Device device() {
        return Rdma.resolve(address(), Transport.IWARP).device();
    }

    @Override
    public InetAddress address() {
        try {
            return InetAddress.getByName("127.0.0.1");
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public DeviceOptions clientOptions() {
        return DeviceOptions.defaults().withThreadingMode(clientMode);
    }

    /** iWARP: a WRITE completes once handed to TCP (RFC 5040 §5, as siw), before the peer has placed it. */
    @Override
    public boolean writeCompletionMeansPlaced() {
        return false;
    }

    /** iWARP: the peer's TERMINATE (or the closed connection) moves the QP to ERROR; a SEND/WRITE has completed already. */
    @Override
    public boolean remoteErrorsFailTheRequest() {
        return false;
    }

    /** iWARP has no RNR: a SEND without a posted receive terminates the connection (siw: DDP "no buffer"). */
    /** jrdma's MPA trailer (QPN, extensions) fits next to at most 236 bytes of private data. */
    @Override
    public int maxPrivateDataWithPeerQpn() {
        return 236;
    }

    @Override
    public boolean hasRnrRetry() {
        return false;
    }

    @Override
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return rejection instanceof ConnectionRejectedException r ? Optional.of(r.privateData()) : Optional.empty();
    }
}

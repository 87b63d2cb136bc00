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
 * The TCK fixture for soft-RoCE on the loopback device: a dedicated-thread server and a client
 * in {@link #clientMode}. The engine picks the UDP ports (4791, or a free one when taken).
 */
final class SoftRoceFixture extends ProviderFixture {
    /** Dedicated server, INVOKER client: the typical pair. */
    static final SoftRoceFixture TYPICAL = new SoftRoceFixture(ThreadingMode.INVOKER);
    /** Both sides with a dedicated engine thread. */
    static final SoftRoceFixture BOTH_DEDICATED = new SoftRoceFixture(ThreadingMode.DEDICATED);

    private final ThreadingMode clientMode;

    private SoftRoceFixture(ThreadingMode clientMode) {
        this.clientMode = clientMode;
    }

    @Override
    public Device device() {
        return Rdma.resolve(address(), Transport.ROCE_V2).device();
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

    @Override
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return rejection instanceof ConnectionRejectedException r ? Optional.of(r.privateData()) : Optional.empty();
    }
}

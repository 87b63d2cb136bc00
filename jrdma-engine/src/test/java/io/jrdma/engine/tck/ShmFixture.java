package io.jrdma.engine.tck;

import io.jrdma.tck.ProviderFixture;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.ThreadingMode;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;

/**
 * The TCK fixture for the shared-memory provider (shm0): a dedicated-thread server and a client in
 * {@link #clientMode}, in one JVM, set up by the connection manager over a loopback TCP side channel.
 */
final class ShmFixture extends ProviderFixture {
    /** Dedicated server, INVOKER client: the typical pair. */
    static final ShmFixture TYPICAL = new ShmFixture(ThreadingMode.INVOKER);
    /** Both sides with a dedicated engine thread. */
    static final ShmFixture BOTH_DEDICATED = new ShmFixture(ThreadingMode.DEDICATED);

    private final ThreadingMode clientMode;

    private ShmFixture(ThreadingMode clientMode) {
        this.clientMode = clientMode;
    }

    @Override
    public Device device() {
        return Rdma.devices().stream().filter(d -> d.name().equals("shm0")).findFirst()
                .orElseThrow(() -> new IllegalStateException("no shm0 device: " + Rdma.devices()));
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

    /** A shm context's GID names its process and control segment: its GID 0. */
    @Override
    public io.jrdma.verbs.Gid gid(io.jrdma.verbs.DeviceContext ctx) {
        return ctx.gid(0);
    }

    @Override
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return rejection instanceof ConnectionRejectedException r ? Optional.of(r.privateData()) : Optional.empty();
    }
}

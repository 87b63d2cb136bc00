package io.jrdma.engine.shm;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.spi.RdmaProvider;

import java.net.InetAddress;
import java.util.List;

/**
 * The shared-memory provider: one device, {@code shm0}, on Linux. Peers are contexts on the same
 * host; they find each other through the connection manager (a loopback TCP side channel) or by
 * exchanging GIDs as {@code ibv_rc_pingpong} does. No IP route leads to it, so {@link #resolve} finds nothing.
 */
public final class ShmProvider implements RdmaProvider {
    public static final String NAME = "shm";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Transport transport() {
        return Transport.SHM;
    }

    @Override
    public String unavailableReason() {
        return Native.unavailableReason();
    }

    @Override
    public List<Device> devices() {
        return Native.unavailableReason() == null ? List.of(ShmDevice.INSTANCE) : List.of();
    }

    @Override
    public ResolvedAddress resolve(InetAddress destination) {
        return null;
    }
}

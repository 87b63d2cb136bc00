package io.jrdma.verbs.spi;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.Transport;

import java.net.InetAddress;
import java.util.List;

/**
 * A source of RDMA devices, found with {@link java.util.ServiceLoader}. A provider that
 * cannot run here says why in {@link #unavailableReason()}; jrdma never falls back silently.
 */
public interface RdmaProvider {
    /**
     * {@return a short unique name: {@code rxe} for jrdma's soft-RoCE provider, {@code siw} for its soft-iWARP one}
     */
    String name();

    /** {@return the wire protocol of its devices} */
    Transport transport();

    /** {@return null when usable, else a sentence saying why not and what to do} */
    String unavailableReason();

    /** {@return the devices this provider offers now} */
    List<Device> devices();

    /**
     * {@return the device and GID that route to {@code destination}, or null if none does}
     *
     * @param destination the peer's IP address
     */
    Rdma.ResolvedAddress resolve(InetAddress destination);
}

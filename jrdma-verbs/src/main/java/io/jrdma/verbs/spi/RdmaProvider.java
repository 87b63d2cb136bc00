package io.jrdma.verbs.spi;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.Transport;

import java.net.InetAddress;
import java.util.List;
import java.util.Set;

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

    /**
     * {@return the wire protocols of its devices: {@link #transport()} alone, unless its devices are of several kinds
     * (rdma-core's: RoCE and iWARP devices)}
     */
    default Set<Transport> transports() {
        return Set.of(transport());
    }

    /**
     * {@return true when its devices are the kernel's (an RDMA NIC, Linux rxe or siw through rdma-core):
     * {@code Rdma.resolve} asks such providers before jrdma's software ones, since for an address of an interface
     * that has an RDMA device, that device is the one rdma_cm picks}
     */
    default boolean kernelDevices() {
        return false;
    }

    /** {@return null when usable, else a sentence saying why not and what to do} */
    String unavailableReason();

    /** {@return the devices this provider offers now} */
    List<Device> devices();

    /**
     * {@return the device, port and GID that route to {@code destination}, or null if none does} A provider whose
     * devices have more than one port reports the port the address is on ({@link ResolvedAddress#portNum()}).
     *
     * @param destination the peer's IP address
     */
    ResolvedAddress resolve(InetAddress destination);

    /**
     * {@return the device of {@code transport}, its port and the GID that route to {@code destination}, or null if
     * none does};
     * by default {@link #resolve(InetAddress)} when {@code transport} is {@link #transport()}
     *
     * @param destination the peer's IP address
     * @param transport   the kind of device wanted
     */
    default ResolvedAddress resolve(InetAddress destination, Transport transport) {
        return transport == transport() ? resolve(destination) : null;
    }
}

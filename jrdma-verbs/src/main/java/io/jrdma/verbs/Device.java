package io.jrdma.verbs;

import java.util.List;

/** An RDMA device ({@code ibv_device}): for the software providers, one per network interface. */
public interface Device {
    /** @return the device name, e.g. {@code rxe_lo} */
    String name();

    /** @return the name of the provider that made it */
    String provider();

    /** @return the wire protocol it speaks */
    Transport transport();

    /** @return the network interface it is bound to, e.g. {@code lo} */
    String netdev();

    /** @return the current GID table (re-read from the interface's addresses) */
    List<Gid> gids();

    /** @return true if the network interface is up */
    boolean isUp();

    /** Opens a context with the default options (dedicated engine thread, UDP port 4791 or a free one). */
    default DeviceContext open() {
        return open(DeviceOptions.defaults());
    }

    /** Opens a context ({@code ibv_open_device}): its own engine, queues and key tables. */
    DeviceContext open(DeviceOptions options);
}

package io.jrdma.verbs;

import java.util.List;

/** An RDMA device ({@code ibv_device}): for the software providers, one per network interface. */
public interface Device {
    /** {@return the device name, e.g. {@code rxe_lo}} */
    String name();

    /** {@return the name of the provider that made it} */
    String provider();

    /** {@return the wire protocol it speaks} */
    Transport transport();

    /** {@return the network interface it is bound to, e.g. {@code lo}} */
    String netdev();

    /** {@return the current GID table (re-read from the interface's addresses)} */
    List<Gid> gids();

    /** {@return true if the network interface is up} */
    boolean isUp();

    /**
     * What contexts of this device would give up in this process compared with the provider at its
     * best, one human-readable sentence each that says what is lost and what to do about it (for
     * the software providers: a JVM flag such as {@code --enable-native-access} that was not given).
     * A provider never falls back silently: it also logs each of these once through
     * {@link System.Logger}. An open context's {@link PortAttr#limitations()} says what it really uses.
     *
     * @return the limitations, empty when there are none
     */
    default List<String> limitations() {
        return List.of();
    }

    /**
     * Opens a context with the default options (a dedicated engine thread, UDP port 4791 or a free one).
     *
     * @return the new context; close it last, after everything made from it
     * @throws RdmaException as {@link #open(DeviceOptions)}
     */
    default DeviceContext open() {
        return open(DeviceOptions.defaults());
    }

    /**
     * Opens a context ({@code ibv_open_device}): its own engine, queues and key tables. Several
     * contexts of one device may be open at once (one per UDP port or address set).
     *
     * @param options the threading mode, idle strategy, UDP port and addresses
     * @return the new context; close it last, after everything made from it
     * @throws RdmaException ENODEV if the interface has no IP address; EADDRINUSE if the UDP port is
     *                       taken and the options allow no fallback (or no free port is shared by
     *                       the addresses); EIO if the sockets cannot be opened
     */
    DeviceContext open(DeviceOptions options);
}

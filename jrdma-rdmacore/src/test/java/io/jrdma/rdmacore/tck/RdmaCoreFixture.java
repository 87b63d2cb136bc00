package io.jrdma.rdmacore.tck;

import io.jrdma.rdmacore.RdmaCoreDevice;
import io.jrdma.rdmacore.RdmaCoreProvider;
import io.jrdma.tck.ProviderFixture;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;
import org.junit.jupiter.api.Assumptions;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.Optional;

/**
 * The TCK fixture for an rdma-core device, named by the system property {@value #DEVICE_PROPERTY}
 * ({@code -Djrdma.tck.rdmacore.device=rxe0}); both peers open a context of it and meet on its first IPv4
 * address (its IPv4-mapped GID), or on {@value #ADDRESS_PROPERTY} when given; on RoCE they connect through
 * jrdma's TCP exchange, on iWARP through rdma_cm (librdmacm), as {@code connectionManager()} does. Without the
 * property, or when the device is not there (no rdma-core device on this host), every test is skipped saying so.
 */
public final class RdmaCoreFixture extends ProviderFixture {
    /** The system property naming the device. */
    public static final String DEVICE_PROPERTY = "jrdma.tck.rdmacore.device";
    /** The system property giving the address both peers meet on (default: the device's first IPv4 GID). */
    public static final String ADDRESS_PROPERTY = "jrdma.tck.rdmacore.address";

    /** The fixture every TCK subclass here uses. */
    public static final RdmaCoreFixture INSTANCE = new RdmaCoreFixture();

    private RdmaCoreDevice device;
    private InetAddress address;

    private RdmaCoreFixture() {
    }

    /** {@return the device, or aborts (skips) the calling test saying why there is none} */
    public static RdmaCoreDevice requireDevice() {
        String name = System.getProperty(DEVICE_PROPERTY);
        Assumptions.assumeTrue(name != null && !name.isEmpty(), "skipped: needs an rdma-core device; run with -D"
                + DEVICE_PROPERTY + "=rxe0 (or siw0, or a NIC) on a host that has one (interop/rdmacore-tck.sh"
                + " does in the interop guests)");
        RdmaCoreProvider p = new RdmaCoreProvider();
        String why = p.unavailableReason();
        Assumptions.assumeTrue(why == null, () -> "skipped: " + name + " asked for, but " + why);
        for (Device d : p.devices()) {
            if (d.name().equals(name)) {
                return (RdmaCoreDevice) d;
            }
        }
        Assumptions.abort("skipped: rdma-core lists no device " + name + " (it lists " + p.devices() + ")");
        return null;
    }

    @Override
    public synchronized Device device() {
        if (device == null) {
            device = requireDevice();
        }
        return device; // on iWARP, connectionManager() is rdma_cm (librdmacm): the kernel's iWARP CM connects the QPs
    }

    @Override
    public synchronized InetAddress address() {
        if (address == null) {
            address = findAddress(); // once: a thousand-QP test asks for every QP
        }
        return address;
    }

    private InetAddress findAddress() {
        String given = System.getProperty(ADDRESS_PROPERTY);
        try {
            if (given != null && !given.isEmpty()) {
                return InetAddress.getByName(given);
            }
            InetAddress a = ipv4Of(device());
            if (a != null) {
                return a;
            }
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException(ADDRESS_PROPERTY + "=" + given + ": " + e.getMessage(), e);
        }
        Assumptions.abort("skipped: " + device().name() + " has no IPv4 address found; give -D" + ADDRESS_PROPERTY);
        return null;
    }

    /**
     * {@return the device's first IPv4 address, or null: its first IPv4-mapped GID (RoCE), else (iWARP, whose GID is
     * the interface's MAC address padded with zeros, as siw's) the first IPv4 address of the interface with that MAC}
     *
     * @param device an rdma-core device
     */
    public static InetAddress ipv4Of(Device device) {
        for (Gid g : device.gids()) {
            if (g.toInetAddress() instanceof Inet4Address a) {
                return a;
            }
        }
        try {
            for (Gid g : device.gids()) {
                byte[] mac = java.util.Arrays.copyOf(g.raw(), 6);
                for (java.net.NetworkInterface nif : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
                    if (java.util.Arrays.equals(mac, nif.getHardwareAddress())) {
                        for (InetAddress a : java.util.Collections.list(nif.getInetAddresses())) {
                            if (a instanceof Inet4Address) {
                                return a;
                            }
                        }
                    }
                }
            }
        } catch (java.net.SocketException e) {
            return null;
        }
        return null;
    }

    @Override
    public Optional<byte[]> rejectionPrivateData(RdmaException rejection) {
        return rejection instanceof ConnectionRejectedException r ? Optional.of(r.privateData()) : Optional.empty();
    }

    @Override
    public boolean writeCompletionMeansPlaced() {
        return device().transport() != Transport.IWARP;
    }

    @Override
    public boolean remoteErrorsFailTheRequest() {
        return device().transport() != Transport.IWARP;
    }

    /**
     * {@return on iWARP, the longest private data that leaves room for the 16-byte jrdma trailer carrying the QPN
     * within librdmacm's 255 bytes; on RoCE (jrdma's TCP exchange) all of it}
     */
    @Override
    public int maxPrivateDataWithPeerQpn() {
        return device().transport() == Transport.IWARP ? 239 : super.maxPrivateDataWithPeerQpn();
    }

    @Override
    public boolean hasRnrRetry() {
        return device().transport() != Transport.IWARP;
    }
}

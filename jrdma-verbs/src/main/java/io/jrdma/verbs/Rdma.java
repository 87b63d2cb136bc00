package io.jrdma.verbs;

import io.jrdma.verbs.spi.RdmaProvider;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Entry point: the providers on the module or class path and their devices
 * ({@code ibv_get_device_list}), and address resolution to a device and GID.
 */
public final class Rdma {
    private Rdma() {
    }

    /** @return every provider found, available or not */
    public static List<RdmaProvider> providers() {
        List<RdmaProvider> list = new ArrayList<>();
        ServiceLoader.load(RdmaProvider.class, Rdma.class.getClassLoader()).forEach(list::add);
        if (list.isEmpty()) {
            ServiceLoader.load(RdmaProvider.class).forEach(list::add);
        }
        return list;
    }

    /** @return the named provider; throws ENODEV naming the ones present, or why it cannot run */
    public static RdmaProvider provider(String name) {
        List<String> names = new ArrayList<>();
        for (RdmaProvider p : providers()) {
            if (p.name().equals(name)) {
                String why = p.unavailableReason();
                if (why != null) {
                    throw new RdmaException(RdmaException.Errno.ENODEV, "provider " + name + " cannot run: " + why);
                }
                return p;
            }
            names.add(p.name());
        }
        throw new RdmaException(RdmaException.Errno.ENODEV, "no provider named " + name + "; present: " + names);
    }

    /** @return the devices of every available provider */
    public static List<Device> devices() {
        List<Device> all = new ArrayList<>();
        for (RdmaProvider p : providers()) {
            if (p.unavailableReason() == null) {
                all.addAll(p.devices());
            }
        }
        return all;
    }

    /** @return the device with this name; throws ENODEV listing the names present */
    public static Device device(String name) {
        List<Device> all = devices();
        for (Device d : all) {
            if (d.name().equals(name)) {
                return d;
            }
        }
        throw new RdmaException(RdmaException.Errno.ENODEV,
                "no RDMA device named " + name + "; present: " + all.stream().map(Device::name).toList());
    }

    /**
     * Picks the device and source GID that route to {@code destination}, as
     * {@code rdma_resolve_addr} does: the kernel's routing table chooses the local address.
     *
     * @param transport which kind of device to pick
     */
    public static ResolvedAddress resolve(InetAddress destination, Transport transport) {
        for (RdmaProvider p : providers()) {
            if (p.unavailableReason() == null && p.transport() == transport) {
                ResolvedAddress r = p.resolve(destination);
                if (r != null) {
                    return r;
                }
            }
        }
        throw new RdmaException(RdmaException.Errno.ENETUNREACH,
                "no " + transport + " device has a route to " + destination.getHostAddress());
    }

    /**
     * The outcome of address resolution.
     *
     * @param device    the device whose interface routes to the destination
     * @param sgid      the local GID (source address) to use
     * @param sgidIndex its index in the device's GID table
     */
    public record ResolvedAddress(Device device, Gid sgid, int sgidIndex) {
    }
}

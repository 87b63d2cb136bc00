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

    /**
     * {@return every provider found on the module or class path through {@link java.util.ServiceLoader},
     * available or not; empty when no provider artifact (such as {@code io.jrdma:jrdma-engine}) is there}
     */
    public static List<RdmaProvider> providers() {
        List<RdmaProvider> list = new ArrayList<>();
        ServiceLoader.load(RdmaProvider.class, Rdma.class.getClassLoader()).forEach(list::add);
        if (list.isEmpty()) {
            ServiceLoader.load(RdmaProvider.class).forEach(list::add);
        }
        return list;
    }

    /**
     * {@return the named provider}
     *
     * @param name the provider's {@link RdmaProvider#name()}
     * @throws RdmaException ENODEV naming the providers present (or the artifact to add when there is
     *                       none), or saying why the provider cannot run here
     */
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
        if (names.isEmpty()) {
            throw new RdmaException(RdmaException.Errno.ENODEV,
                    "no provider named " + name + ": " + noProvider(List.of(), null));
        }
        throw new RdmaException(RdmaException.Errno.ENODEV, "no provider named " + name + "; present: " + names);
    }

    /**
     * {@return the devices of every available provider ({@code ibv_get_device_list}); empty when none is loaded}
     */
    public static List<Device> devices() {
        List<Device> all = new ArrayList<>();
        for (RdmaProvider p : providers()) {
            if (p.unavailableReason() == null) {
                all.addAll(p.devices());
            }
        }
        return all;
    }

    /**
     * {@return the device with this name, such as {@code roce_lo}}
     *
     * @param name the device's {@link Device#name()}
     * @throws RdmaException ENODEV listing the names present (or the artifact to add when no provider is loaded)
     */
    public static Device device(String name) {
        List<Device> all = devices();
        for (Device d : all) {
            if (d.name().equals(name)) {
                return d;
            }
        }
        if (all.isEmpty() && providers().isEmpty()) {
            throw new RdmaException(RdmaException.Errno.ENODEV,
                    "no RDMA device named " + name + ": " + noProvider(List.of(), null));
        }
        throw new RdmaException(RdmaException.Errno.ENODEV,
                "no RDMA device named " + name + "; present: " + all.stream().map(Device::name).toList());
    }

    /**
     * Picks the device and source GID that route to {@code destination}, as
     * {@code rdma_resolve_addr} does: the kernel's routing table chooses the local address.
     * Providers of {@code transport} are asked in {@link #providers()} order, those of the kernel's
     * devices ({@link RdmaProvider#kernelDevices()}: rdma-core's NICs, Linux rxe and siw) first;
     * the first device with a route wins. An address of this host gives the device of its
     * interface.
     *
     * @param destination the peer's IP address (IPv4 or IPv6)
     * @param transport   which kind of device to pick
     * @return the device, its port, the source GID and its index in that port's GID table
     * @throws RdmaException {@code ENODEV} when no provider of {@code transport} is on the class
     *                       or module path (the message names the artifact to add, normally
     *                       {@code io.jrdma:jrdma-engine}), or when the ones present cannot run
     *                       here (the message says why); {@code ENETUNREACH} when providers
     *                       run but none of their devices has a route to {@code destination}
     */
    public static ResolvedAddress resolve(InetAddress destination, Transport transport) {
        return resolve(providers(), destination, transport);
    }

    /** {@link #resolve(InetAddress, Transport)} over a given list of providers (tests give their own). */
    static ResolvedAddress resolve(List<RdmaProvider> all, InetAddress destination, Transport transport) {
        List<String> unavailable = new ArrayList<>();
        boolean usable = false;
        List<RdmaProvider> ordered = new ArrayList<>(all.size());
        for (RdmaProvider p : all) {
            if (p.kernelDevices()) {
                ordered.add(p);
            }
        }
        for (RdmaProvider p : all) {
            if (!p.kernelDevices()) {
                ordered.add(p);
            }
        }
        for (RdmaProvider p : ordered) {
            if (!p.transports().contains(transport)) {
                continue;
            }
            String why = p.unavailableReason();
            if (why != null) {
                unavailable.add("provider " + p.name() + " cannot run: " + why);
                continue;
            }
            usable = true;
            ResolvedAddress r = p.resolve(destination, transport);
            if (r != null) {
                return r;
            }
        }
        if (!usable) {
            if (!unavailable.isEmpty()) {
                throw new RdmaException(RdmaException.Errno.ENODEV, String.join("; ", unavailable));
            }
            throw new RdmaException(RdmaException.Errno.ENODEV, noProvider(all, transport));
        }
        throw new RdmaException(RdmaException.Errno.ENETUNREACH,
                "no " + transport + " device has a route to " + destination.getHostAddress());
    }

    /**
     * The message for "no provider of this transport is loaded": what is present and what to add.
     *
     * @param present   the providers found, of any transport
     * @param transport the transport asked for, or null for any
     */
    static String noProvider(List<RdmaProvider> present, Transport transport) {
        String what = transport == null ? "no RDMA provider" : "no " + transport + " provider";
        String found = present.isEmpty()
                ? "none was found"
                : "found only " + present.stream().map(p -> p.name() + " (" + p.transport() + ")").toList();
        return what + " is on the class path or module path (" + found + "): add the "
                + ENGINE_ARTIFACT + " artifact, the software RoCEv2 and iWARP providers, at run time"
                + " (on the module path it is the module io.jrdma.engine)";
    }

    /** The Maven coordinates of the software providers, named in "no provider" errors. */
    static final String ENGINE_ARTIFACT = "io.jrdma:jrdma-engine";
}

package io.jrdma.engine.core;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ResolvedAddress;
import io.jrdma.verbs.spi.RdmaProvider;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** What the soft-RoCE and soft-iWARP providers share: one device per interface with an address, and route-based resolution. */
public abstract class InterfaceProvider implements RdmaProvider {
    private final Map<String, InterfaceDevice> devices;
    private final Function<String, InterfaceDevice> factory;

    /**
     * @param devices the provider class's own map (static: ServiceLoader makes a new provider per
     *                lookup, and a device must stay the same object, with its open contexts)
     */
    public InterfaceProvider(Map<String, InterfaceDevice> devices, Function<String, InterfaceDevice> factory) {
        this.devices = devices;
        this.factory = factory;
    }

    @Override
    public String unavailableReason() {
        return null;
    }

    @Override
    public List<Device> devices() {
        List<Device> list = new ArrayList<>();
        try {
            for (NetworkInterface ni : NetworkInterface.networkInterfaces().toList()) {
                if (ni.inetAddresses().findAny().isPresent()) {
                    list.add(devices.computeIfAbsent(ni.getName(), factory));
                }
            }
        } catch (SocketException e) {
            return list;
        }
        return list;
    }

    /** The kernel's route to the destination picks the source address, hence the device (as rdma_resolve_addr). */
    @Override
    public ResolvedAddress resolve(InetAddress destination) {
        InetAddress source;
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.connect(new InetSocketAddress(destination, 9)); // no packet is sent: connect only routes
            source = ((InetSocketAddress) ch.getLocalAddress()).getAddress();
        } catch (IOException e) {
            return null;
        }
        for (Device d : devices()) {
            List<InetAddress> addrs = ((InterfaceDevice) d).addresses();
            for (int i = 0; i < addrs.size(); i++) {
                if (addrs.get(i).equals(source) || (source.isLoopbackAddress() && addrs.get(i).isLoopbackAddress()
                        && addrs.get(i).getClass() == source.getClass())) {
                    return new ResolvedAddress(d, Gid.of(addrs.get(i)), i);
                }
            }
        }
        return null;
    }
}

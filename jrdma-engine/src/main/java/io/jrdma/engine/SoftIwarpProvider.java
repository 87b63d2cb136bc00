package io.jrdma.engine;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.Transport;
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
import java.util.concurrent.ConcurrentHashMap;

/**
 * The soft-iWARP provider ({@code siw}, as the Linux driver): one device per network interface
 * that has an IP address, named {@code iwarp_<if>}. The same verbs program runs over RoCE or iWARP
 * by picking the device ({@code Rdma.resolve(address, Transport.IWARP)}).
 */
public final class SoftIwarpProvider implements RdmaProvider {
    public static final String NAME = "siw";
    private static final Map<String, SoftIwarpDevice> DEVICES = new ConcurrentHashMap<>();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Transport transport() {
        return Transport.IWARP;
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
                    list.add(DEVICES.computeIfAbsent(ni.getName(), SoftIwarpDevice::new));
                }
            }
        } catch (SocketException e) {
            return list;
        }
        return list;
    }

    /** The kernel's route to the destination picks the source address, hence the device (as rdma_resolve_addr). */
    @Override
    public Rdma.ResolvedAddress resolve(InetAddress destination) {
        InetAddress source;
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.connect(new InetSocketAddress(destination, 9)); // no packet is sent: connect only routes
            source = ((InetSocketAddress) ch.getLocalAddress()).getAddress();
        } catch (IOException e) {
            return null;
        }
        for (Device d : devices()) {
            List<InetAddress> addrs = ((SoftIwarpDevice) d).addresses();
            for (int i = 0; i < addrs.size(); i++) {
                if (addrs.get(i).equals(source) || (source.isLoopbackAddress() && addrs.get(i).isLoopbackAddress()
                        && addrs.get(i).getClass() == source.getClass())) {
                    return new Rdma.ResolvedAddress(d, Gid.of(addrs.get(i)), i);
                }
            }
        }
        return null;
    }
}

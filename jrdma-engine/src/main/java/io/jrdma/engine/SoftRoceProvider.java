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

/** The soft-RoCE provider ({@code rxe}): one device per network interface that has an IP address. */
public final class SoftRoceProvider implements RdmaProvider {
    public static final String NAME = "rxe";
    private static final Map<String, SoftRoceDevice> DEVICES = new ConcurrentHashMap<>();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Transport transport() {
        return Transport.ROCE_V2;
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
                    list.add(DEVICES.computeIfAbsent(ni.getName(), SoftRoceDevice::new));
                }
            }
        } catch (SocketException e) {
            return list;
        }
        return list;
    }

    /** Address resolution: the kernel's route to the destination picks the source address, hence the device. */
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
            SoftRoceDevice sd = (SoftRoceDevice) d;
            List<InetAddress> addrs = sd.addresses();
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

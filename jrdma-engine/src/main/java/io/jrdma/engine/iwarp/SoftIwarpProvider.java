package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.InterfaceDevice;
import io.jrdma.engine.core.InterfaceProvider;
import io.jrdma.verbs.Transport;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The soft-iWARP provider ({@code siw}, as the Linux driver): one device per network interface
 * that has an IP address, named {@code iwarp_<if>}. The same verbs program runs over RoCE or iWARP
 * by picking the device ({@code Rdma.resolve(address, Transport.IWARP)}).
 */
public final class SoftIwarpProvider extends InterfaceProvider {
    public static final String NAME = "siw";
    private static final Map<String, InterfaceDevice> DEVICES = new ConcurrentHashMap<>();

    public SoftIwarpProvider() {
        super(DEVICES, SoftIwarpDevice::new);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Transport transport() {
        return Transport.IWARP;
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.InterfaceDevice;
import io.jrdma.engine.core.InterfaceProvider;
import io.jrdma.verbs.Transport;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The soft-RoCE provider ({@code rxe}): one device per network interface that has an IP address. */
public final class SoftRoceProvider extends InterfaceProvider {
    public static final String NAME = "rxe";
    private static final Map<String, InterfaceDevice> DEVICES = new ConcurrentHashMap<>();

    public SoftRoceProvider() {
        super(DEVICES, SoftRoceDevice::new);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Transport transport() {
        return Transport.ROCE_V2;
    }
}

package io.jrdma.engine.core;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;

import java.net.InetAddress;
import java.util.List;

/** A device for contexts the tests build by hand: a name, the loopback GID, and an interface state the test sets. */
final class TestDevice implements Device {
    private final String name;
    volatile boolean up = true;

    TestDevice(String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String provider() {
        return "test";
    }

    @Override
    public io.jrdma.verbs.Transport transport() {
        return io.jrdma.verbs.Transport.ROCE_V2;
    }

    @Override
    public String netdev() {
        return "lo";
    }

    @Override
    public List<Gid> gids() {
        return List.of(Gid.of(InetAddress.getLoopbackAddress()));
    }

    @Override
    public boolean isUp() {
        return up;
    }

    @Override
    public DeviceContext open(DeviceOptions options) {
        throw new UnsupportedOperationException();
    }
}

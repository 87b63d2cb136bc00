package io.jrdma.engine.cm;

import io.jrdma.engine.core.Handshakes;
import io.jrdma.engine.roce.SoftRoceDevice;
import io.jrdma.soft.SoftRoceOptions;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;

/** jrdma's TCP side channel (soft-RoCE's {@code connectionManager()}) under silent, stalled and garbage clients. */
class TcpListenerHostageTest extends HostileListenerTests {
    @Override
    protected DeviceContext open() {
        return SoftRoceDevice.forTest("lo", () -> List.of(LO))
                .open(DeviceOptions.defaults().with(SoftRoceOptions.defaults().withUdpPort(0, true)));
    }

    @Override
    protected Listener listen(DeviceContext ctx, InetSocketAddress at, Handshakes.Limits limits) {
        return ((TcpConnectionManager) ctx.connectionManager()).listen(at, limits);
    }

    /** A REQ's header announcing a 40-byte hello, and 10 bytes of it. */
    @Override
    protected byte[] halfRequest() {
        ByteBuffer b = ByteBuffer.allocate(17);
        b.putInt(TcpConnectionManager.MAGIC).put((byte) TcpConnectionManager.REQ).putShort((short) 40);
        b.put((byte) TcpConnectionManager.VERSION);
        return b.array();
    }

    @Override
    protected String name() {
        return "TCP side channel (soft-RoCE)";
    }
}

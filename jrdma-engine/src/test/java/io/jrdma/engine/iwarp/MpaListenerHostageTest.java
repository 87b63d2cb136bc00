package io.jrdma.engine.iwarp;

import io.jrdma.engine.core.Handshakes;
import io.jrdma.engine.cm.HostileListenerTests;
import io.jrdma.verbs.ConnectionManager.Listener;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.wire.iwarp.Mpa;
import io.jrdma.wire.iwarp.MpaRequestReply;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;

/** The MPA listener of soft-iWARP under silent clients, half MPA Requests and garbage. */
class MpaListenerHostageTest extends HostileListenerTests {
    @Override
    protected DeviceContext open() {
        return SoftIwarpDevice.forTest("lo", () -> List.of(LO)).open(DeviceOptions.defaults());
    }

    @Override
    protected Listener listen(DeviceContext ctx, InetSocketAddress at, Handshakes.Limits limits) {
        return ((IwarpConnectionManager) ctx.connectionManager()).listen(at, limits);
    }

    /** An MPA Request (revision 2, 24 bytes of private data): its 20-byte header and 5 bytes of the rest. */
    @Override
    protected byte[] halfRequest() {
        MpaRequestReply req = new MpaRequestReply(false, Mpa.FLAG_ENHANCED, Mpa.REVISION_2, new byte[24]);
        byte[] all = new byte[req.length()];
        req.encode(MemorySegment.ofArray(all), 0);
        return Arrays.copyOf(all, Mpa.HEADER_LENGTH + 5);
    }

    /** A whole MPA Request (revision 2, enhanced, 24 bytes of private data). */
    @Override
    protected byte[] fullRequest(int i) {
        MpaRequestReply req = new MpaRequestReply(false, Mpa.FLAG_ENHANCED, Mpa.REVISION_2, new byte[24]);
        byte[] all = new byte[req.length()];
        req.encode(MemorySegment.ofArray(all), 0);
        return all;
    }

    @Override
    protected String name() {
        return "MPA (soft-iWARP)";
    }
}

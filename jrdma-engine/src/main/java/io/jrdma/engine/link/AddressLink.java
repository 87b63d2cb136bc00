package io.jrdma.engine.link;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * The "link" of a transport that moves its data by other means (iWARP's TCP streams, shared
 * memory): only its local endpoints, which make the context's GID table. It receives nothing
 * and sends nothing.
 */
public final class AddressLink implements Link {
    private final List<Endpoint> endpoints;

    /** @param endpoints the local endpoints, in GID-table order */
    public AddressLink(List<Endpoint> endpoints) {
        this.endpoints = List.copyOf(endpoints);
    }

    @Override
    public List<Endpoint> localEndpoints() {
        return endpoints;
    }

    @Override
    public int poll(PacketSink sink, int limit) {
        return 0;
    }

    @Override
    public boolean send(ByteBuffer buf, int len, Endpoint local, Endpoint remote) {
        return false;
    }

    @Override
    public void close() {
    }
}

package io.jrdma.engine.core;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.ProtectionDomain;

/**
 * An address handle ({@code ibv_ah}, rxe's {@code rxe_ah} with its {@code rxe_av}): the path to one
 * remote port that UD sends name. The link path (source endpoint and destination) is made once, on
 * the control path when the handle is created, so a UD send resolves nothing per packet; it is
 * released when the handle closes.
 */
public final class Ah implements AddressHandle {
    public final Pd pd;
    private final AhAttr attr;
    /**
     * The local endpoint of the source GID (the attributes' sgid index): its shared socket stays open after
     * the handle closes, so sends posted before the close still go out through it.
     */
    public final Endpoint gidEndpoint;
    /** Where the handle's packets leave from (the link's path to {@link #remote}). */
    public final Endpoint local;
    public final Endpoint remote;
    /**
     * Written on close, before the path is released on the engine thread: a post with a closed handle is
     * refused, and the requester sends what was posted before through {@link #gidEndpoint}.
     */
    public volatile boolean closed;

    Ah(Pd pd, AhAttr attr, Endpoint gidEndpoint, Endpoint local, Endpoint remote) {
        this.pd = pd;
        this.attr = attr;
        this.gidEndpoint = gidEndpoint;
        this.local = local;
        this.remote = remote;
    }

    @Override
    public ProtectionDomain pd() {
        return pd;
    }

    @Override
    public AhAttr attr() {
        return attr;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        pd.context.control(() -> pd.context.link.detach(gidEndpoint, local));
        pd.release(this);
    }

    @Override
    public String toString() {
        return "AH to " + attr.dgid() + " port " + attr.udpPort() + " from GID " + attr.sgidIndex();
    }
}

package io.jrdma.rdmacore;

import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.RdmaException;

import java.lang.foreign.MemorySegment;

/** An address handle of an rdma-core device ({@code ibv_create_ah}), for UD sends. */
final class RdmaCoreAh implements AddressHandle {
    private final RdmaCorePd pd;
    final MemorySegment ah;
    private final AhAttr attr;
    private boolean closed;

    RdmaCoreAh(RdmaCorePd pd, MemorySegment ah, AhAttr attr) {
        this.pd = pd;
        this.ah = ah;
        this.attr = attr;
    }

    @Override
    public RdmaCorePd pd() {
        return pd;
    }

    @Override
    public AhAttr attr() {
        return attr;
    }

    boolean closed() {
        return closed;
    }

    /** Destroys it ({@code ibv_destroy_ah}); a second close does nothing. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        int rc = pd.context().verbs().destroyAh(ah);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_destroy_ah failed (errno " + rc + ")");
        }
        closed = true;
    }
}

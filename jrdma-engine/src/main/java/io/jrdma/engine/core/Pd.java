package io.jrdma.engine.core;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqInitAttr;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;

/** A protection domain; tracks its MRs and QPs so that closing it while they live is refused. */
public final class Pd implements ProtectionDomain {
    public final Context context;
    private final Set<Object> children = new HashSet<>();
    private volatile Mr[] regions = new Mr[0];
    private boolean closed;

    public Pd(Context context) {
        this.context = context;
    }

    @Override
    public DeviceContext context() {
        return context;
    }

    @Override
    public MemoryRegion register(MemorySegment segment, int access) {
        if (segment == null || !segment.isNative()) {
            throw new RdmaException(Errno.EINVAL, "only native memory can be registered: allocate the segment from an "
                    + "Arena (e.g. Arena.ofShared().allocate(size, 4096)), not from a heap array");
        }
        if ((access & ~Access.ALL) != 0) {
            throw new RdmaException(Errno.EINVAL, "unknown access flags 0x" + Integer.toHexString(access & ~Access.ALL));
        }
        if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0 && (access & Access.LOCAL_WRITE) == 0) {
            throw new RdmaException(Errno.EINVAL, "REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE (as ibv_reg_mr)");
        }
        if (segment.byteSize() == 0) {
            throw new RdmaException(Errno.EINVAL, "cannot register an empty segment");
        }
        synchronized (this) {
            checkOpen();
            Mr mr = new Mr(this, segment, context.keys.newKey(), access);
            context.keys.add(mr);
            try {
                context.engine.transport.registered(mr); // e.g. shm publishes the key to its peers, or refuses it
            } catch (RuntimeException e) {
                context.keys.remove(mr);
                throw e;
            }
            children.add(mr);
            Mr[] list = java.util.Arrays.copyOf(regions, regions.length + 1);
            list[regions.length] = mr;
            regions = list;
            return mr;
        }
    }

    /** {@code ibv_alloc_mw}: an unbound window with its own key index (rxe_alloc_mw). */
    @Override
    public io.jrdma.verbs.MemoryWindow allocMw(io.jrdma.verbs.MwType type) {
        if (type == null) {
            throw new RdmaException(Errno.EINVAL, "allocMw needs a window type: MwType.TYPE_1 or MwType.TYPE_2");
        }
        if (!context.queryDevice().supportsMw(type)) {
            throw new RdmaException(Errno.EOPNOTSUPP, "ProtectionDomain.allocMw (ibv_alloc_mw, " + type + ") is not "
                    + "supported by this device (" + context.device().name() + "): its transport has no memory windows, "
                    + "as Linux siw; check DeviceContext.queryDevice().supportsMw(type) first");
        }
        synchronized (this) {
            checkOpen();
            Mw mw = new Mw(this, type, context.keys.newKey());
            context.keys.add(mw.entry);
            children.add(mw);
            return mw;
        }
    }

    /** {@code ib_alloc_mr(IB_MR_TYPE_MEM_REG)}: a fast-registration region, free until a REG_MR maps a segment. */
    @Override
    public MemoryRegion allocMr(long maxLength) {
        if (!context.queryDevice().has(io.jrdma.verbs.DeviceCap.MEM_MGT_EXTENSIONS)) {
            throw new RdmaException(Errno.EOPNOTSUPP, "ProtectionDomain.allocMr (ib_alloc_mr, fast registration) is not "
                    + "supported by this device (" + context.device().name() + ")");
        }
        if (maxLength <= 0) {
            throw new RdmaException(Errno.EINVAL, "allocMr needs the largest length a REG_MR may map, above 0, not "
                    + maxLength);
        }
        synchronized (this) {
            checkOpen();
            Mr mr = new Mr(this, Mr.FAST_REG, context.keys.newKey(), maxLength);
            context.keys.add(mr);
            children.add(mr);
            return mr;
        }
    }

    @Override
    public QueuePair createQp(QpInitAttr attr) {
        if (!context.queryDevice().qpTypes().contains(attr.type())) {
            throw new RdmaException(Errno.EOPNOTSUPP, attr.type() + " queue pairs are not supported by "
                    + context.device.name() + " (" + context.engine.transport.describe() + "); it has "
                    + context.queryDevice().qpTypes() + " (see DeviceContext.queryDevice().qpTypes())");
        }
        if (!(attr.sendCq() instanceof Cq scq) || !(attr.recvCq() instanceof Cq rcq)
                || scq.context != context || rcq.context != context) {
            throw new RdmaException(Errno.EINVAL, "the QP's CQs must belong to the same device context as its PD");
        }
        if (attr.maxSendWr() > Context.MAX_QP_WR || attr.maxRecvWr() > Context.MAX_QP_WR
                || attr.maxSendSge() > Context.MAX_SGE || attr.maxRecvSge() > Context.MAX_SGE) {
            throw new RdmaException(Errno.EINVAL, "QP queues of at most " + Context.MAX_QP_WR + " work requests of at most "
                    + Context.MAX_SGE + " SGEs each (queryDevice: max_qp_wr, max_sge), not " + attr);
        }
        Srq srq = null;
        if (attr.srq() != null) {
            if (!(attr.srq() instanceof Srq s) || s.context != context) {
                throw new RdmaException(Errno.EINVAL, "the QP's SRQ must belong to the same device context as its PD");
            }
            srq = s;
            synchronized (srq.pd) {
                if (srq.isClosed()) {
                    throw new RdmaException(Errno.EINVAL, "the QP's SRQ is destroyed");
                }
                srq.users++; // before the QP exists: a concurrent destroy of the SRQ sees it used
            }
        }
        try {
            synchronized (this) {
                checkOpen();
                Qp qp = context.createQp(this, attr, scq, rcq);
                children.add(qp);
                return qp;
            }
        } catch (RuntimeException e) {
            if (srq != null) {
                synchronized (srq.pd) {
                    srq.users--;
                }
            }
            throw e;
        }
    }

    @Override
    public SharedReceiveQueue createSrq(SrqInitAttr attr) {
        java.util.Objects.requireNonNull(attr, "attr");
        DeviceAttr dev = context.queryDevice();
        if (!dev.supportsSrq()) {
            throw new RdmaException(Errno.EOPNOTSUPP, "ProtectionDomain.createSrq (ibv_create_srq): "
                    + context.device.provider() + " has no shared receive queues");
        }
        if (attr.maxWr() > dev.maxSrqWr() || attr.maxSge() > dev.maxSrqSge()) {
            throw new RdmaException(Errno.EINVAL, "an SRQ holds at most " + dev.maxSrqWr() + " receives of at most "
                    + dev.maxSrqSge() + " SGEs (queryDevice: max_srq_wr, max_srq_sge), not " + attr);
        }
        synchronized (this) {
            checkOpen();
            context.srqCreated(dev.maxSrq()); // EAGAIN beyond max_srq
            Srq srq = new Srq(this, attr);
            children.add(srq);
            return srq;
        }
    }

    /**
     * Creates an address handle ({@code ibv_create_ah}, rxe's {@code rxe_av_chk_attr}): the source GID index
     * must name a live GID of port 1 and the destination must be of its IP family. The link path is made
     * here, on the control path, so a UD send resolves nothing per packet.
     */
    @Override
    public AddressHandle createAh(AhAttr attr) {
        if (attr == null) {
            throw new RdmaException(Errno.EINVAL, "createAh needs attributes (AhAttr.of(dgid, sgidIndex))");
        }
        if (context.queryDevice().maxAh() == 0) {
            throw new RdmaException(Errno.EOPNOTSUPP, "createAh (ibv_create_ah): address handles are not supported by "
                    + context.device.name() + " (" + context.engine.transport.describe() + "): it has no UD queue pairs");
        }
        if (attr.portNum() != 1) {
            throw RdmaException.noSuchPort(context.device().name(), attr.portNum(), 1); // the software devices have one
        }
        if (attr.dgid().equals(io.jrdma.verbs.Gid.of(new byte[16]))) {
            throw new RdmaException(Errno.EINVAL, "the destination GID is all zeros: give the peer's GID (its IP address)");
        }
        if (attr.hopLimit() == 0) {
            throw new RdmaException(Errno.EINVAL, "hop limit 0: a datagram must be allowed at least one hop (IP TTL"
                    + " 1..255); AhAttr.of uses 64, initAhFromWc 255");
        }
        synchronized (this) {
            checkOpen();
            Ah[] made = new Ah[1];
            context.control(() -> {
                AddressVector av = attr.toAddressVector();
                Endpoint src = context.localEndpoint(attr.sgidIndex());
                Endpoint dst = context.remoteEndpoint(av, src);
                if (src.isIpv6() != dst.isIpv6()) {
                    throw new RdmaException(Errno.EINVAL, "source GID " + attr.sgidIndex() + " (" + src + ") cannot reach "
                            + attr.dgid() + ": the IP versions differ; pick a source GID of the same family");
                }
                // the handle's own path, whose packets carry its hop limit and traffic class (as rxe's av)
                made[0] = new Ah(this, attr, src, context.link.attach(src, dst, attr.hopLimit(), attr.trafficClass()), dst);
            });
            children.add(made[0]);
            return made[0];
        }
    }

    public synchronized void release(Object child) {
        children.remove(child);
        if (child instanceof Srq) {
            context.srqDestroyed();
        }
        if (child instanceof Mr mr) {
            regions = java.util.Arrays.stream(regions).filter(r -> r != mr).toArray(Mr[]::new);
        }
    }

    /**
     * @return a region of this PD that covers {@code [addr, addr + len)}, or null. For inline data,
     * whose lkey libibverbs does not check: the bytes must still lie in registered memory, since
     * Java reads no raw address without restricted native access. Allocation-free.
     */
    Mr covering(long addr, long len) {
        for (Mr r : regions) { // acquire: the volatile read pairs with register/release
            if (r.permits(this, 0, addr, len)) {
                return r;
            }
        }
        return null;
    }

    private void checkOpen() {
        if (closed) {
            throw new RdmaException(Errno.EINVAL, "the protection domain is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (!children.isEmpty()) {
            throw new RdmaException(Errno.EBUSY, "the protection domain still has " + children.size()
                    + " memory regions, memory windows, queue pairs, SRQs or address handles; close them first (as ibv_dealloc_pd)");
        }
        closed = true;
        context.release(this);
    }
}

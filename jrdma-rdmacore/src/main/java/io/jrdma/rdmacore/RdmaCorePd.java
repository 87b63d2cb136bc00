package io.jrdma.rdmacore;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressHandle;
import io.jrdma.verbs.AhAttr;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.SharedReceiveQueue;
import io.jrdma.verbs.SrqInitAttr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** A protection domain of an rdma-core device ({@code ibv_alloc_pd}). */
final class RdmaCorePd implements ProtectionDomain {
    /** The access bits that are {@code enum ibv_access_flags} bits with the same values. */
    static final int IBV_ACCESS_BITS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
            | Access.REMOTE_ATOMIC | Access.MW_BIND;

    private final RdmaCoreContext context;
    final MemorySegment pd;
    private volatile boolean closed;

    RdmaCorePd(RdmaCoreContext context, MemorySegment pd) {
        this.context = context;
        this.pd = pd;
    }

    @Override
    public RdmaCoreContext context() {
        return context;
    }

    void requireOpen() {
        if (closed) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "the PD is closed: allocate a new one with allocPd()");
        }
    }

    /**
     * Registers {@code segment} ({@code ibv_reg_mr}). The access bits map one to one onto
     * {@code IBV_ACCESS_*}; {@link Access#REMOTE_INVALIDATE} has no rdma-core flag (its devices let any
     * remote invalidation through) and is kept in {@link MemoryRegion#access()} only.
     *
     * @throws RdmaException EINVAL for a heap segment (the device reads and writes it by address: allocate it
     *                       off-heap, e.g. with {@code DeviceContext.allocateBuffer}), else the errno of ibv_reg_mr
     *                       (EINVAL for REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE)
     */
    @Override
    public MemoryRegion register(MemorySegment segment, int access) {
        requireOpen();
        if (segment == null || !segment.isNative()) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "an rdma-core device reaches memory by address: register"
                    + " an off-heap segment (Arena.allocate or DeviceContext.allocateBuffer), not a heap one");
        }
        if ((access & ~Access.ALL) != 0) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "unknown access bits 0x"
                    + Integer.toHexString(access & ~Access.ALL) + ": use the constants of Access");
        }
        try {
            MemorySegment mr = context.verbs().regMr(pd, segment, segment.byteSize(), access & IBV_ACCESS_BITS)
                    .reinterpret(Structs.IBV_MR.byteSize());
            return new RdmaCoreMr(this, segment, mr, access);
        } catch (LibIbverbs.NativeCallException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    @Override
    public QueuePair createQp(QpInitAttr attr) {
        requireOpen();
        return RdmaCoreQp.create(this, attr);
    }

    /**
     * {@return an address handle ({@code ibv_create_ah}) for UD sends, on port {@code attr.portNum()}: its source GID
     * index is one of that port's table}
     *
     * @throws RdmaException EINVAL for a UDP port other than 4791 (rdma-core devices send RoCEv2 to that port
     *                       only), a port outside 1..phys_port_cnt, or a source GID index that port's table does not
     *                       have (before any native call, naming what is wrong), else the errno of ibv_create_ah
     */
    @Override
    public AddressHandle createAh(AhAttr attr) {
        requireOpen();
        if (context.queryDevice().maxAh() == 0) { // siw's provider answers NULL without an errno
            throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "ProtectionDomain.createAh on "
                    + context.device().name() + ": the device has no address handles (max_ah 0: no UD QPs)");
        }
        if (attr.udpPort() != DeviceOptions.ROCE_V2_PORT) {
            throw new RdmaException(RdmaException.Errno.EINVAL, "rdma-core devices send RoCEv2 to UDP port "
                    + DeviceOptions.ROCE_V2_PORT + " only, not " + attr.udpPort());
        }
        // EINVAL naming 1..phys_port_cnt for a port the device lacks (checked first), else unless that port's table has
        // the source GID index: before any native call
        context.gid(attr.portNum(), attr.sgidIndex());
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ah = a.allocate(Structs.IBV_AH_ATTR);
            writeAhAttr(ah, 0, attr.dgid().raw(), attr.flowLabel(), attr.sgidIndex(), attr.hopLimit(),
                    attr.trafficClass(), attr.sl(), attr.portNum());
            return new RdmaCoreAh(this, context.verbs().createAh(pd, ah), attr);
        } catch (LibIbverbs.NativeCallException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
    }

    /** Writes a global {@code struct ibv_ah_attr} at {@code at}. */
    static void writeAhAttr(MemorySegment s, long at, byte[] dgid, int flowLabel, int sgidIndex, int hopLimit,
                            int trafficClass, int sl, int port) {
        MemorySegment.copy(dgid, 0, s, JAVA_BYTE, at, 16);
        s.set(JAVA_INT, at + Structs.off(Structs.IBV_AH_ATTR, "grh.flow_label"), flowLabel);
        s.set(JAVA_BYTE, at + Structs.off(Structs.IBV_AH_ATTR, "grh.sgid_index"), (byte) sgidIndex);
        s.set(JAVA_BYTE, at + Structs.off(Structs.IBV_AH_ATTR, "grh.hop_limit"), (byte) hopLimit);
        s.set(JAVA_BYTE, at + Structs.off(Structs.IBV_AH_ATTR, "grh.traffic_class"), (byte) trafficClass);
        s.set(JAVA_BYTE, at + Structs.off(Structs.IBV_AH_ATTR, "sl"), (byte) sl);
        s.set(JAVA_BYTE, at + Structs.off(Structs.IBV_AH_ATTR, "is_global"), (byte) 1);
        s.set(JAVA_BYTE, at + Structs.off(Structs.IBV_AH_ATTR, "port_num"), (byte) port);
    }

    /**
     * {@return a memory window of {@code type} ({@code ops.alloc_mw}, verbs.h's static inline {@code ibv_alloc_mw})}
     *
     * @throws RdmaException EOPNOTSUPP naming allocMw and the device when it has no memory windows (it declares none,
     *                       or its rdma-core provider's alloc_mw is libibverbs' EOPNOTSUPP stub), before any native call;
     *                       else the errno of alloc_mw (EINVAL for a type the device does not have)
     */
    @Override
    public io.jrdma.verbs.MemoryWindow allocMw(io.jrdma.verbs.MwType type) {
        requireOpen();
        ContextOps ops = context.ops();
        String none = context.noWindows();
        if (!none.isEmpty()) {
            throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "ProtectionDomain.allocMw (ibv_alloc_mw, " + type
                    + "): " + context.device().name() + " has no memory windows: " + none + "; queryDevice()"
                    + " declares none (check supportsMw before allocMw)");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = IbvVerbs.callState(a);
            MemorySegment mw = (MemorySegment) ops.allocMw.invokeExact(state, pd, type.value());
            if (mw.equals(MemorySegment.NULL)) {
                int e = IbvVerbs.errno(state);
                throw new RdmaException(RdmaException.Errno.of(e == 0 ? 5 : e), "ProtectionDomain.allocMw"
                        + " (ibv_alloc_mw, " + type + ") on " + context.device().name() + " failed (errno " + e + ")"
                        + (e == 95 ? ": the device has no memory windows (queryDevice() declares none)" : ""));
            }
            return new RdmaCoreMw(this, mw, type);
        } catch (RdmaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Fast registration is not offered: libibverbs' standard API has no {@code ibv_alloc_mr} and no
     * {@code IBV_WR_REG_MR} (the memory management extensions are kernel verbs; user space has memory windows),
     * and {@code queryDevice()} clears {@code MEM_MGT_EXTENSIONS} accordingly.
     *
     * @throws RdmaException always EOPNOTSUPP, naming allocMr and why
     */
    @Override
    public MemoryRegion allocMr(long maxLength) {
        throw new RdmaException(RdmaException.Errno.EOPNOTSUPP, "ProtectionDomain.allocMr (fast registration) is not"
                + " in libibverbs' standard API (no ibv_alloc_mr, no IBV_WR_REG_MR): on rdma-core devices register"
                + " with register() and grant remote access through memory windows (allocMw)");
    }

    @Override
    public SharedReceiveQueue createSrq(SrqInitAttr attr) {
        requireOpen();
        return RdmaCoreSrq.create(this, attr);
    }

    /**
     * Frees the PD ({@code ibv_dealloc_pd}); a second close does nothing.
     *
     * @throws RdmaException EBUSY while a QP, MR, SRQ or AH of it exists: close those first
     */
    @Override
    public synchronized void close() { // two threads' closes must not both free the PD (found in review)
        if (closed) {
            return;
        }
        int rc = context.verbs().deallocPd(pd);
        if (rc != 0) {
            throw new RdmaException(RdmaException.Errno.of(rc), "ibv_dealloc_pd failed (errno " + rc + ")"
                    + (rc == 16 ? ": QPs, MRs, SRQs or AHs of this PD are still open; close them first" : ""));
        }
        closed = true;
        context.forget(this);
    }
}

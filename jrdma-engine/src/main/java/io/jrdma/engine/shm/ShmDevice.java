package io.jrdma.engine.shm;

import io.jrdma.engine.core.Context;
import io.jrdma.engine.link.AddressLink;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.verbs.Transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code shm0}: the shared-memory device, for peers on this host (in this process or others of
 * the same user). Each {@link #open} makes a control segment (a memfd) and an engine over it; the
 * context's one GID names it: {@code fd6a:7264:6d61:7368:<pid>:<descriptor>} (see docs/shm-design.md).
 */
public final class ShmDevice implements Device {
    public static final String NAME = "shm0";
    static final ShmDevice INSTANCE = new ShmDevice();
    private final Set<Context> open = ConcurrentHashMap.newKeySet();

    private ShmDevice() {
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String provider() {
        return ShmProvider.NAME;
    }

    @Override
    public Transport transport() {
        return Transport.SHM;
    }

    @Override
    public String netdev() {
        return "none (shared memory)";
    }

    /** {@inheritDoc} A device has none: each open context has one GID, which names its process and control segment. */
    @Override
    public List<Gid> gids() {
        return List.of();
    }

    @Override
    public boolean isUp() {
        return Native.unavailableReason() == null;
    }

    @Override
    public List<String> limitations() {
        String why = Native.unavailableReason();
        if (why != null) {
            return List.of(why);
        }
        List<String> l = new java.util.ArrayList<>();
        if (!Native.asymmetric()) {
            l.add(ShmTransport.lockedHolds(Native.asymmetricReason()));
        }
        if (!Native.crossMemoryAttach()) {
            l.add("memory the application allocated itself can be registered for local access only: the C library has"
                    + " no process_vm_readv/process_vm_writev (cross-memory attach); remote access needs allocateBuffer's");
        }
        return List.copyOf(l);
    }

    @Override
    public DeviceContext open(DeviceOptions options) {
        Native.check();
        int fd = Native.memfd("jrdma-shm-control", Ctrl.SIZE);
        long addr;
        try {
            addr = Native.mmap(fd, Ctrl.SIZE);
        } catch (RuntimeException e) {
            Native.close(fd);
            throw e;
        }
        int pid = Native.getpid();
        MemorySegment ctrl = MemorySegment.ofAddress(addr).reinterpret(Ctrl.SIZE);
        ctrl.set(ValueLayout.JAVA_INT, Ctrl.H_VERSION, Ctrl.VERSION);
        ctrl.set(ValueLayout.JAVA_INT, Ctrl.H_PID, pid);
        ctrl.set(ValueLayout.JAVA_INT, Ctrl.H_PID + 4, Ctrl.MAX_KEYS);
        ctrl.set(ValueLayout.JAVA_INT, Ctrl.H_PID + 8, Ctrl.MAX_QPS);
        ctrl.set(ValueLayout.JAVA_LONG, Ctrl.H_MAGIC, Ctrl.MAGIC);
        try {
            Context c = new Context(this, open::remove, options, port(ShmTransport.gid(pid, fd)), NanoClock.SYSTEM,
                    Mtu.MTU_4096, engine -> new ShmTransport(engine, fd, addr));
            open.add(c);
            return c;
        } catch (RuntimeException | Error e) { // an Error too: no native thread for the engine (OutOfMemoryError)
            Native.munmap(addr, Ctrl.SIZE);
            Native.close(fd);
            throw e;
        }
    }

    @Override
    public String toString() {
        return NAME;
    }

    /** The "link" of a shared-memory context: its one GID (port 0, no packets). */
    private static AddressLink port(Gid gid) {
        try {
            // port 4791 only because an address vector needs a UDP port: shared memory has none
            return new AddressLink(List.of(new Endpoint(new InetSocketAddress(InetAddress.getByAddress(gid.raw()),
                    DeviceOptions.ROCE_V2_PORT), 0)));
        } catch (UnknownHostException e) {
            throw new RdmaException(Errno.EINVAL, "bad GID " + gid, e);
        }
    }
}

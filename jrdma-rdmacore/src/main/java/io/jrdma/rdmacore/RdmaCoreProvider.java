package io.jrdma.rdmacore;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;
import io.jrdma.verbs.spi.RdmaProvider;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The rdma-core provider ({@code rdmacore}): every device {@code libibverbs.so.1} sees, listed with its
 * attributes, ports and GID table. This first step queries only; contexts of its devices answer
 * EOPNOTSUPP for PDs, CQs and the rest. Optional at run time: without the library, native access or a
 * device, {@link #devices()} is empty and {@link #unavailableReason()} says which.
 *
 * <p>The system property {@value #LIBRARY_PROPERTY} names another library to load instead of
 * {@code libibverbs.so.1} (a path or soname, as {@code dlopen} takes it).
 */
public final class RdmaCoreProvider implements RdmaProvider {
    /** The system property naming the library to load instead of {@code libibverbs.so.1}. */
    public static final String LIBRARY_PROPERTY = "jrdma.rdmacore.library";

    private static volatile LibIbverbs defaultLib;

    private final LibIbverbs lib;

    /** The provider over {@code libibverbs.so.1} (or the library {@value #LIBRARY_PROPERTY} names), loaded once per JVM. */
    public RdmaCoreProvider() {
        this(defaultLibrary());
    }

    /**
     * A provider over the library {@code library}, loaded now (for tests and tools that point at another build).
     *
     * @param library a soname or path, as {@code dlopen} takes it
     */
    public RdmaCoreProvider(String library) {
        this(LibIbverbs.load(library));
    }

    private RdmaCoreProvider(LibIbverbs lib) {
        this.lib = lib;
    }

    private static LibIbverbs defaultLibrary() {
        LibIbverbs l = defaultLib;
        if (l == null) {
            synchronized (RdmaCoreProvider.class) {
                l = defaultLib;
                if (l == null) {
                    l = LibIbverbs.load(System.getProperty(LIBRARY_PROPERTY, LibIbverbs.DEFAULT_LIBRARY));
                    defaultLib = l;
                }
            }
        }
        return l;
    }

    @Override
    public String name() {
        return "rdmacore";
    }

    /** {@return ROCE_V2: the provider's devices may also be iWARP ones, each {@link Device#transport()} says} */
    @Override
    public Transport transport() {
        return Transport.ROCE_V2;
    }

    /**
     * {@return the library that was loaded and its version, such as {@code libibverbs.so.1 (1.14.44.0)}, or
     * the reason it could not be}
     */
    public String libraryDescription() {
        if (lib.reason() != null) {
            return lib.library() + ": " + lib.reason();
        }
        return lib.library() + " (" + (lib.version() != null ? lib.version() : "version unknown") + ")";
    }

    /**
     * {@return null when rdma-core lists at least one device; else why not: the library is absent or lacks a
     * symbol, native access is off, the layouts do not match, or {@code ibv_get_device_list} found no device}
     */
    @Override
    public String unavailableReason() {
        if (lib.reason() != null) {
            return lib.reason();
        }
        try {
            if (lib.deviceList().isEmpty()) {
                return "rdma-core (" + libraryDescription() + ") lists no RDMA device: no RDMA NIC, and no software"
                        + " device (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0, or modprobe siw;"
                        + " rdma link add siw0 type siw netdev eth0)";
            }
            return null;
        } catch (LibIbverbs.LayoutMismatchException e) {
            return "layout mismatch with " + libraryDescription() + ": " + e.getMessage();
        } catch (LibIbverbs.NativeCallException e) {
            if (e.errno() == 38) { // ENOSYS: what ibv_get_device_list(3) answers without the kernel's uverbs
                return "rdma-core (" + libraryDescription() + ") lists no RDMA device: ibv_get_device_list found no"
                        + " kernel RDMA support (ENOSYS: no /sys/class/infiniband_verbs; an RDMA NIC's driver, or"
                        + " modprobe ib_uverbs with rdma_rxe or siw and rdma link add, provides it)";
            }
            return e.getMessage() + " (" + errnoName(e.errno()) + ")";
        }
    }

    /**
     * {@return the devices rdma-core lists now ({@code ibv_get_device_list}); empty when it cannot run}
     *
     * @throws RdmaException EPROTO if the library's structs do not match this provider's layouts
     */
    @Override
    public List<Device> devices() {
        if (lib.reason() != null) {
            return List.of();
        }
        List<LibIbverbs.DeviceInfo> infos;
        try {
            infos = lib.deviceList();
        } catch (LibIbverbs.LayoutMismatchException e) {
            throw new RdmaException(RdmaException.Errno.EPROTO, "rdmacore: " + e.getMessage());
        } catch (LibIbverbs.NativeCallException e) {
            return List.of();
        }
        List<Device> out = new ArrayList<>(infos.size());
        for (LibIbverbs.DeviceInfo i : infos) {
            out.add(new RdmaCoreDevice(this, lib, i));
        }
        return List.copyOf(out);
    }

    /**
     * {@return null: choosing a device by address needs rdma_cm's route resolution (librdmacm), which this
     * provider does not bind yet}
     *
     * @param destination the peer's IP address
     */
    @Override
    public Rdma.ResolvedAddress resolve(InetAddress destination) {
        return null;
    }

    static String errnoName(int errno) {
        RdmaException.Errno e = RdmaException.Errno.of(errno);
        return e.value() == errno ? e.name() : "errno " + errno;
    }

    static RdmaException toRdma(RuntimeException e) {
        if (e instanceof LibIbverbs.NativeCallException n) {
            RdmaException.Errno errno = RdmaException.Errno.of(n.errno());
            return new RdmaException(errno, "rdmacore: " + n.getMessage(), n);
        }
        if (e instanceof LibIbverbs.LayoutMismatchException m) {
            return new RdmaException(RdmaException.Errno.EPROTO, "rdmacore: layout mismatch: " + m.getMessage(), m);
        }
        return new RdmaException(RdmaException.Errno.EIO, "rdmacore: " + e.getMessage(), e);
    }

    /**
     * {@return the inline data a post flagged INLINE may carry on {@code qp}: the {@code cap.max_inline_data} the
     * device gave it, which may be less than its {@code QpInitAttr} asked (Linux siw takes at most 80 bytes: the
     * provider then creates the QP with the most the device takes); a post with more is EINVAL}
     *
     * @param qp a QP of this provider
     * @throws IllegalArgumentException for a QP of another provider
     */
    public static int maxInlineData(io.jrdma.verbs.QueuePair qp) {
        if (!(qp instanceof RdmaCoreQp q)) {
            throw new IllegalArgumentException("not a QP of the rdma-core provider: " + qp);
        }
        return q.maxInlineData();
    }
}

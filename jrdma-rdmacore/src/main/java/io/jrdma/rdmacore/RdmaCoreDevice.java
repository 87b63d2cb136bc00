package io.jrdma.rdmacore;

import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.PortAttr;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** A device that rdma-core lists ({@code struct ibv_device}): a Linux rxe or siw device, or an RDMA NIC. */
public final class RdmaCoreDevice implements Device {
    /** {@code IBV_NODE_RNIC}: an iWARP device. */
    static final int NODE_RNIC = 4;
    /** {@code IBV_TRANSPORT_IWARP}. */
    static final int TRANSPORT_IWARP = 1;

    private final RdmaCoreProvider provider;
    private final LibIbverbs lib;
    private final LibIbverbs.DeviceInfo info;

    RdmaCoreDevice(RdmaCoreProvider provider, LibIbverbs lib, LibIbverbs.DeviceInfo info) {
        this.provider = provider;
        this.lib = lib;
        this.info = info;
    }

    @Override
    public String name() {
        return info.name();
    }

    @Override
    public String provider() {
        return provider.name();
    }

    /** {@return IWARP for an iWARP device ({@code IBV_TRANSPORT_IWARP}), else ROCE_V2} */
    @Override
    public Transport transport() {
        return info.transportType() == TRANSPORT_IWARP ? Transport.IWARP : Transport.ROCE_V2;
    }

    /** {@return the node GUID ({@code ibv_get_device_guid}), in host order} */
    public long nodeGuid() {
        return info.nodeGuid();
    }

    /** {@return the node type, as {@code enum ibv_node_type} ({@code 1} CA, {@code 4} RNIC)} */
    public int nodeType() {
        return info.nodeType();
    }

    /** {@return the transport type, as {@code enum ibv_transport_type} ({@code 0} InfiniBand, {@code 1} iWARP)} */
    public int transportType() {
        return info.transportType();
    }

    /** {@return the uverbs device's sysfs path, such as {@code /sys/class/infiniband_verbs/uverbs0}} */
    public String devPath() {
        return info.devPath();
    }

    /** {@return the device's sysfs path, such as {@code /sys/class/infiniband/rxe0}} */
    public String ibdevPath() {
        return info.ibdevPath();
    }

    /** {@return the network interface of port 1 as the kernel reports it (sysfs), or "" if none is reported} */
    @Override
    public String netdev() {
        for (Path p : List.of(Path.of(info.ibdevPath(), "ports", "1", "gid_attrs", "ndevs", "0"),
                Path.of(info.ibdevPath(), "parent"))) {
            try {
                String s = Files.readString(p).trim();
                if (!s.isEmpty()) {
                    return s;
                }
            } catch (IOException | RuntimeException e) {
                // not reported there: try the next place
            }
        }
        return "";
    }

    /** {@return port 1's valid GIDs, read through a short-lived context} */
    @Override
    public List<Gid> gids() {
        try (RdmaCoreContext ctx = open()) {
            return ctx.gidTable(1).stream().map(GidEntry::gid).toList();
        }
    }

    /** {@return true if port 1 is ACTIVE, read through a short-lived context} */
    @Override
    public boolean isUp() {
        try (RdmaCoreContext ctx = open()) {
            return ctx.queryPort().state() == PortAttr.PortState.ACTIVE;
        }
    }

    /** {@return what a context of this device cannot do yet: everything but queries} */
    @Override
    public List<String> limitations() {
        return List.of(RdmaCoreContext.NOT_BUILT);
    }

    /**
     * Opens a query-only context ({@code ibv_open_device}).
     *
     * @return the context; close it when done
     * @throws RdmaException ENODEV if the device is gone, else the errno of {@code ibv_open_device}
     */
    @Override
    public RdmaCoreContext open() {
        return open(DeviceOptions.defaults());
    }

    /**
     * Opens a query-only context ({@code ibv_open_device}); the options are kept but mean nothing to rdma-core
     * (it has no engine thread or UDP port of jrdma's).
     *
     * @param options kept for {@link DeviceContext#options()}
     * @return the context; close it when done
     * @throws RdmaException ENODEV if the device is gone, else the errno of {@code ibv_open_device}
     */
    @Override
    public RdmaCoreContext open(DeviceOptions options) {
        MemorySegment ctx;
        try {
            ctx = lib.open(info.name());
        } catch (LibIbverbs.NativeCallException | LibIbverbs.LayoutMismatchException e) {
            throw RdmaCoreProvider.toRdma(e);
        }
        return new RdmaCoreContext(this, lib, ctx, options);
    }

    @Override
    public String toString() {
        return info.name() + " (rdmacore)";
    }
}
